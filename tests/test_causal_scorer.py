"""The causal scorer on the real offline models: exactness of batching and prefix sharing,
an independent reference, start tokens."""

import numpy as np
import pytest

from accapp.benchmarks import stratified_sample
from accapp.engine import Engine
from accapp.scoring.api import Pair
from accapp.scoring.causal import CausalScorer
from tests.reference import reference_many, reference_next_logprob, reference_token_logprobs

pytestmark = pytest.mark.slow
TOL = 1e-4  # nats per sentence


def _pairs(df, n, seed=0):
    sample = stratified_sample(df, 1, seed).head(n)
    return [Pair(g, b) for g, b in zip(sample.good, sample.bad)]


# SmolLM2's case is in tests/test_ties.py (the naive scorer, one string a pass without prefix sharing,
# against the probe's and the runner's scores of 5 pairs, every method); Gemma's stays here, on 3 pairs
# (its one-at-a-time side runs about 16 s a pair on this CPU), held to the same rule: each score within its
# method's tie tolerance (accapp/methods/ties.py), so that no verdict depends on batching. An absolute 1e-4
# nats held with one torch thread and failed with two (1.18e-4 on a prompted sentence: float32 sums in
# another order).
@pytest.mark.parametrize("model", ["gemma"])
def test_batched_and_prefix_shared_equal_one_at_a_time(model, request, blimp):
    from accapp.methods.descriptor import descriptors
    from tests.test_ties import drift_in_tie_units

    lm = request.getfixturevalue(model)
    pairs = _pairs(blimp, 3)
    methods = ["lp", "in_template_lp", "in_template_comparative_lp", "yes_no_prob_comp", "ab_prompting", "meta_question_complex"]
    fast = Engine(CausalScorer(lm, batch_size=16, share_prefix=True)).score_pairs(pairs, methods)
    slow = Engine(CausalScorer(lm, batch_size=1, share_prefix=False)).score_pairs(pairs, methods)
    table, nats = descriptors(), 0.0
    for a, b in zip(fast, slow):
        assert [(r.method, r.template, r.variant) for r in a.scores] == [(r.method, r.template, r.variant) for r in b.scores]
        for r, s in zip(a.scores, b.scores):
            for x, y, size in ((r.score_good, s.score_good, s.size_good), (r.score_bad, s.score_bad, s.size_bad)):
                assert drift_in_tie_units(r.method, x, y, size) <= table[r.method].tie_rtol, (r.method, r.template, x, y)
                nats = max(nats, abs(x - y))
    print(f"\nlargest move, batched and prefix-shared against one at a time: {nats:.1e} in a score's unit")
    assert nats < 1e-3  # float32 noise, not a defect: a wrong position or mask moves a score by whole nats


def test_token_trees_run_a_pairs_shared_start_once_and_change_no_score(smollm, blimp):
    """Packed as token trees (several strings a row, a minimal pair's common start run once)
    against a string a row: every token's log-prob agrees, with fewer tokens run."""
    pairs = _pairs(blimp, 2, seed=3)  # 2 pairs, every method: about 100 strings, 4 before (CI's time)
    packed, plain = CausalScorer(smollm, batch_size=8), CausalScorer(smollm, batch_size=8, pack=False)
    a, b = Engine(packed).score_pairs(pairs), Engine(plain).score_pairs(pairs)
    for x, y in zip(a, b):
        for r, s in zip(x.rows, y.rows):
            assert (r["method"], r["template"]) == (s["method"], s["template"])
            assert abs(r["score_good"] - s["score_good"]) < TOL and abs(r["score_bad"] - s["score_bad"]) < TOL
        for key in ("good", "bad"):  # two float32 computations, each within ~8e-6 of float64
            assert max(abs(t["logprob"] - u["logprob"]) for t, u in zip(x.tokens[key], y.tokens[key])) < 2e-5
    assert packed.stats["decoder_tokens"] < 0.95 * plain.stats["decoder_tokens"]


def test_a_string_as_long_as_the_sliding_window_is_scored_without_packing(gemma):
    """Gemma 3's local layers see 512 tokens: a longer string must go through the model's own
    sliding mask (not the packed 4-D mask), and still agree with plain scoring."""
    sc = CausalScorer(gemma, batch_size=4)
    window = gemma.model.config.sliding_window
    template = "Judge the sentence.\n\n"
    t_ids = sc.encode(template).ids
    long = sc.with_start(t_ids + sc.encode(" ".join(["the cat sat on the mat"] * (window // 5))).ids)
    short = sc.with_start(t_ids + sc.encode("A cat sat.").ids)
    assert len(long) > window
    limit = 1 + len(t_ids)
    got = sc.score([long, short], [limit, limit])
    want = CausalScorer(gemma, batch_size=1, share_prefix=False).score([long, short])
    for a, b in zip(got, want):
        assert abs(float(a.sum()) - float(b.sum())) < 1e-3 * len(a) ** 0.5


def test_prefix_cache_is_used_and_exact(smollm):
    template = "The following sentence is grammatically acceptable.\n\n"
    sents = ["These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", "Many girls insulted themselves.", "A cat."]
    sc = CausalScorer(smollm, batch_size=8)
    seqs = [sc.with_start(sc.encode(template).ids + sc.encode(s).ids) for s in sents]
    limit = 1 + len(sc.encode(template).ids)
    shared = sc.score(seqs, [limit] * 4)
    assert len(sc._prefix_cache) == 1  # the template prefix was computed once, for all four
    plain = CausalScorer(smollm, batch_size=1, share_prefix=False).score(seqs)
    for a, b in zip(shared, plain):
        assert abs(float(a.sum()) - float(b.sum())) < TOL


CHECKED_TEMPLATES = ("1", "2")  # in-template LP's templates held to the reference (two: a batch of mixed prefixes)


def _reference_gap(lm, pairs) -> float:
    """Worst gap, in nats a sentence, between the engine on `lm` and the float64 reference: LP, and
    in-template LP in the templates checked (the engine asked for those only: the other three, never
    compared, cost most of the float64 run)."""
    from accapp.methods import all_methods
    from accapp.prompts import template_set

    texts = {t["id"]: t["text"] for t in template_set("ide2025")["in_template_single"]["en"]}
    method = all_methods()["in_template_lp"]
    method.templates = lambda ctx: list(CHECKED_TEMPLATES)  # this call only (removed below)
    try:
        results = Engine(CausalScorer(lm, batch_size=32)).score_pairs(pairs, ["lp", "in_template_lp"])
    finally:
        del method.templates
    prefixes = {t: texts[t].partition("{sentence}")[0] for t in CHECKED_TEMPLATES}
    reference_many(lm, [(s,) for res in results for s in (res.pair.good, res.pair.bad)] +
                   [(prefixes[t], res.pair.good) for res in results for t in CHECKED_TEMPLATES])
    worst = 0.0
    for res in results:
        for key, sentence in (("good", res.pair.good), ("bad", res.pair.bad)):
            ours = sum(t["logprob"] for t in res.tokens[key])
            worst = max(worst, abs(ours - sum(reference_token_logprobs(lm, (sentence,)))))
        rows = [r for r in res.rows if r["method"] == "in_template_lp"]
        assert [r["template"] for r in rows] == list(CHECKED_TEMPLATES)
        for r in rows:
            prefix, _, suffix = texts[r["template"]].partition("{sentence}")
            assert not suffix, suffix  # the template ends with the sentence: its LP is the whole string's after the prefix
            ref = sum(reference_token_logprobs(lm, (prefix, res.pair.good)))
            worst = max(worst, abs(r["score_good"] - ref))
    return worst


def test_scorer_agrees_with_independent_reference_on_20_blimp_pairs(smollm, blimp):
    """The engine's logic (batching, prefix KV, gathering) against the reference, both on the
    float64 weights, so that float32 rounding cannot hide a mistake: within 1e-4 nats."""
    import dataclasses

    from tests.reference import _model64

    pairs = _pairs(blimp, 20, seed=1)
    assert _reference_gap(dataclasses.replace(smollm, model=_model64(smollm)), pairs) < TOL


def test_the_reference_s_padded_passes_equal_lone_passes(smollm, blimp):
    """reference_many's right-padded float64 passes (tests/reference.py) give each string the values of
    a pass of its own, to float64 rounding: 6 strings of different lengths, one padded pass."""
    import torch

    from tests import reference
    from tests.reference import _model64

    pairs = _pairs(blimp, 3, seed=5)
    texts = [(p.good,) for p in pairs] + [("Here is a sentence that is longer than the others: ", p.bad) for p in pairs]
    model = _model64(smollm)
    lone = {}
    for parts in texts:
        ids = reference.reference_ids(smollm, parts)
        with torch.inference_mode():
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0], dim=-1)
        lone[parts] = [logp[i - 1, ids[i]].item() for i in range(1, len(ids))]
    saved = dict(reference._TRUTH)
    reference._TRUTH.clear()  # computed here, padded, whatever other tests cached
    try:
        reference_many(smollm, texts, batch=len(texts))
        for parts in texts:
            got = reference_token_logprobs(smollm, parts)
            assert len(got) == len(lone[parts]) and np.abs(np.subtract(got, lone[parts])).max() < 1e-9, parts
    finally:
        reference._TRUTH.clear()
        reference._TRUTH.update(saved)


def test_float32_engine_within_rounding_of_float64_truth(smollm, blimp):
    """The float32 engine as shipped, against float64 truth: float32 rounding alone moves a
    sentence's LP by ~1e-4 nats (measured here: 1.1e-4 worst over 50 pairs; the naive float32
    path differs from truth by as much), so the bound is twice that, far below any real error."""
    assert _reference_gap(smollm, _pairs(blimp, 50, seed=1)) < 2.5e-4


def test_yes_no_matches_reference_answer_probabilities(smollm):
    engine = Engine(CausalScorer(smollm))
    res = engine.score_pair("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", ["yes_no_prob_comp"])
    prompt = engine.prompts_for(res.pair, "yes_no_prob_comp")[0]["text"]
    prompt = prompt.removeprefix("<|endoftext|>")
    ly, ln = reference_next_logprob(smollm, prompt, "Yes"), reference_next_logprob(smollm, prompt, "No")
    expected = np.exp(ly) / (np.exp(ly) + np.exp(ln))
    assert res.rows[0]["score_good"] == pytest.approx(expected, abs=1e-5)


def test_casserole_pair_matches_measured_values(smollm, gemma):
    """Measured once by hand: after <|endoftext|>, SmolLM2 gives -56.43 vs -59.97; Gemma after <bos> -65.86 vs -68.51."""
    for lm, good, bad in ((smollm, -56.43, -59.97), (gemma, -65.86, -68.51)):
        res = Engine(CausalScorer(lm)).score_pair("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", ["lp"])
        assert res.rows[0]["score_good"] == pytest.approx(good, abs=0.01)
        assert res.rows[0]["score_bad"] == pytest.approx(bad, abs=0.01)


# The start-token, chat-template and base-template checks need only the tokenizers: they run on
# the tiny models in tests/test_tiny_engine.py.


def test_chinese_yes_no_uses_shi_fou_when_single_tokens(gemma):
    engine = Engine(CausalScorer(gemma))
    pair = engine.check_pair("王玉珍震惊了她自己。", "王玉珍震惊了他自己。")
    shown = engine.prompts_for(pair, "yes_no_prob_comp")[0]
    assert "是 / 否" in shown["kind"]  # 是 and 否 are single Gemma tokens after the prompt
    assert "请用“是”或“否”回答" in shown["text"]


def test_target_logprobs_unbiased_against_float64(smollm):
    """The scorers' log-softmax (logits - logsumexp, float32) stays within 1e-5 of float64 with no
    drift, where torch's float32 log_softmax is off by ~1.6e-5 per token, always one way."""
    import torch

    from accapp.scoring.logsoftmax import target_logprobs

    tok = smollm.tokenizer
    ids = [smollm.start_id] + tok("These casseroles disgust Kayla. The following sentence is fine.", add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logits = smollm.model(torch.tensor([ids])).logits[0, :-1].float()
    targets = torch.tensor(ids[1:])
    ref = torch.log_softmax(logits.double(), -1).gather(1, targets[:, None])[:, 0]
    ours = target_logprobs(logits, targets).double()
    assert (ours - ref).abs().max() < 1e-5
    assert abs(float((ours - ref).sum())) < 1e-4  # summed over the string: no drift
    cand = torch.stack([targets, targets.flip(0)], 1)
    assert torch.allclose(target_logprobs(logits, cand).double(), torch.log_softmax(logits.double(), -1).gather(1, cand), atol=1e-5)


def test_streamed_head_matches_float64_without_drift(smollm):
    """The CPU path: the vocabulary streamed in chunks (an online logsumexp), rows shared between
    targets, against float64 log_softmax of the float32 logits of the same hidden states (what
    the naive baseline computes), chunked and in one product (the GPU path); also with a soft cap
    (Gemma 2's 30), which no model here uses."""
    import torch

    from accapp.scoring.logsoftmax import streamed_target_logprobs

    sc = CausalScorer(smollm)
    ids = [smollm.start_id] + list(sc.encode("These casseroles disgust Kayla. The following sentence is fine.").ids)
    with torch.inference_mode():
        hidden = sc._decoder(input_ids=torch.tensor([ids])).last_hidden_state[0, :-1]
    weight = sc._head.weight
    assert sc._vocab_chunk  # float32 on the CPU: the vocabulary streams in chunks
    targets = torch.tensor(ids[1:])
    rows = torch.arange(len(targets))
    # Each row twice, the second time with another target: shared rows, several chunks of each.
    rows2, targets2 = torch.cat([rows, rows]), torch.cat([targets, targets.flip(0)])
    for cap in (None, 30.0):
        with torch.inference_mode():
            logits = (hidden @ weight.T).double()
            if cap:
                logits = torch.tanh(logits / cap) * cap
            ref = torch.log_softmax(logits, -1)[rows2, targets2]
            ours = streamed_target_logprobs(hidden, sc._project, sc._vocab, rows2, targets2, cap, row_chunk=7,
                                            vocab_chunk=5000).double()
            whole = streamed_target_logprobs(hidden, lambda h, start, stop: h @ weight.T, sc._vocab, rows2, targets2, cap,
                                             row_chunk=7, vocab_chunk=None).double()  # the GPU path's one product
        assert (whole - ref).abs().max() < 1e-5
        assert (ours - ref).abs().max() < 1e-5
        assert abs(float((ours - ref).sum())) < 1e-4


def test_byte_pieces_of_one_character_get_disjoint_spans(smollm):
    """An emoji is three byte-level tokens reporting the same span: the first keeps it, the
    rest get empty spans, so the token texts join back into the sentence (no repeated 🐶)."""
    sc = CausalScorer(smollm)
    enc = sc.encode("The dog 🐶 barks.")
    texts = [enc.text[a:b] for a, b in enc.offsets]
    assert "".join(texts) == "The dog 🐶 barks."
    assert texts.count("") >= 1 and all(a <= b for a, b in enc.offsets)
    assert all(enc.offsets[i][1] <= enc.offsets[i + 1][0] for i in range(len(texts) - 1))
