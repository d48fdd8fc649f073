"""Each method's tie rule (issue 35; issue 23, item 3): scores closer than the method's tolerance,
its constant times the size of the terms its score is a sum or difference of, are a tie, so a
verdict does not depend on what else was scored in the same batch.

- hand-computed cases of the rule;
- independent of the project's scoring code: plain transformers forward passes of SmolLM2, each
  sentence alone and in right-padded batches of mixed lengths; the drift stays inside LP's
  tolerance and every LP verdict is the same;
- BLiMP pairs with every method, scored alone (one pair a call, as the probe does) and in one
  batched call (as the runner does): per method, the drift in its terms' units, below its
  tolerance; a verdict changes only on the edge, rarely. 500 pairs (-m heavy: where the constants
  in methods.json come from, `python3 -m pytest -m heavy tests/test_ties.py`); CI runs every 50th
  of them (10 pairs, 10 paradigms, every method).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from accapp.methods import formulas as F
from accapp.methods import ties
from accapp.methods.descriptor import describe, descriptors


def test_tie_rule_by_hand():
    # the maths, with a constant given: terms' size x constant
    assert F.tie_tolerance(1e-5, "sum", -70.0, -72.0) == pytest.approx(72e-5)
    assert F.tie_tolerance(1e-5, "log_probability", -0.2, -0.3) == pytest.approx(1e-5)  # at least 1
    assert F.tie_tolerance(1e-5, "probability", 0.3, 0.9) == pytest.approx(1e-5)  # absolute
    assert F.tie_tolerance(1e-5, "share", 0.5, 0.5) == 0.0
    assert F.tie_tolerance(1e-5, "lp_minus_unigram", 1.35, 1.2, 70.0 + 71.35, 60.0) == pytest.approx(141.35e-5)
    with pytest.raises(ValueError, match="needs the terms"):
        F.terms_size("lp_minus_unigram", 1.35)
    assert F.verdict_within(-2.1005869, -2.1005831, 1e-5) == "tie"
    assert F.verdict_within(-2.1005869, -2.1005831, 1e-6) == "bad"
    assert F.verdict_within(1.0, 1.0, 0.0) == "tie"
    assert F.strict_verdict(-56.4255, -59.9697) == "good" and F.strict_verdict(-1.0, -1.0) == "tie"
    # the shipped constants: LP's tolerance at -70 nats is below 1e-3 nats (issue 35)
    assert ties.tolerance("lp", -70.0, -70.5) < 1e-3
    assert ties.verdict("lp", -70.0, -70.0263) == "good"  # the 0.0263-nat pair is no tie
    lp = describe("lp").tie_rtol
    assert ties.verdict("lp", -100.0, -100.0 - 50 * lp) == "tie" and ties.verdict("lp", -100.0, -100.0 - 101 * lp) == "good"
    with pytest.raises(ValueError, match="size of its terms"):
        ties.tolerance("slor", 1.0, 0.9)  # its LP is not in its score: the method must say


def test_each_constant_is_at_most_ten_times_its_measured_drift():
    for m, d in descriptors().items():  # the PLLs' on a masked LM (SPLADE-tiny), the others' on SmolLM2
        assert d.drift is not None, f"{m}: no drift measured"
        assert d.tie_rtol <= 10 * d.drift, (m, d.tie_rtol, d.drift)
        assert d.drift <= d.tie_rtol, (m, d.drift, d.tie_rtol)  # the measured drift lies inside the tolerance


def _plain_lp(model, rows: list[list[int]], start: int) -> list[float]:
    """LP of each token row after the start token, in one right-padded batch (plain transformers)."""
    seqs = [[start] + r for r in rows]
    width = max(len(s) for s in seqs)
    ids = torch.tensor([s + [start] * (width - len(s)) for s in seqs])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits.float(), -1)
    return [float(sum(logp[b, i - 1, s[i]].item() for i in range(1, len(s)))) for b, s in enumerate(seqs)]


@pytest.mark.slow
def test_batching_drift_stays_inside_the_tolerance_independently(smollm, blimp):
    """No project scoring code: SmolLM2's LP of 64 BLiMP pairs' sentences alone and in shuffled
    batches of 16 (mixed lengths, right padding) move by float32 noise only, far below the tie
    tolerance, and the project's rule gives each pair the same verdict both ways."""
    sample = blimp.groupby("paradigm").head(1).head(64)
    sentences = list(sample.good) + list(sample.bad)
    tok, model = smollm.tokenizer, smollm.model
    rows = [tok.encode(s, add_special_tokens=False) for s in sentences]
    alone = [_plain_lp(model, [r], smollm.start_id)[0] for r in rows]
    order = np.random.default_rng(0).permutation(len(rows))
    batched = np.zeros(len(rows))
    for k in range(0, len(rows), 16):
        idx = order[k : k + 16]
        batched[idx] = _plain_lp(model, [rows[i] for i in idx], smollm.start_id)
    drift = np.abs(np.asarray(alone) - batched) / np.maximum(1, np.abs(batched))
    print(f"largest relative drift, plain transformers alone vs batched: {drift.max():.2e} (LP's constant "
          f"{describe('lp').tie_rtol:.2e}, from the project's engine, which packs where this pads)")
    # right padding moves scores more than the engine's packing, so this independent figure is held to
    # the bound the issue sets on LP's tolerance (below 1e-3 nats at -70 nats), and the verdicts agree
    assert drift.max() < 1e-3 / 70, drift.max()
    n = len(sample)
    for i in range(n):
        assert ties.verdict("lp", alone[i], alone[n + i]) == ties.verdict("lp", batched[i], batched[n + i])


def drift_in_tie_units(method: str, x: float, y: float, size: float | None) -> float:
    """How far a score moved, alone vs batched, in its tie rule's units (the terms' size)."""
    from accapp.methods.ties import rule_of

    scale = F.terms_size(rule_of(method)[0], x, size)
    if scale == 0:
        return 0.0 if x == y else float("inf")  # a share of votes: exact, or a defect
    return abs(x - y) / scale


def _check_alone_against_batched(pairs_alone_batched, label: str) -> dict:
    """The rule, per method: the scores move by less than the method's tolerance, a verdict changes
    only where the pair sits on the edge of it (its score difference within the drift measured for
    that judgment of the tolerance), and such judgments are rare. Returns the figures."""
    from accapp.methods.descriptor import descriptors

    table = descriptors()
    drift: dict[str, float] = {}
    where: dict[str, dict] = {}
    rows, judgments, on_edge, off_edge, n_pairs = [], 0, [], [], 0
    out = Path(__file__).resolve().parents[1] / "test-artifacts"
    out.mkdir(exist_ok=True)  # the figures for docs/ties.md; the rows let the constants be checked again
    progress = (out / f"ties_{label}_rows.jsonl").open("w")  # a pair at a time: a long run's figures so far
    for good, alone, together in pairs_alone_batched:
        n_pairs += 1
        first = len(rows)
        for a, b in zip(alone.scores, together.scores):
            assert (a.method, a.template, a.variant) == (b.method, b.template, b.variant)
            judgments += 1
            rows.append([a.method, a.template, a.variant, a.score_good, a.score_bad, b.score_good, b.score_bad,
                         a.size_good, a.size_bad, b.size_good, b.size_bad])
            for x, y, size in ((a.score_good, b.score_good, a.size_good), (a.score_bad, b.score_bad, a.size_bad)):
                d = drift_in_tie_units(a.method, x, y, size)
                if d >= drift.get(a.method, 0.0):
                    drift[a.method], where[a.method] = d, {"template": a.template, "alone": x, "batched": y, "good": good}
            moved = abs(a.score_good - b.score_good) + abs(a.score_bad - b.score_bad)
            if a.verdict != b.verdict:  # only where the drift can carry the gap across the tolerance
                edge = abs(abs(a.score_good - a.score_bad) - a.tolerance)
                if edge > moved + abs(a.tolerance - b.tolerance):
                    off_edge.append((a.method, a.template, a.variant, good))
            if (a.verdict, a.prediction) != (b.verdict, b.prediction):  # a prediction: an answer's own tie edge
                on_edge.append((a.method, a.template, a.variant, good))
        progress.write(json.dumps(rows[first:]) + "\n")
        progress.flush()
    progress.close()
    print(f"\n{label}: {n_pairs} pairs, {judgments} judgments; per method, the largest drift alone vs "
          "batched in its terms' units, and its tie constant:")
    for m, d in drift.items():
        print(f"  {m:28s} terms {table[m].terms:28s} drift {d:.3e}  tie_rtol {table[m].tie_rtol:.3e}")
    print(f"verdicts that changed (all on the tie edge): {len(on_edge)} of {judgments}")
    figures = {"pairs": n_pairs, "judgments": judgments, "drift": drift, "where": where,
               "tie_rtol": {m: table[m].tie_rtol for m in drift}, "changed_on_the_edge": on_edge, "off_edge": off_edge}
    (out / f"ties_{label}.json").write_text(json.dumps(figures))
    assert not off_edge, off_edge
    for m, d in drift.items():
        assert d <= table[m].tie_rtol or table[m].tie_rtol == d == 0, (m, d, table[m].tie_rtol)
    assert len(on_edge) <= max(1, judgments // 1000), on_edge
    return figures


def _alone_and_batched(smollm, sample):
    from accapp.engine import build_engine

    engine = build_engine(smollm.spec.id, lm=smollm)
    pairs = [engine.check_pair(g, b) for g, b in zip(sample.good, sample.bad)]
    batched = engine.score_pairs(pairs, None, "en")
    return ((p.good, engine.score_pairs([p], None, "en")[0], together) for p, together in zip(pairs, batched))  # lazily


def _sample(blimp, n: int):
    from accapp.benchmarks import stratified_sample

    return stratified_sample(blimp, 8, 23).head(n)  # 8 pairs of each paradigm in turn


@pytest.fixture(scope="module")
def ci_pairs(smollm, blimp):
    """CI's part of the 500 pairs: every 50th (10 pairs from 10 paradigms), each scored alone and
    batched with every method, once for the two tests below: [(good, alone, batched)]."""
    sample = _sample(blimp, 500).iloc[::50]  # every 50th, not 25th: the suite had grown past its 20 minutes
    assert len(sample) == 10 and sample.paradigm.nunique() == 10
    return list(_alone_and_batched(smollm, sample))


@pytest.mark.slow
def test_pairs_alone_and_batched_give_the_same_verdicts(ci_pairs):
    """CI's part of the 500-pair test: 10 pairs from 10 paradigms, every method, 510 judgments:
    the same rule as the 500, on a tenth of the 100 pairs CI used to run."""
    _check_alone_against_batched(ci_pairs, "10")


@pytest.mark.slow
def test_alone_and_batched_equal_the_naive_scorer_on_5_pairs_every_method(smollm, ci_pairs):
    """Every speed-up leaves every score where the naive baseline puts it (accapp/scoring/naive.py: one plain
    forward pass per string, float64 log-softmax, no batching, no packing, no prefix sharing), within the
    method's tie tolerance (the same rule as alone against batched): the first 5 of CI's pairs (5 paradigms),
    every causal method and template, on the real SmolLM2, the probe's path (a pair alone) and the runner's
    (10 pairs batched) both. Float32 noise is all that is left: at most 2.4e-4 nats on a -100-nat sentence
    (measured, against the float64 truth too), 1e-3 nats at -70 nats being the bound the tolerances keep.
    5, not 10: the naive baseline runs 54 full passes a pair (docs/performance.md, "The test suite's time");
    breadth is covered elsewhere: the tiny models on every method (test_tiny_engine.py), the float64
    reference on 20 pairs' LPs (test_causal_scorer.py). Gemma's case: test_causal_scorer.py's batched
    against one at a time."""
    from accapp.engine import Engine
    from accapp.methods import method_ids
    from accapp.scoring.naive import NaiveScorer

    table = descriptors()
    engine = Engine(NaiveScorer(smollm))
    methods = method_ids("causal")
    naive = engine.score_pairs([engine.check_pair(r.pair.good, r.pair.bad) for _, r, _ in ci_pairs[:5]], methods, "en")
    worst: dict[str, float] = {}
    nats = 0.0  # the largest move in the score's own unit, for the record
    for (_, alone, batched), slow in zip(ci_pairs[:5], naive):
        assert alone.pair.good == slow.pair.good
        for fast in (alone, batched):
            assert [(a.method, a.template, a.variant) for a in fast.scores] == \
                [(b.method, b.template, b.variant) for b in slow.scores]
            for a, b in zip(fast.scores, slow.scores):
                for x, y, size in ((a.score_good, b.score_good, b.size_good), (a.score_bad, b.score_bad, b.size_bad)):
                    worst[a.method] = max(worst.get(a.method, 0.0), drift_in_tie_units(a.method, x, y, size))
                    nats = max(nats, abs(x - y))
    assert set(worst) == set(methods)
    print(f"\nlargest move from the naive baseline: {nats:.1e} in a score's unit; in the tie rule's units: " +
          ", ".join(f"{m} {d:.1e}" for m, d in sorted(worst.items(), key=lambda kv: -kv[1])[:6]))
    for m, d in worst.items():
        assert d <= table[m].tie_rtol or table[m].tie_rtol == d == 0, (m, d, table[m].tie_rtol)


def _masked_alone_and_batched(splade_bert, sample):
    """The PLLs of a masked LM, alone and batched: two scorers, as MaskedScorer keeps each sentence's PLL
    (one scorer would give the batched call the alone call's numbers)."""
    from accapp.engine import Engine
    from accapp.methods import method_ids
    from accapp.scoring.masked import MaskedScorer

    model, tok = splade_bert
    alone_engine, together_engine = Engine(MaskedScorer(model, tok)), Engine(MaskedScorer(model, tok))
    methods = method_ids("masked")
    pairs = [alone_engine.check_pair(g, b) for g, b in zip(sample.good, sample.bad)]
    batched = together_engine.score_pairs(pairs, methods, "en")
    return ((p.good, alone_engine.score_pairs([p], methods, "en")[0], together) for p, together in zip(pairs, batched))


@pytest.mark.slow
def test_masked_pairs_alone_and_batched_give_the_same_verdicts(splade_bert, blimp):
    """The same rule for the four PLLs, on a trained masked LM (SPLADE-tiny: tests/conftest.py): every
    20th of the 500 pairs (25), each scored alone and in one batch of copies (other pairs' copies beside it, other padding)."""
    sample = _sample(blimp, 500).iloc[::20]
    figures = _check_alone_against_batched(_masked_alone_and_batched(splade_bert, sample), "25-masked")
    assert set(figures["drift"]) == {m for m, d in descriptors().items() if d.kind == "masked"}


@pytest.mark.heavy
def test_500_pairs_masked_alone_and_batched_give_the_same_verdicts(splade_bert, blimp):
    """The masked LM's 500 pairs: where the PLLs' constants in methods.json come from
    (scripts/tie_constants.py test-artifacts/ties_500-masked_rows.jsonl)."""
    sample = _sample(blimp, 500)
    sample = pd.concat([sample.iloc[k::20] for k in range(20)])
    _check_alone_against_batched(_masked_alone_and_batched(splade_bert, sample), "500-masked")


@pytest.mark.heavy
def test_500_pairs_alone_and_batched_give_the_same_verdicts(smollm, blimp):
    """Every judgment of 500 BLiMP pairs (every method), alone (one pair a call, as the probe) and
    in one call (as the runner): the measurement the tie constants in methods.json come from."""
    sample = _sample(blimp, 500)
    assert len(sample) == 500
    # every 20th first, then the rest in the same stride: the pairs so far always span the paradigms
    sample = pd.concat([sample.iloc[k::20] for k in range(20)])
    _check_alone_against_batched(_alone_and_batched(smollm, sample), "500")
