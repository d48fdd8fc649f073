"""Sanity on real data: LP beats chance clearly on BLiMP (SmolLM2) and CLiMP (Gemma)."""

import pytest
from scipy.stats import binomtest

from accapp.benchmarks import stratified_sample
from accapp.engine import Engine
from accapp.scoring.api import Pair
from accapp.scoring.causal import CausalScorer

pytestmark = pytest.mark.slow


def _lp_accuracy(lm, df, language, per_paradigm):
    sample = stratified_sample(df, per_paradigm, seed=0)
    pairs = [Pair(g, b) for g, b in zip(sample.good, sample.bad)]
    results = Engine(CausalScorer(lm, batch_size=64), language).score_pairs(pairs, ["lp"])
    wins = sum(r.rows[0]["verdict"] == "good" for r in results)
    return wins, len(results)


def test_lp_smollm2_blimp_5_per_paradigm(smollm, blimp):
    """5 pairs of every BLiMP paradigm (335; 10 before): LP is right on about three in four, so the
    binomial p-value is far below the bound with either sample."""
    wins, n = _lp_accuracy(smollm, blimp, "en", 5)
    print(f"SmolLM2 LP on BLiMP, 5 pairs x 67 paradigms: {wins}/{n} = {wins / n:.3f}")
    assert n == 335
    assert wins / n > 0.6 and binomtest(wins, n, 0.5, alternative="greater").pvalue < 1e-6


def test_lp_gemma_climp_5_per_paradigm(gemma, climp):
    """5 pairs of every CLiMP paradigm (80; 10 before, for CI's time): LP is right on about four in five
    (82.2 % of the shipped 1,600), and 57 of 80 already puts the binomial p-value under the bound."""
    wins, n = _lp_accuracy(gemma, climp, "zh", 5)
    print(f"Gemma LP on CLiMP, 5 pairs x 16 paradigms: {wins}/{n} = {wins / n:.3f}")
    assert n == 80
    assert wins / n > 0.6 and binomtest(wins, n, 0.5, alternative="greater").pvalue < 1e-4
