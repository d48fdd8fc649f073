"""Sanity on real data: LP beats chance clearly on BLiMP (SmolLM2) and CLiMP (Gemma)."""

import pytest
from scipy.stats import binomtest

from accapp.benchmarks import stratified_sample
from accapp.engine import Engine
from accapp.scoring.api import Pair
from accapp.scoring.causal import CausalScorer

pytestmark = pytest.mark.slow


def _lp_accuracy(lm, df, language):
    sample = stratified_sample(df, 10, seed=0)
    pairs = [Pair(g, b) for g, b in zip(sample.good, sample.bad)]
    results = Engine(CausalScorer(lm, batch_size=64), language).score_pairs(pairs, ["lp"])
    wins = sum(r.rows[0]["verdict"] == "good" for r in results)
    return wins, len(results)


def test_lp_smollm2_blimp_10_per_paradigm(smollm, blimp):
    wins, n = _lp_accuracy(smollm, blimp, "en")
    print(f"SmolLM2 LP on BLiMP, 10 pairs x 67 paradigms: {wins}/{n} = {wins / n:.3f}")
    assert n == 670
    assert wins / n > 0.6 and binomtest(wins, n, 0.5, alternative="greater").pvalue < 1e-6


def test_lp_gemma_climp_10_per_paradigm(gemma, climp):
    wins, n = _lp_accuracy(gemma, climp, "zh")
    print(f"Gemma LP on CLiMP, 10 pairs x 16 paradigms: {wins}/{n} = {wins / n:.3f}")
    assert n == 160
    assert wins / n > 0.6 and binomtest(wins, n, 0.5, alternative="greater").pvalue < 1e-4
