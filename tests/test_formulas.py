"""Every formula against numbers computed by hand from a tiny known distribution."""

import math

import pytest

from accapp.methods import formulas as F

# A toy sentence of 3 tokens with p = 1/2, 1/4, 1/8: log-probs -ln2, -2ln2, -3ln2.
LN2 = math.log(2)
TOY = [-LN2, -2 * LN2, -3 * LN2]


def test_lp_mean_pen_by_hand():
    assert F.lp(TOY) == pytest.approx(-6 * LN2)  # ln(1/64) = -4.158883
    assert F.lp(TOY) == pytest.approx(-4.1588830834)
    assert F.mean_lp(TOY) == pytest.approx(-2 * LN2)  # -6ln2 / 3
    # PenLP: -6ln2 / ((5+3)/6)^0.8 = -4.1588830834 / 1.2587833 = -3.30390 (1.2587833 = exp(0.8 ln(4/3)))
    assert ((5 + 3) / 6) ** 0.8 == pytest.approx(1.2587833)
    assert F.pen_lp(TOY) == pytest.approx(-3.3039, abs=1e-4)
    assert F.pen_lp(TOY, alpha=0.0) == pytest.approx(F.lp(TOY))


def test_pen_lp_prefers_longer_sentence_at_equal_mean():
    # Same per-token log-prob -1: LP prefers the short one, PenLP's penalty grows slower than length.
    short, long = [-1.0] * 2, [-1.0] * 10
    assert F.lp(short) > F.lp(long)
    assert F.pen_lp(short) == pytest.approx(-2 / (7 / 6) ** 0.8)  # -1.7656
    assert F.pen_lp(long) == pytest.approx(-10 / (15 / 6) ** 0.8)  # -4.8045


def test_yes_no_normalisation_with_negative_logits():
    # Raw logits -2 (Yes) and -3 (No): P(Yes) = e^-2 / (e^-2 + e^-3) = 1 / (1 + e^-1) = 0.7310586
    # (dividing the raw logits, -2 / (-2 + -3) = 0.4, is the public code's bug and gives another number).
    lp_yes, lp_no = -2.0 - 7.0, -3.0 - 7.0  # log-probs: logits minus a shared logsumexp of 7
    assert F.yes_probability(lp_yes, lp_no) == pytest.approx(0.7310585786)
    assert F.yes_probability(lp_yes, lp_no) != pytest.approx(0.4)
    assert F.yes_probability(-1000.0, -1001.0) == pytest.approx(0.7310585786)  # stable far out
    assert F.two_way_logprob(-9.0, -10.0) == pytest.approx(math.log(0.7310585786))


def test_bayes_factors_and_slor_by_hand():
    uni = [math.log(0.1), math.log(0.01), math.log(0.5)]  # sum = ln(0.0005) = -7.6009
    assert F.bayes_factor_uniform(TOY, 64) == pytest.approx(-6 * LN2 + 3 * math.log(64))  # = 12 ln 2
    assert F.bayes_factor_uniform(TOY, 64) == pytest.approx(12 * LN2)
    assert F.bayes_factor_unigram(TOY, uni) == pytest.approx(math.log(1 / 64) - math.log(0.0005))  # ln(31.25)
    assert F.slor(TOY, uni) == pytest.approx(math.log(31.25) / 3)  # 1.14711


def test_verdict_is_strict_and_counts_ties():
    assert F.strict_verdict(-1.0, -2.0) == "good"
    assert F.strict_verdict(-2.0, -1.0) == "bad"
    assert F.strict_verdict(-1.5, -1.5) == "tie"
    assert F.verdict_within(-1.0, -1.0 - 1e-3, 1e-3) == "tie"


def test_majority_vote():
    assert F.majority([True, True, True, False, False])
    assert not F.majority([True, True, False, False, False])
    assert not F.majority([True, False])  # 1 of 2 is not a majority


def test_ensemble_votes_by_hand():
    # P-only and L-only use all five templates: the plain majority of each method's five votes.
    p = [True, True, True, False, False]
    l = [False, False, False, False, True]
    assert F.ensemble_correct(p, l, 5, 0) == 1.0
    assert F.ensemble_correct(p, l, 0, 5) == 0.0
    # Mixed: each seeded trial draws 3 of p and 2 of l; count the trials by hand from the draws.
    draws = F.ensemble_draws(3, 2)
    assert len(draws) == 10 and all(len(a) == 3 and len(b) == 2 and len(set(a)) == 3 for a, b in draws)
    expected = sum((sum(p[i] for i in a) + sum(l[i] for i in b)) >= 3 for a, b in draws) / 10
    assert F.ensemble_correct(p, l, 3, 2) == expected
    # All votes right -> 1; all wrong -> 0, whatever the draw.
    assert F.ensemble_correct([True] * 5, [True] * 5, 3, 2) == 1.0
    assert F.ensemble_correct([False] * 5, [False] * 5, 2, 3) == 0.0


def test_ensemble_draws_are_seeded_and_without_replacement():
    assert F.ensemble_draws(2, 3, seed=0) == F.ensemble_draws(2, 3, seed=0)
    assert F.ensemble_draws(2, 3, seed=0) != F.ensemble_draws(2, 3, seed=5)
    for a, b in F.ensemble_draws(2, 3):
        assert len(set(a)) == 2 and len(set(b)) == 3


def test_ensemble_ids_have_one_home():
    """schema.ENSEMBLE_METHODS names the ensembles; their settings, descriptors (names) and methods follow it."""
    from accapp.methods import all_methods, descriptors
    from accapp.schema import ENSEMBLE_METHODS

    named = [i for i, d in descriptors().items() if d.family == "ensemble"]
    assert list(F.ENSEMBLE_SETTINGS) == named == list(ENSEMBLE_METHODS)
    assert [i for i, m in all_methods().items() if m.family == "ensemble"] == list(ENSEMBLE_METHODS)
