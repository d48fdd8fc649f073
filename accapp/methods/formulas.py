"""The judgment maths as pure functions: lists of numbers in, numbers out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

PEN_ALPHA = 0.8  # Lau et al. 2020; Ide et al. 2025 eq. 4


def lp(logprobs: Sequence[float]) -> float:
    return float(np.add.reduce(logprobs, dtype=np.float64))  # np.sum's own sum, without its wrapper's cost


def mean_lp(logprobs: Sequence[float]) -> float:
    return lp(logprobs) / len(logprobs)


def pen_lp(logprobs: Sequence[float], alpha: float = PEN_ALPHA) -> float:
    return lp(logprobs) / (((5 + len(logprobs)) / (5 + 1)) ** alpha)


def bayes_factor_uniform(logprobs: Sequence[float], vocab_size: int) -> float:
    """Hu et al. 2025 eq. 6: log p(s) + N log |V|."""
    return lp(logprobs) + len(logprobs) * math.log(vocab_size)


def bayes_factor_unigram(logprobs: Sequence[float], unigram_logprobs: Sequence[float]) -> float:
    """Hu et al. 2025 eq. 7: log p(s) - sum log p_uni(w_n)."""
    return lp(logprobs) - lp(unigram_logprobs)


def slor(logprobs: Sequence[float], unigram_logprobs: Sequence[float]) -> float:
    """Hu et al. 2025 eq. 8: mean over tokens of log p(w_n | s_<n) - log p_uni(w_n)."""
    return (lp(logprobs) - lp(unigram_logprobs)) / len(logprobs)


def two_way_logprob(lp_first: float, lp_second: float) -> float:
    """log of p1 / (p1 + p2), a softmax over the two answers (Ide et al. eq. 5), stable for any logits."""
    return float(lp_first - np.logaddexp(lp_first, lp_second))


def yes_probability(lp_yes: float, lp_no: float) -> float:
    """P(Yes | s) = p(Yes) / (p(Yes) + p(No))."""
    return math.exp(two_way_logprob(lp_yes, lp_no))


def raw_logit_ratio(logit_yes: float, logit_no: float) -> float:
    """Ide et al.'s released code: logit(Yes) / (logit(Yes) + logit(No)) of raw logits. Not a
    probability (negative logits make it negative or above 1); kept only to reproduce their numbers."""
    return float(logit_yes / (logit_yes + logit_no))


# The tie rule: two scores are a tie when they are closer than what batching alone can
# move them. That error follows from how a score is computed: the size of the terms it is a sum or a
# difference of ("terms rule", below), times a constant measured per method (the batching drift of
# the 500-pair alone-versus-batched test, tests/test_ties.py). Both are the method's descriptor's
# (methods/data/methods.json: terms, tie_rtol, drift); accapp/methods/ties.py joins them.
TERMS_RULES = {
    # rule: (what the score is made of, the terms' size from the score alone or None: the method says)
    "sum": "a sum of same-sign token log-probabilities (or it scaled by the length): |score|",
    "log_probability": "one log-probability (a log-softmax, or a mean of two): max(1, |score|)",
    "probability": "a probability (a two-way softmax of two log-probabilities): 1",
    "lp_plus_constant": "LP plus an exact length term N log|V|: |LP|",
    "lp_minus_unigram": "LP minus the unigram log-probability, two terms of tens of nats: |LP| + |unigram LP|",
    "lp_minus_unigram_per_token": "(LP minus the unigram log-probability) / N: (|LP| + |unigram LP|) / N",
    "share": "a share of votes, exact: 0 (strict comparison)",
}
SIZE_FROM_METHOD = ("lp_plus_constant", "lp_minus_unigram", "lp_minus_unigram_per_token")


def terms_size(rule: str, score: float, given: float | None = None) -> float:
    """The size of the terms a score is a sum or difference of, in the score's unit: from the score
    where the rule allows, else `given` (the method computes it: a Bayes factor or SLOR does not
    show its LP)."""
    if rule not in TERMS_RULES:
        raise ValueError(f"unknown terms rule {rule!r}")
    if given is not None:
        return abs(float(given))
    if rule == "sum":
        return abs(float(score))
    if rule == "log_probability":
        return max(1.0, abs(float(score)))
    if rule == "probability":
        return 1.0
    if rule == "share":
        return 0.0
    raise ValueError(f"the terms rule {rule!r} needs the terms' size from the method")


def tie_tolerance(rtol: float, rule: str, score_good: float, score_bad: float,
                  size_good: float | None = None, size_bad: float | None = None) -> float:
    """How close two scores must be to count as a tie (same units as the scores): the method's
    constant times the larger of the two sentences' terms' size."""
    return float(rtol) * max(terms_size(rule, score_good, size_good), terms_size(rule, score_bad, size_bad))


def verdict_within(score_good: float, score_bad: float, tolerance: float) -> str:
    """'good' when the good sentence scores higher by more than the tolerance, 'bad' when lower by
    more, else 'tie' (a tolerance of 0: the papers' strict comparison, a tie only when equal)."""
    if abs(float(score_good) - float(score_bad)) <= tolerance:
        return "tie"
    return "good" if score_good > score_bad else "bad"


def strict_verdict(score_good: float, score_bad: float) -> str:
    """The papers' rule (BLiMP, Ide et al. 2025, Kauf & Ivanova 2023): right when score_good > score_bad."""
    return verdict_within(score_good, score_bad, 0.0)


def majority(votes: Sequence[bool]) -> bool:
    """True when more than half the votes are True."""
    return sum(bool(v) for v in votes) * 2 > len(votes)


ENSEMBLE_SETTINGS = {
    # id: (how many Yes/No prob comp predictions, how many in-template LP predictions); Ide §6
    "ens_p_only": (5, 0),
    "ens_mix_p3": (3, 2),
    "ens_mix_l3": (2, 3),
    "ens_l_only": (0, 5),
}
ENSEMBLE_TRIALS = 10


def ensemble_draws(n_p: int, n_l: int, trials: int = ENSEMBLE_TRIALS, pool: int = 5, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    """Which templates each trial draws (without replacement); trial t uses seed + t.

    One draw per trial applies to every pair, so a trial is one ensemble classifier.
    """
    return [(list(p), list(l)) for p, l in _draws(n_p, n_l, trials, pool, seed)]


@lru_cache(maxsize=64)
def _draws(n_p: int, n_l: int, trials: int, pool: int, seed: int) -> tuple:
    """ensemble_draws, made once per setting (the same seeds draw the same templates for every pair)."""
    draws = []
    for t in range(trials):
        rng = np.random.default_rng(seed + t)
        p = sorted(int(i) for i in rng.choice(pool, size=n_p, replace=False))
        l = sorted(int(i) for i in rng.choice(pool, size=n_l, replace=False))
        draws.append((tuple(p), tuple(l)))
    return tuple(draws)


def ensemble_correct(p_votes: Sequence[bool], l_votes: Sequence[bool], n_p: int, n_l: int, trials: int = ENSEMBLE_TRIALS,
                     seed: int = 0) -> float:
    """Share of the seeded trials whose 5-vote majority picks the good sentence.

    p_votes / l_votes: per template (5 each), whether that template judged the pair right.
    Averaged over pairs this is the mean accuracy over trials that Ide et al. report.
    """
    hits = 0
    for p, l in _draws(n_p, n_l, trials, len(p_votes) or 5, seed):
        votes = [p_votes[i] for i in p] + [l_votes[i] for i in l]
        hits += majority(votes)
    return hits / trials
