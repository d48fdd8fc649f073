"""The real engine on tiny random-weight models of both embedded architectures (fast tier).

tests/tiny_models.py builds a Llama (SmolLM2's tokenizer, chat template) and a Gemma 3 (Gemma
3 270M's tokenizer, a 64-token sliding window) in seconds. Here the fast engine (batching,
token-tree packing, cached template prefixes, the vocabulary streamed in chunks) must give
the naive engine's numbers (one plain forward pass a string, float64 log-softmax) for every
method, and packing or prefix sharing must change no token's log-prob. The same checks on
the real models, with their golden numbers, are the slow tier (test_causal_scorer.py).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from accapp.bench.datasets import stratified_sample
from accapp.methods import method_ids
from accapp.methods.base import Pair
from accapp.methods.engine import Engine
from accapp.models.loading import cache_root
from accapp.scoring.causal import CausalScorer
from accapp.scoring.naive import NaiveEngine
from tests import tiny_models

TOL = 1e-4  # nats a score (as test_causal_scorer.py)
TOKEN_TOL = 1e-5  # nats a token, between two float32 computations of the same string
MODELS = ["tiny_llama", "tiny_gemma"]
# Methods whose strings all fit Gemma's window: packed, template prefixes shared and cached.
READOUT = ["lp", "in_template_lp", "in_template_comparative_lp", "bayes_factor_unigram", "slor"]
ZH_PAIR = Pair("王玉珍震惊了她自己。", "王玉珍震惊了他自己。")


def _pairs(df, n, seed=0):
    sample = stratified_sample(df, 1, seed).head(n)
    return [Pair(g, b) for g, b in zip(sample.good, sample.bad)]


@pytest.fixture(scope="module")
def pairs(blimp):
    return _pairs(blimp, 8)


def recording(scorer: CausalScorer) -> list:
    """Record every scorer.score call: (seqs, limits, answers, results)."""
    calls = []
    inner = scorer.score

    def score(seqs, limits=None, answers=None):
        out = inner(seqs, limits, answers)
        calls.append((list(seqs), limits, answers, out))
        return out

    scorer.score = score
    return calls


class DecoderWidths:
    """Widths (tokens a row) of the decoder passes that got a 4-D attention mask (packed)."""

    def __init__(self, lm):
        self.packed: list[int] = []
        self._handle = lm.model.base_model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        mask = kwargs.get("attention_mask")
        if mask is not None and mask.dim() == 4:
            self.packed.append(kwargs["input_ids"].shape[1])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.remove()


def _row_key(r):
    return (r["method"], r["template"], r["variant"])


def _assert_agree(fast, naive) -> float:
    """Every row of both engines: same methods and templates, same verdicts and predictions,
    scores within TOL, and every token of the two sentences within TOKEN_TOL. Returns the
    worst score gap."""
    worst = 0.0
    assert len(fast) == len(naive)
    for a, b in zip(fast, naive):
        assert [_row_key(r) for r in a.rows] == [_row_key(r) for r in b.rows]
        for r, s in zip(a.rows, b.rows):
            gap = max(abs(r["score_good"] - s["score_good"]), abs(r["score_bad"] - s["score_bad"]))
            assert gap < TOL, (_row_key(r), r["score_good"], s["score_good"], r["score_bad"], s["score_bad"])
            assert (r["verdict"], r["prediction"]) == (s["verdict"], s["prediction"]), _row_key(r)
            worst = max(worst, gap)
        for key in ("good", "bad"):
            assert [t["token"] for t in a.tokens[key]] == [t["token"] for t in b.tokens[key]]
            gaps = [abs(t["logprob"] - u["logprob"]) for t, u in zip(a.tokens[key], b.tokens[key])]
            assert max(gaps) < TOKEN_TOL, (key, max(gaps))
    return worst


# ---- the tiny models are what they claim to be ------------------------------------------


@pytest.mark.parametrize("name", MODELS)
def test_tiny_model_mirrors_the_real_architecture(name, request):
    """Class, tied embeddings, vocabulary, grouped-query attention, activation, norms, RoPE,
    soft-capping and layer types as in the real config.json (where cached); sizes shrunk."""
    lm = request.getfixturevalue(name)
    cfg = lm.model.config
    assert type(lm.model).__name__ == {"tiny_llama": "LlamaForCausalLM", "tiny_gemma": "Gemma3ForCausalLM"}[name]
    assert lm.vocab_size == cfg.vocab_size == len(lm.tokenizer)
    assert cfg.num_key_value_heads < cfg.num_attention_heads  # grouped-query
    assert cfg._attn_implementation == "sdpa" and lm.model.dtype == torch.float32 and not lm.model.training
    assert lm.start_id == lm.tokenizer.convert_tokens_to_ids(lm.spec.start_token)
    real = cache_root() / "models" / lm.spec.id / "config.json"
    if not real.exists():
        pytest.skip("the real model's config.json is not cached")
    want = json.loads(real.read_text())
    assert cfg.architectures is None or cfg.architectures == want["architectures"]
    assert [type(lm.model).__name__] == want["architectures"]
    fields = ["model_type", "vocab_size", "tie_word_embeddings", "rms_norm_eps", "rope_parameters", "bos_token_id",
              "eos_token_id", "pad_token_id", "attention_bias", "max_position_embeddings"]
    if name == "tiny_llama":
        fields += ["hidden_act", "mlp_bias"]
    else:
        fields += ["hidden_activation", "final_logit_softcapping", "attn_logit_softcapping", "use_bidirectional_attention"]
        assert cfg.query_pre_attn_scalar == cfg.head_dim and want["query_pre_attn_scalar"] == want["head_dim"]
        assert set(cfg.layer_types) == set(want["layer_types"]) == {"sliding_attention", "full_attention"}
        assert cfg.sliding_window < want["sliding_window"]
    for f in fields:
        assert getattr(cfg, f) == want[f], f


@pytest.mark.parametrize("name", MODELS)
def test_tiny_predictions_are_sharp_and_depend_on_context(name, request):
    """Random weights scaled so that a wrong mask or position shows: next-token entropy well
    below uniform, and dropping a sentence's first word moves the last prediction."""
    lm = request.getfixturevalue(name)
    ids = lm.tokenizer("The cats that the dog chased sleep.", add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        full = lm.model(torch.tensor([[lm.start_id, *ids]])).logits[0].double().log_softmax(-1)
        cut = lm.model(torch.tensor([[lm.start_id, *ids[1:]]])).logits[0].double().log_softmax(-1)
    entropy = float(-(full.exp() * full).sum(-1).mean())
    assert entropy < 0.6 * math.log(lm.vocab_size), entropy
    kl = float((full[-1].exp() * (full[-1] - cut[-1])).sum())
    assert kl > 0.3, kl


# ---- fast engine = naive engine ------------------------------------------------------------


def test_fast_engine_equals_naive_on_every_method_llama(tiny_llama, pairs):
    """Every method on 8 BLiMP pairs: the fast engine (packed token trees, cached template
    prefixes, the chat template) against one plain forward pass a string."""
    methods = method_ids("causal")
    sc = CausalScorer(tiny_llama)
    with DecoderWidths(tiny_llama) as widths:
        fast = Engine(sc).score_pairs(pairs, methods, "en")
    assert widths.packed and sc._prefix_cache  # the packed path and the prefix cache ran
    naive = NaiveEngine(CausalScorer(tiny_llama)).score_pairs(pairs, methods, "en")
    assert {r["method"] for r in fast[0].rows} == set(methods)
    _assert_agree(fast, naive)


def test_fast_engine_equals_naive_on_every_method_gemma(tiny_gemma, pairs):
    """Every method on a BLiMP pair (naive scoring of Gemma's 262k vocabulary costs 0.1 s a
    string; the prompts dominate), strings beyond the sliding window included."""
    methods = method_ids("causal")
    calls = recording(sc := CausalScorer(tiny_gemma))
    fast = Engine(sc).score_pairs(pairs[:1], methods, "en")
    assert max(len(s) for s in calls[0][0]) > tiny_gemma.model.config.sliding_window
    naive = NaiveEngine(CausalScorer(tiny_gemma)).score_pairs(pairs[:1], methods, "en")
    assert {r["method"] for r in fast[0].rows} == set(methods)
    _assert_agree(fast, naive)


def test_fast_engine_equals_naive_on_templated_strings_gemma(tiny_gemma, pairs):
    """The readout methods on 4 pairs: packed in rows wider than the sliding window (the 4-D
    mask alone decides what a token sees) with cached template prefixes."""
    sc = CausalScorer(tiny_gemma)
    with DecoderWidths(tiny_gemma) as widths:
        fast = Engine(sc).score_pairs(pairs[:4], READOUT, "en")
    assert widths.packed and max(widths.packed) > tiny_gemma.model.config.sliding_window
    naive = NaiveEngine(CausalScorer(tiny_gemma)).score_pairs(pairs[:4], READOUT, "en")
    _assert_agree(fast, naive)


def test_chinese_pair_every_method_gemma(tiny_gemma):
    """A CLiMP-style pair with every method (是/否 answers, the Chinese templates) on the fast
    and the naive engine."""
    methods = method_ids("causal")
    engine = Engine(CausalScorer(tiny_gemma))
    assert "是 / 否" in engine.prompts_for(ZH_PAIR, "yes_no_prob_comp", "zh")[0]["kind"]
    fast = engine.score_pairs([ZH_PAIR], methods, "zh")
    naive = NaiveEngine(CausalScorer(tiny_gemma)).score_pairs([ZH_PAIR], methods, "zh")
    assert {r["method"] for r in fast[0].rows} == set(methods)
    _assert_agree(fast, naive)


# ---- packing and prefix sharing change no number ------------------------------------------


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("methods", ["readout", "all"])
def test_packing_and_prefix_sharing_change_no_token_logprob(name, methods, request, pairs):
    """The scorer calls of 8 pairs, scored again without packing, without prefix sharing, and
    one string at a time: every token's log-prob (and every answer's) within 1e-5, and
    packing runs fewer tokens (test_causal_scorer.py's checks, token by token)."""
    lm = request.getfixturevalue(name)
    sc = CausalScorer(lm, batch_size=16)
    calls = recording(sc)
    Engine(sc).score_pairs(pairs, READOUT if methods == "readout" else method_ids("causal"), "en")
    ((seqs, limits, answers, got),) = calls
    others = {
        "pack=False": CausalScorer(lm, batch_size=16, pack=False),
        "share_prefix=False": CausalScorer(lm, batch_size=16, share_prefix=False),
        "a string at a time": CausalScorer(lm, batch_size=1, share_prefix=False),
    }
    for label, other in others.items():
        want = other.score(seqs, limits, answers)
        assert [len(a) for a in got] == [len(b) for b in want]
        worst = max(float(np.abs(a - b).max()) for a, b in zip(got, want))
        assert worst < TOKEN_TOL, (label, worst)
    if methods == "readout":  # all strings fit the window: packed, a pair's common start once
        assert sc.stats["decoder_tokens"] < 0.95 * others["pack=False"].stats["decoder_tokens"]


@pytest.mark.parametrize("name", MODELS)
def test_prefix_cache_is_used_and_exact(name, request):
    """One template prefix computed once for four sentences, found again by a second call
    (no decoder work for it), and exact against plain scoring."""
    lm = request.getfixturevalue(name)
    template = "The following sentence is grammatically acceptable.\n\n"
    sents = ["These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", "Many girls insulted themselves.", "A cat."]
    sc = CausalScorer(lm, batch_size=8)
    t_ids = sc.encode(template).ids
    seqs = [sc.with_start(t_ids + sc.encode(s).ids) for s in sents]
    limit = 1 + len(t_ids)
    shared = sc.score(seqs, [limit] * 4)
    assert list(sc._prefix_cache) == [seqs[0][:limit]]  # the template prefix, computed once for all four
    entry, tokens = sc._prefix_cache[seqs[0][:limit]], sc.stats["decoder_tokens"]
    again = sc.score(seqs, [limit] * 4)
    assert sc._prefix_cache[seqs[0][:limit]] is entry and len(sc._prefix_cache) == 1
    assert sc.stats["decoder_tokens"] - tokens == tokens - limit  # the prefix did not run again
    assert all(np.array_equal(a, b) for a, b in zip(shared, again))
    plain = CausalScorer(lm, batch_size=1, share_prefix=False).score(seqs)
    for a, b in zip(shared, plain):
        assert float(np.abs(a - b).max()) < TOKEN_TOL


@pytest.mark.parametrize("name", MODELS)
def test_engine_reuses_template_prefixes_across_calls(name, request, pairs):
    """In-template methods fill the prefix cache; a second batch of pairs finds every
    template there and computes no new prefix."""
    lm = request.getfixturevalue(name)
    engine = Engine(sc := CausalScorer(lm))
    first = engine.score_pairs(pairs[:2], ["in_template_lp"], "en")
    cached = dict(sc._prefix_cache)
    assert len(cached) == 5  # Ide et al.'s five templates
    second = engine.score_pairs(pairs[2:4], ["in_template_lp"], "en")
    assert sc._prefix_cache.keys() == cached.keys() and all(sc._prefix_cache[k] is v for k, v in cached.items())
    naive = NaiveEngine(CausalScorer(lm)).score_pairs(pairs[:4], ["in_template_lp"], "en")
    _assert_agree(first + second, naive)


# ---- Gemma's sliding window -----------------------------------------------------------------


def test_a_string_longer_than_the_sliding_window_is_scored_exactly(tiny_gemma):
    """Gemma 3's local layers see 64 tokens here: a longer string must go through the model's
    own sliding mask (not a packed 4-D mask), and agree with plain and naive scoring, where a
    causal 4-D mask (what packing would give it) is off by far more."""
    lm = tiny_gemma
    sc = CausalScorer(lm, batch_size=4)
    window = lm.model.config.sliding_window
    template = "Judge the sentence.\n\n"
    t_ids = sc.encode(template).ids
    long = sc.with_start(t_ids + sc.encode(" ".join(["the cat sat on the mat"] * (window // 5))).ids)
    short = sc.with_start(t_ids + sc.encode("A cat sat.").ids)
    assert len(long) > window
    limit = 1 + len(t_ids)
    with DecoderWidths(lm) as widths:
        got = sc.score([long, short], [limit, limit])
    assert not widths.packed
    want = CausalScorer(lm, batch_size=1, share_prefix=False).score([long, short])
    for a, b in zip(got, want):
        assert float(np.abs(a - b).max()) < TOKEN_TOL
    with torch.inference_mode():
        ids = torch.tensor([long])
        naive = lm.model(ids).logits[0, :-1].double().log_softmax(-1)[torch.arange(len(long) - 1), ids[0, 1:]]
        causal = torch.ones(1, 1, len(long), len(long), dtype=torch.bool).tril()
        unwindowed = lm.model(ids, attention_mask=causal).logits[0, :-1].double().log_softmax(-1)[torch.arange(len(long) - 1), ids[0, 1:]]
    assert float((naive - torch.from_numpy(got[0]).double()).abs().max()) < TOKEN_TOL
    assert abs(float(naive.sum()) - float(got[0].sum())) < TOL
    beyond = slice(window, None)  # tokens whose local layers lose the string's start
    assert float((naive[beyond] - unwindowed[beyond]).abs().max()) > 100 * TOL
    assert float((naive[: window - 1] - unwindowed[: window - 1]).abs().max()) < TOKEN_TOL
