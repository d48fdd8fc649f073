"""Every speed-up leaves every score equal to the naive baseline (one plain forward pass per
string, full logits) within 1e-4 nats: 8 BLiMP pairs from 8 paradigms, every causal method and
template, on the real SmolLM2. 8, not 50: the naive baseline runs 54 full passes a pair (86 before
its one-token answers were read from one pass over their prompt), too long
for CI at 50 (docs/performance.md, "The test suite's time"); breadth is covered elsewhere: the tiny
models on every method (test_tiny_engine.py), the float64 reference on 50 pairs' LPs
(test_causal_scorer.py), pairs alone and batched (test_ties.py). It is also SmolLM2's case of
test_causal_scorer.py::test_batched_and_prefix_shared_equal_one_at_a_time (merged here: the
naive scorer is one string a pass, no prefix sharing; the fast one batches and shares prefixes)."""

import pytest

from accapp.benchmarks import stratified_sample
from accapp.engine import Engine
from accapp.methods import method_ids
from accapp.scoring.api import Pair
from accapp.scoring.causal import CausalScorer
from accapp.scoring.naive import NaiveScorer

pytestmark = pytest.mark.slow


def test_fast_engine_equals_naive_on_8_pairs_every_method(smollm, blimp):
    sample = stratified_sample(blimp, 1, seed=3).head(8)
    pairs = [Pair(g, b) for g, b in zip(sample.good, sample.bad)]
    methods = method_ids("causal")
    fast = Engine(CausalScorer(smollm, batch_size=16, share_prefix=True)).score_pairs(pairs, methods)
    naive = Engine(NaiveScorer(smollm)).score_pairs(pairs, methods)
    worst, where = 0.0, None
    seen = set()
    for a, b in zip(fast, naive):
        for r, s in zip(a.rows, b.rows):
            assert (r["method"], r["template"], r["variant"]) == (s["method"], s["template"], s["variant"])
            seen.add(r["method"])
            d = max(abs(r["score_good"] - s["score_good"]), abs(r["score_bad"] - s["score_bad"]))
            if d > worst:
                worst, where = d, (r["method"], r["template"])
    assert seen == set(methods)
    assert worst < 1e-4, (worst, where)
