"""The real engine on tiny random-weight models of both embedded architectures (fast tier).

tests/tiny_models.py builds a Llama (SmolLM2's tokenizer, chat template) and a Gemma 3 (Gemma
3 270M's tokenizer, a 64-token sliding window) in seconds. Here the fast engine (batching,
token-tree packing, cached template prefixes, the vocabulary streamed in chunks) must give
the naive engine's numbers (one plain forward pass a string, float64 log-softmax) for every
method, and packing or prefix sharing must change no token's log-prob. The same checks on
the real models, with their golden numbers, are the slow tier (test_causal_scorer.py).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from accapp.benchmarks import stratified_sample
from accapp.engine import Engine
from accapp.methods import method_ids
from accapp.models.loading import cache_root
from accapp.scoring.api import Pair
from accapp.scoring.causal import CausalScorer
from accapp.scoring.naive import NaiveScorer

TOL = 1e-4  # nats a score (as test_causal_scorer.py)
# Nats a token between two float32 computations of one string (test_causal_scorer.py's bound).
# Measured on tiny Llama: packed vs unpacked up to 1.5e-5 (15 of 432 strings above 1e-5), each
# as far (2.9e-5) from the float64 weights' values: float32 rounding of the forward pass, the
# same in the naive engine.
TOKEN_TOL = 2e-5
# With float64 weights the paths agree to the last bit of the float32 log-probs they return
# (measured worst: 1.9e-6, one float32 step at 16-32 nats, for an answer's log-prob).
FLOAT64_TOL = 1e-5
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

    def score(seqs, limits=None, answers=None, boundaries=None, boundary_out=None, raw=None, **kwargs):
        out = inner(seqs, limits, answers, boundaries, boundary_out, raw, **kwargs)
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
    """Every method on 6 BLiMP pairs: the fast engine (packed token trees, cached template
    prefixes, the chat template) against one plain forward pass a string."""
    methods = method_ids("causal")
    sc = CausalScorer(tiny_llama)
    with DecoderWidths(tiny_llama) as widths:
        fast = Engine(sc).score_pairs(pairs[:6], methods, "en")
    assert widths.packed and sc._prefix_cache  # the packed path and the prefix cache ran
    naive = Engine(NaiveScorer(tiny_llama)).score_pairs(pairs[:6], methods, "en")
    assert {r["method"] for r in fast[0].rows} == set(methods)
    _assert_agree(fast, naive)


@pytest.mark.slow
def test_fast_engine_equals_naive_on_every_method_gemma(tiny_gemma, pairs):
    """Every method on one BLiMP pair, prompts longer than the sliding window included: the
    scorer then runs unpacked, sharing cached prefixes with the strings that fit. Slow tier
    (9 s): the naive engine scores Gemma's 262k-token vocabulary at every position of 86
    strings. The fast tier has every method on Gemma in Chinese, the readout methods in
    English, and this call's strings against unshared, one-at-a-time scoring."""
    methods = method_ids("causal")
    calls = recording(sc := CausalScorer(tiny_gemma))
    fast = Engine(sc).score_pairs(pairs[:1], methods, "en")
    assert max(len(s) for s in calls[0][0]) > tiny_gemma.model.config.sliding_window
    assert sc._prefix_cache
    naive = Engine(NaiveScorer(tiny_gemma)).score_pairs(pairs[:1], methods, "en")
    assert {r["method"] for r in fast[0].rows} == set(methods)
    _assert_agree(fast, naive)


def test_fast_engine_equals_naive_on_templated_strings_gemma(tiny_gemma, pairs):
    """The readout methods on 2 pairs: packed in rows wider than the sliding window (the 4-D
    mask alone decides what a token sees), after cached template prefixes."""
    sc = CausalScorer(tiny_gemma)
    with DecoderWidths(tiny_gemma) as widths:
        fast = Engine(sc).score_pairs(pairs[:2], READOUT, "en")
    assert widths.packed and max(widths.packed) > tiny_gemma.model.config.sliding_window
    assert sc._prefix_cache
    naive = Engine(NaiveScorer(tiny_gemma)).score_pairs(pairs[:2], READOUT, "en")
    _assert_agree(fast, naive)


_NAIVE: dict = {}
@pytest.mark.parametrize(
    "pack",
    [True, False],
    ids=["packed", "unpacked"],
)
def test_chinese_pair_every_method_gemma(tiny_gemma, pack):
    """A CLiMP-style pair with every method (是/否 answers, the Chinese base templates): the
    fast engine, packed or not, against the naive one (computed once for both). Packed, its
    rows' template prefixes (114 tokens) outgrow the 64-token window: a regression test for the
    sliding layers' cache that kept only the window's keys and no longer matched the mask."""
    methods = method_ids("causal")
    engine = Engine(CausalScorer(tiny_gemma, pack=pack))
    assert "是 / 否" in engine.prompts_for(ZH_PAIR, "yes_no_prob_comp", "zh")[0]["kind"]
    fast = engine.score_pairs([ZH_PAIR], methods, "zh")
    if "zh" not in _NAIVE:
        _NAIVE["zh"] = Engine(NaiveScorer(tiny_gemma)).score_pairs([ZH_PAIR], methods, "zh")
    naive = _NAIVE["zh"]
    assert {r["method"] for r in fast[0].rows} == set(methods)
    _assert_agree(fast, naive)


# ---- packing and prefix sharing change no number ------------------------------------------


def _variants_agree(lm, pairs, methods, tol) -> None:
    """The scorer calls of the engine, scored again without packing, without prefix sharing,
    and one string at a time: every token's log-prob (and every answer's) within tol."""
    sc = CausalScorer(lm, batch_size=16)
    calls = recording(sc)
    Engine(sc).score_pairs(pairs, methods, "en")
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
        assert worst < tol, (label, worst)
    if methods == READOUT:  # every string fits the window: packed, a pair's common start run once
        assert sc.stats["decoder_tokens"] < 0.95 * others["pack=False"].stats["decoder_tokens"]


@pytest.mark.parametrize(
    ("name", "methods", "n_pairs"),
    [("tiny_llama", "readout", 8), ("tiny_llama", "all", 4), ("tiny_gemma", "readout", 4), ("tiny_gemma", "all", 1)],
)
def test_packing_and_prefix_sharing_change_no_token_logprob(name, methods, n_pairs, request, pairs):
    """Token by token, as shipped (float32): test_causal_scorer.py's checks on tiny models.
    Gemma's full set has prompts beyond its window: unpacked, prefixes shared where they fit
    (one pair: scoring Gemma's 262k-token vocabulary four times over costs seconds)."""
    lm = request.getfixturevalue(name)
    _variants_agree(lm, pairs[:n_pairs], READOUT if methods == "readout" else method_ids("causal"), TOKEN_TOL)


@pytest.fixture(scope="module")
def tiny_llama64(tiny_llama):
    return dataclasses.replace(tiny_llama, model=copy.deepcopy(tiny_llama.model).double(), dtype="fp64")


def test_packing_and_prefix_sharing_are_exact_in_float64(tiny_llama64, pairs):
    """With float64 weights float32 rounding of the forward pass cannot hide a wrong mask,
    position or cached key: packed, unpacked, prefix-shared or not, the log-probs agree to
    the float32 resolution of the returned values (measured: bitwise for the readout methods)."""
    _variants_agree(tiny_llama64, pairs[:4], READOUT, FLOAT64_TOL)
    _variants_agree(tiny_llama64, pairs[:1], method_ids("causal"), FLOAT64_TOL)


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
    template there and computes no new prefix; the scores are those of no sharing at all."""
    lm = request.getfixturevalue(name)
    engine = Engine(sc := CausalScorer(lm))
    first = engine.score_pairs(pairs[:2], ["in_template_lp"], "en")
    cached = dict(sc._prefix_cache)
    assert len(cached) == 5  # Ide et al.'s five templates
    second = engine.score_pairs(pairs[2:4], ["in_template_lp"], "en")
    assert sc._prefix_cache.keys() == cached.keys() and all(sc._prefix_cache[k] is v for k, v in cached.items())
    plain = Engine(CausalScorer(lm, share_prefix=False)).score_pairs(pairs[:4], ["in_template_lp"], "en")
    _assert_agree(first + second, plain)


# ---- start token and templates (the tokenizers are the real ones) ---------------------------


@pytest.mark.parametrize("name", MODELS)
def test_exactly_one_start_token_and_first_token_scored(name, request):
    lm = request.getfixturevalue(name)
    sc = CausalScorer(lm)
    enc = sc.encode("These casseroles disgust Kayla.")
    seq = sc.with_start(enc.ids)
    assert seq[0] == lm.start_id and seq.count(lm.start_id) == 1
    assert lm.tokenizer.convert_ids_to_tokens(lm.start_id) == lm.spec.start_token
    assert sc.with_start(seq) == seq  # never a second start token
    lps = sc.score([seq])[0]
    assert len(lps) == len(enc.ids)  # the first real token ("These") is scored too
    assert lps[0] < 0


def test_chat_prompt_has_one_start_token(tiny_llama):
    engine = Engine(CausalScorer(tiny_llama))
    pair = engine.check_pair("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")
    for method in ("yes_no_prob_comp", "ab_prompting", "meta_instruct"):
        for shown in engine.prompts_for(pair, method):
            ids = tiny_llama.tokenizer(shown["text"], add_special_tokens=False)["input_ids"]
            assert ids.count(tiny_llama.start_id) == 1 and ids[0] == tiny_llama.start_id
            assert "<|im_start|>assistant\n" in shown["text"]  # instruct model: chat template


def test_base_model_uses_base_templates(tiny_gemma):
    engine = Engine(CausalScorer(tiny_gemma))
    pair = engine.check_pair("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")
    text = engine.prompts_for(pair, "yes_no_prob_comp")[0]["text"]
    assert text.startswith("<bos>Your task is to evaluate the quality of given text. Is the following")
    assert text.endswith("These casseroles disgust Kayla.\nAnswer: ")


# ---- Gemma's sliding window -----------------------------------------------------------------


def _gather(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """float64 log p(ids[i] | ids[:i]) for i >= 1 from one row's logits."""
    return logits[0, :-1].double().log_softmax(-1)[torch.arange(ids.shape[1] - 1), ids[0, 1:]]


def test_a_string_longer_than_the_sliding_window_is_scored_exactly(tiny_gemma):
    """Gemma 3's local layers see 64 tokens here: a longer string must go through the model's
    own sliding mask (not a packed 4-D mask), and agree with plain and naive scoring, where a
    plain causal 4-D mask (what packing would give it) is far off."""
    lm = tiny_gemma
    sc = CausalScorer(lm, batch_size=4)
    window = lm.model.config.sliding_window
    template = "Judge the sentence.\n\n"
    other = "Here is a sentence; judge whether it is acceptable English.\n\n"  # longer
    t_ids, o_ids = sc.encode(template).ids, sc.encode(other).ids
    body = sc.encode(" ".join(["the cat sat on the mat"] * (window // 5))).ids
    long = sc.with_start(t_ids + body)
    long_other = sc.with_start(o_ids + body)  # in one batch with `long`, its prefix padded
    short = sc.with_start(t_ids + sc.encode("A cat sat.").ids)
    assert len(long) > window and len(o_ids) > len(t_ids) >= 4
    limit = 1 + len(t_ids)
    seqs, limits = [long, long_other, short], [limit, 1 + len(o_ids), limit]
    with DecoderWidths(lm) as widths:
        got = sc.score(seqs, limits)
    assert not widths.packed
    want = CausalScorer(lm, batch_size=1, share_prefix=False).score(seqs)
    for a, b in zip(got, want):
        assert float(np.abs(a - b).max()) < TOKEN_TOL
    ids = torch.tensor([long])
    with torch.inference_mode():
        naive = _gather(lm.model(ids).logits, ids)
        causal = torch.ones(1, 1, len(long), len(long), dtype=torch.bool).tril()
        unwindowed = _gather(lm.model(ids, attention_mask=causal).logits, ids)
    ours = torch.from_numpy(got[0]).double()
    assert float((naive - ours).abs().max()) < TOKEN_TOL
    assert abs(float(naive.sum() - ours.sum())) < TOL
    # Token i (predicting i + 1) sees tokens i - 63 .. i in the local layers: the first
    # window - 1 predictions see the whole string either way, the later ones do not.
    assert float((naive[: window - 1] - unwindowed[: window - 1]).abs().max()) < TOKEN_TOL
    assert float((naive[window:] - unwindowed[window:]).abs().min()) > 0
    assert float((naive[window:] - unwindowed[window:]).abs().max()) > 100 * TOL


def test_a_template_longer_than_the_sliding_window_is_scored_exactly(tiny_gemma):
    """A template prefix longer than the window is not shared: its cached keys would not fit
    the sliding layers' cache (which keeps window - 1 of them). Plain scoring instead, exact."""
    lm = tiny_gemma
    sc = CausalScorer(lm)
    template = " ".join(["Please judge the following sentence."] * 12) + "\n\n"
    t_ids = sc.encode(template).ids
    assert len(t_ids) > lm.model.config.sliding_window
    seqs = [sc.with_start(t_ids + sc.encode(x).ids) for x in ("A cat sat.", "The dogs barks.")]
    got = sc.score(seqs, [1 + len(t_ids)] * 2)
    assert not sc._prefix_cache
    want = CausalScorer(lm, batch_size=1, share_prefix=False).score(seqs)
    for a, b in zip(got, want):
        assert float(np.abs(a - b).max()) < TOKEN_TOL


def test_the_next_pass_is_made_while_the_decoder_runs(tiny_llama):
    """Packed passes: after the decoder's pass k, the inputs of pass k+1 are already being made; a scorer that
    began them only after pass k returned would never get there in time (the wait below is bounded, and
    the decoder's call is what it waits in). What each pass's states are read for (its plan: rows, targets,
    candidates) is made there too, off the scoring thread. The scores are bit for bit those of a second scorer of the same
    settings, and within the token tolerance of one with no packing or prefix sharing."""
    import threading

    def scorer():
        return CausalScorer(tiny_llama, batch_size=1, row_tokens=8, pass_tokens_per_string=8)  # a row a pass

    sc = scorer()
    template = "The following sentence is grammatically acceptable.\n\n"
    t_ids = sc.encode(template).ids
    sents = ["These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", "Many girls insulted themselves.",
             "A cat.", "Some dogs were barking loudly at the mailman this morning."]
    seqs = [sc.with_start(t_ids + sc.encode(s).ids) for s in sents]
    limits = [1 + len(t_ids)] * len(seqs)
    with DecoderWidths(tiny_llama) as widths:
        expected = scorer().score(seqs, limits)
    n = len(widths.packed)
    assert n >= 3, "the sentences should need several packed passes"

    made: list[str] = []  # per pass whose inputs were begun: the thread that made them
    inner_inputs, inner_decoder = sc._packed_inputs, sc._decoder

    def packed_inputs(*args, **kwargs):
        made.append(threading.current_thread().name)
        return inner_inputs(*args, **kwargs)

    waited: list[bool] = []  # per packed pass but the last: the next one's inputs begun before it returned

    def decoder(**kwargs):
        packed = kwargs.get("attention_mask") is not None and kwargs["attention_mask"].dim() == 4
        k = len(waited)
        if packed and k + 1 < n:
            waited.append(_within(lambda: len(made) > k + 1))  # while pass k is still inside the decoder
        return inner_decoder(**kwargs)

    planned: list[str] = []  # per pass's plan: the thread that made it
    inner_plan = sc._plan_pass

    def plan_pass(*args, **kwargs):
        planned.append(threading.current_thread().name)
        return inner_plan(*args, **kwargs)

    sc._packed_inputs, sc._decoder, sc._plan_pass = packed_inputs, decoder, plan_pass
    scores = sc.score(seqs, limits)
    assert len(made) == n and all(waited) and len(waited) == n - 1, (made, waited)
    assert threading.current_thread().name not in made  # made beside the scoring thread, not on it
    assert planned == made, (planned, made)
    assert all(np.array_equal(a, b) for a, b in zip(scores, expected))
    plain = CausalScorer(tiny_llama, batch_size=1, share_prefix=False).score(seqs)
    for a, b in zip(scores, plain):
        assert float(np.abs(a - b).max()) < TOKEN_TOL


def _within(condition, seconds: float = 30.0) -> bool:
    """Whether condition() comes true within `seconds`."""
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.005)
    return False
