"""Each method's tie rule: the tolerance its descriptor gives (terms rule x constant,
methods/data/methods.json; the maths in formulas.py) and the verdict it makes. The papers' strict
comparison is formulas.strict_verdict; this is the project's tie-aware verdict beside it.

A score whose terms' size the score alone does not show (a Bayes factor, SLOR) gets it from its
method at scoring time (MethodScore.size_good/size_bad); for stored results, `sizes_from_results`
recovers it from the same pair's LP and MeanLP rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from accapp.methods import formulas as F
from accapp.methods.descriptor import descriptors


def rule_of(method: str) -> tuple[str, float]:
    """(terms rule, constant) of a method; an id no descriptor knows (a method of an older results
    file) gets the strictest rule that still sees float noise: 'log_probability' at 2^-12."""
    d = descriptors().get(method)
    if d is None:
        return "log_probability", 2.0**-12
    return d.terms, d.tie_rtol


def tolerance(method: str, score_good: float, score_bad: float,
              size_good: float | None = None, size_bad: float | None = None) -> float:
    terms, rtol = rule_of(method)
    if terms in F.SIZE_FROM_METHOD and (size_good is None or size_bad is None):
        raise ValueError(f"{method}: its tie tolerance needs the size of its terms (its LP), which the score does not show")
    return F.tie_tolerance(rtol, terms, score_good, score_bad, size_good, size_bad)


def verdict(method: str, score_good: float, score_bad: float,
            size_good: float | None = None, size_bad: float | None = None) -> str:
    """The project's tie-aware verdict: 'good', 'bad' or 'tie' within the method's own tolerance."""
    return F.verdict_within(score_good, score_bad, tolerance(method, score_good, score_bad, size_good, size_bad))


def _pair_keys(df: pd.DataFrame) -> list[str]:
    return [c for c in ("model", "benchmark", "paradigm", "pair_id") if c in df.columns]


def _rules_per_row(methods: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's (terms rule, constant), looked up once a method (a results file has millions of rows, a dozen methods)."""
    codes, uniques = pd.factorize(methods)
    rules = [rule_of(m) for m in uniques]
    return np.array([r[0] for r in rules], dtype=object)[codes], np.array([r[1] for r in rules], dtype=float)[codes]


def sizes_from_results(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's terms' size for good and bad (NaN where the score alone gives it): for the methods
    whose score hides its LP, from the same pair's LP row (and MeanLP for the token count):
    bayes_factor_uniform: |LP|; bayes_factor_unigram: |LP| + |LP - BF|; SLOR: N = LP / MeanLP and
    (|LP| + |LP - N x SLOR|) / N. A row whose pair has no LP row raises ValueError."""
    return _sizes(df, _rules_per_row(df.method)[0])


def _sizes(df: pd.DataFrame, terms_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = _pair_keys(df)
    good, bad = np.full(len(df), np.nan), np.full(len(df), np.nan)
    need = np.isin(terms_of, list(F.SIZE_FROM_METHOD))
    if not need.any():
        return good, bad
    lp = df[df.method == "lp"].set_index(keys)[["score_good", "score_bad"]]
    mean = df[df.method == "mean_lp"].set_index(keys)[["score_good", "score_bad"]]
    rows = df[need]
    at = pd.MultiIndex.from_frame(rows[keys]) if len(keys) > 1 else pd.Index(rows[keys[0]])
    if not at.isin(lp.index).all():
        raise ValueError("a Bayes factor or SLOR row has no LP row for its pair: its tie tolerance cannot be found")
    terms = terms_of[need]
    per_token = terms == "lp_minus_unigram_per_token"
    for side, out in (("score_good", good), ("score_bad", bad)):
        lps = lp[side].reindex(at).to_numpy(float)
        score = rows[side].to_numpy(float)
        size = np.where(terms == "lp_plus_constant", np.abs(lps), np.abs(lps) + np.abs(lps - score))
        if per_token.any():
            n = lps / mean[side].reindex(at).to_numpy(float)
            size = np.where(per_token, (np.abs(lps) + np.abs(lps - n * score)) / n, size)
        out[need] = size
    return good, bad


def verdicts_of_results(df: pd.DataFrame) -> list[str]:
    """The tie-aware verdict of every row of a results frame (method, score_good, score_bad, ...):
    verdict() over the rows, in numpy (the same terms' sizes and comparisons)."""
    good, bad = df.score_good.to_numpy(float), df.score_bad.to_numpy(float)
    tol = tolerances_of_results(df)
    return np.where(np.abs(good - bad) <= tol, "tie", np.where(good > bad, "good", "bad")).tolist()


def tolerances_of_results(df: pd.DataFrame) -> np.ndarray:
    """Each row's tie tolerance, tolerance() over the rows of a results frame, in numpy."""
    terms, rtol = _rules_per_row(df.method)
    sg, sb = _sizes(df, terms)
    good, bad = df.score_good.to_numpy(float), df.score_bad.to_numpy(float)

    def size(score, given):
        out = np.abs(score)
        out = np.where(terms == "log_probability", np.maximum(1.0, out), out)
        out = np.where(terms == "probability", 1.0, out)
        out = np.where(terms == "share", 0.0, out)
        return np.where(np.isnan(given), out, np.abs(given))

    return rtol * np.maximum(size(good, sg), size(bad, sb))
