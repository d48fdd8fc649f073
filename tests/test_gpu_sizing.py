"""How the scorer sizes its passes on a GPU, and what it does when memory runs out (issue 32).

The sizes are a pure function of the free memory and the model's shape (pass_size.choose), so
they are checked here without a GPU; the out-of-memory retry runs the real engine on a tiny
model whose decoder fails once the way CUDA does. The figures measured on an H200 are in
docs/gpu.md.
"""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from accapp.scoring import pass_size
from accapp.scoring.api import Pair

GiB = 1024**3


def smollm2_config():  # SmolLM2-135M's sizes (config.json)
    return SimpleNamespace(hidden_size=576, intermediate_size=1536, num_attention_heads=9)


def test_bytes_per_token_counts_the_layer_peak():
    per = pass_size.bytes_per_token(smollm2_config(), 4, 128)
    # 4 bytes x (8 x 576 + 4 x 1536) + 4 bytes x 9 heads x 128 tokens, by hand
    assert per == 4 * (8 * 576 + 4 * 1536) + 4 * 9 * 128 == 47_616
    assert pass_size.bytes_per_token(smollm2_config(), 2, 128) < per  # half precision: half the activations
    nested = SimpleNamespace(text_config=smollm2_config())  # multimodal configs nest the text model's
    assert pass_size.bytes_per_token(nested, 4, 128) == per


def test_pass_grows_with_free_memory_within_its_bounds():
    per, vocab = 47_616, 49_152
    small = pass_size.choose(1 * GiB, per, vocab, 32)
    large = pass_size.choose(140 * GiB, per, vocab, 32)
    none = pass_size.choose(0, per, vocab, 32)
    # 0.3 x 1 GiB / 47,616 bytes = 6,765 tokens a pass, 211 strings of 32 tokens
    assert small.batch_size == int(0.3 * GiB // per) // 32 == 211
    assert none.batch_size == pass_size.MIN_PASS_TOKENS // 32 and none.head_rows == pass_size.MIN_HEAD_ROWS
    assert large.batch_size == pass_size.MAX_PASS_TOKENS // 32 == 2048  # what the H200 chose (docs/gpu.md)
    assert none.batch_size <= small.batch_size <= large.batch_size
    # A projection chunk's float32 logits, 3 copies, stay within a tenth of the free memory.
    assert small.head_rows * vocab * 4 * 3 <= 0.1 * GiB + vocab * 12
    assert large.head_rows == pass_size.MAX_HEAD_ROWS


def test_gemma_vocabulary_gets_fewer_projection_rows():
    free = 60 * GiB
    assert pass_size.choose(free, 50_000, 262_144, 32).head_rows < pass_size.choose(free, 50_000, 49_152, 32).head_rows


def test_cpu_keeps_the_measured_sizes(tiny_llama):
    from accapp.scoring.causal import CausalScorer

    sc = CausalScorer(tiny_llama)
    assert (sc.batch_size, sc.head_chunk_rows, sc.pass_size) == (64, 512, None)
    assert CausalScorer(tiny_llama, batch_size=8, head_chunk_rows=32).batch_size == 8


def test_out_of_memory_halves_the_pass_and_scores_the_same(tiny_llama, blimp):
    from accapp.engine import Engine
    from accapp.scoring.causal import CausalScorer

    pairs = [Pair(g, b) for g, b in zip(blimp.good[:6], blimp.bad[:6])]
    methods = ["lp", "in_template_lp", "yes_no_prob_comp"]
    want = Engine(CausalScorer(tiny_llama), "en").score_pairs(pairs, methods)

    scorer = CausalScorer(tiny_llama)
    decoder = scorer._decoder
    calls = {"n": 0}

    def fails_once(*args, **kwargs):  # the first pass fails as CUDA does when another process took the memory
        calls["n"] += 1
        if calls["n"] == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.50 GiB.")
        return decoder(*args, **kwargs)

    scorer._decoder = fails_once
    got = Engine(scorer, "en").score_pairs(pairs, methods)
    assert scorer.memory_retries == 1
    assert (scorer.batch_size, scorer.head_chunk_rows) == (32, 256)
    a = np.array([[s.score_good, s.score_bad] for r in want for s in r.scores])
    b = np.array([[s.score_good, s.score_bad] for r in got for s in r.scores])
    assert a.shape == b.shape and np.abs(a - b).max() < 1e-4  # float32 batching noise only


def test_out_of_memory_at_the_smallest_pass_is_raised(tiny_llama):
    from accapp.scoring.causal import MIN_BATCH, MIN_HEAD_ROWS, CausalScorer

    scorer = CausalScorer(tiny_llama, batch_size=MIN_BATCH, head_chunk_rows=MIN_HEAD_ROWS)

    def always_fails(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory.")

    scorer._decoder = always_fails
    with pytest.raises(torch.OutOfMemoryError):
        scorer.score([(scorer.start_id, 5, 6)])
    assert scorer.memory_retries == 0


def test_run_manifest_says_where_it_ran(tiny_llama):
    from accapp.engine import Engine
    from accapp.runner.runner import describe
    from accapp.scoring.causal import CausalScorer

    info = describe(Engine(CausalScorer(tiny_llama), "en"), ["lp"])
    assert info["device"] == "cpu" and info["gpu"] is None and info["dtype"] == "fp32"
    commit = info["versions"]["commit"]
    assert commit is None or len(commit) == 40  # the checkout's HEAD (None outside a git checkout)


def test_rendered_prompts_are_kept_and_bounded(tiny_llama, monkeypatch):
    from accapp.engine import Engine
    from accapp.methods import prompting
    from accapp.prompts import render_prompt
    from accapp.scoring.causal import CausalScorer

    engine = Engine(CausalScorer(tiny_llama), "en")
    pair = Pair("The dogs bark.", "The dogs barks.")
    engine.score_pairs([pair], ["ab_prompting", "yes_no_prob_comp", "meta_question_simple"])
    ctx = engine.context("en")
    memo = ctx.cache["rendered"]
    assert memo  # each prompt rendered once, kept
    for (chat, system, user, joiner), text in memo.items():  # the kept string is the render itself
        assert text == render_prompt(ctx.tokenizer, chat, system, user, joiner)
    monkeypatch.setattr(prompting, "RENDERED_MAX", 3)
    engine.score_pairs([Pair("Cats sleep.", "Cats sleeps.")], ["ab_prompting"])
    assert len(ctx.cache["rendered"]) <= 3


def test_scores_that_are_not_numbers_are_refused_with_the_reason(tiny_llama):
    from accapp.engine import Engine
    from accapp.errors import UserError
    from accapp.scoring.causal import CausalScorer

    scorer = CausalScorer(tiny_llama)
    decoder = scorer._decoder

    def overflows(*args, **kwargs):  # what Gemma 3's decoder gave in fp16 on the H200: NaN activations
        out = decoder(*args, **kwargs)
        out.last_hidden_state.fill_(float("nan"))
        return out

    scorer._decoder = overflows
    with pytest.raises(UserError, match="not numbers.*bf16 or fp32"):
        Engine(scorer, "en").score_pairs([Pair("The dogs bark.", "The dogs barks.")], ["lp"])
