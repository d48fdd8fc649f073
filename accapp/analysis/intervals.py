"""Bootstrap 95 % intervals for the accuracies the Explore tab shows (percentile bootstrap over pairs).

Every accuracy in this project is a mean over pairs (a paradigm, a phenomenon, a length bin) or
a mean over paradigms of such means (the overall accuracy, Ide et al. 2025 §5). Its interval
resamples the PAIRS with replacement, ``N_RESAMPLES`` (1,000, as Ide et al.'s footnote 11 and
:mod:`.bootstrap`) times from ``np.random.default_rng(SEED)``, and takes the 2.5th and 97.5th
percentiles of the resampled accuracy (the percentile method, as ``scipy.stats.bootstrap(...,
method="percentile")``). A mean over paradigms resamples within each paradigm (stratified: the
paradigms are fixed by the benchmark's design, the pairs within them are the sample).

A pair's value is its mean ``correct`` over its rows under the template view (1/0; a share for the
two A/B orders, the mean over templates, or the ensembles' draws), so it takes few distinct
values: the resampled sum is drawn as multinomial counts over those values, the same
distribution as drawing indices, at a cost that does not grow with the number of pairs.
Percent throughout.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from accapp.analysis.accuracy import BASE_CTES, NUMERIC_TEMPLATE, base_params
from accapp.store import Store

N_RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
CI_COLUMNS = ["ci_low", "ci_high"]
SOURCE = f"{LEVEL:.0%} percentile bootstrap over pairs, {N_RESAMPLES:,} resamples, seed {SEED}"
_MAX_LEVELS = 64  # above this many distinct pair values, draw indices instead of counts


# ------------------------------------------------------------------------------------ pure resampling
def resampled_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``n_resamples`` means of ``values`` resampled with replacement (same size), one per resample."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    levels, counts = np.unique(values, return_counts=True)
    if len(levels) <= _MAX_LEVELS:
        # Multinomial counts over the distinct values: the distribution of an index resample.
        draws = rng.multinomial(n, counts / n, size=n_resamples)
        return draws @ levels / n
    out = np.empty(n_resamples)
    chunk = max(1, 4_000_000 // n)  # bound the index matrix to ~32 MB
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        out[start:start + k] = values[rng.integers(0, n, size=(k, n))].mean(axis=1)
    return out


def percentile_interval(stats: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The (1 - level) / 2 and (1 + level) / 2 quantiles of a bootstrap distribution (linear, as numpy)."""
    lo, hi = np.percentile(stats, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def interval_of_mean(values, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                     level: float = LEVEL) -> tuple[float, float]:
    """95 % interval (percent) of the mean of per-pair values in [0, 1]; NaN with fewer than 2 pairs."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float("nan"), float("nan")
    lo, hi = percentile_interval(resampled_means(values, n_resamples, np.random.default_rng(seed)), level)
    return 100 * lo, 100 * hi


def interval_of_mean_of_means(groups: Iterable, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                              level: float = LEVEL) -> tuple[float, float]:
    """95 % interval (percent) of a mean over groups (paradigms) of per-pair means, resampled within
    each group; NaN when no group has 2 pairs. Groups of one pair enter with their fixed value."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not groups or all(len(g) < 2 for g in groups):
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    total = np.zeros(n_resamples)
    for g in groups:
        total += resampled_means(g, n_resamples, rng) if len(g) > 1 else g.mean()
    lo, hi = percentile_interval(total / len(groups), level)
    return 100 * lo, 100 * hi


# ------------------------------------------------------------------------------------ per-pair values
def per_pair(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None,
             view: str | None = "mean") -> pd.DataFrame:
    """One row per method x template x pair: method, template, paradigm, phenomenon, pair_id, len_diff,
    correct (mean over the pair's rows, in [0, 1]).

    ``view`` as the Explore tab's template choice: "best" = each method's best template (chosen on
    these same pairs); "mean" = methods with numbered templates averaged over them (template
    "mean"), others as they are; a template id = that template where a method has it; None = all.
    Rows come ordered: the numbered methods' first (by method, template, paradigm, pair_id), then the
    others' (the same order), so a resample draws the same pairs every time.
    """
    fixed = "best" if view == "best" else None
    params = base_params(store, model, benchmark, methods, fixed)
    params["view"] = None if view in (None, "best") else str(view)
    # The view is taken in SQL: the mean over templates leaves a quarter of the rows to fetch, and
    # fetching rows of text into pandas is most of what this query costs (1.3 of 1.6 s for all BLiMP).
    sql = f"""WITH {BASE_CTES},
    pairs AS (
        SELECT s.method, s.template, s.paradigm, any_value(s.phenomenon) AS phenomenon, s.pair_id,
               any_value(s.len_diff) AS len_diff, avg(s.correct) AS correct, {NUMERIC_TEMPLATE} AS numbered
        FROM sel s JOIN chosen USING (method, template)
        GROUP BY s.method, s.template, s.paradigm, s.pair_id
    ),
    templated AS (SELECT DISTINCT method FROM pairs WHERE numbered AND $view IS NOT NULL),
    viewed AS (
        SELECT 0 AS part, method, 'mean' AS template, paradigm, any_value(phenomenon) AS phenomenon, pair_id,
               any_value(len_diff) AS len_diff, avg(correct) AS correct
        FROM pairs WHERE numbered AND $view = 'mean' GROUP BY method, paradigm, pair_id
        UNION ALL
        SELECT 0, method, template, paradigm, phenomenon, pair_id, len_diff, correct
        FROM pairs WHERE numbered AND $view IS NOT NULL AND $view <> 'mean' AND template = $view
        UNION ALL
        SELECT 1, method, template, paradigm, phenomenon, pair_id, len_diff, correct
        FROM pairs WHERE method NOT IN (SELECT method FROM templated)
    )
    SELECT method, template, paradigm, phenomenon, pair_id, len_diff, correct FROM viewed
    ORDER BY part, method, template, paradigm, pair_id"""
    # One selection's views (overall, phenomenon, paradigm, length, ...) share these rows, whatever order
    # each asks for the methods in (the rows come in the same order anyway).
    return store.memo(("per_pair", model, benchmark, tuple(sorted(params["methods"])), view),
                      lambda: store.query(sql, params))


# ------------------------------------------------------------------------------------ intervals by grouping
def intervals(pairs: pd.DataFrame, by: list[str], stratify: str | None = None, **kw) -> pd.DataFrame:
    """method, template, *by, pairs, accuracy (%), ci_low, ci_high (%) of per-pair rows.

    Without ``stratify`` the accuracy is the mean over the group's pairs; with ``stratify``
    ("paradigm") it is the mean over those strata of their mean, resampled within each.
    """
    keys = ["method", "template", *by]
    cols = keys + ["pairs", "accuracy", *CI_COLUMNS]
    if pairs.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, g in pairs.groupby(keys, sort=False, dropna=False):
        if stratify:
            groups = [s.correct.to_numpy() for _, s in g.groupby(stratify, sort=True)]
            acc = 100 * float(np.mean([s.mean() for s in groups]))
            lo, hi = interval_of_mean_of_means(groups, **kw)
        else:
            acc = 100 * float(g.correct.mean())
            lo, hi = interval_of_mean(g.correct.to_numpy(), **kw)
        rows.append((*key, len(g), acc, lo, hi))
    return pd.DataFrame(rows, columns=cols)


def clip_length(pairs: pd.DataFrame, clip: int = 4) -> pd.DataFrame:
    """len_diff pooled beyond +-clip, as :func:`accapp.analysis.length.accuracy_by_length` bins them."""
    return pairs.assign(len_diff=pairs.len_diff.clip(-clip, clip))


def overall_intervals(store: Store, model: str, benchmark: str, methods, view: str | None = "mean") -> pd.DataFrame:
    """Overall accuracy (mean over paradigms) with its interval, per method x template."""
    return intervals(per_pair(store, model, benchmark, methods, view), [], stratify="paradigm")


def phenomenon_intervals(store: Store, model: str, benchmark: str, methods, view: str | None = "mean") -> pd.DataFrame:
    """Accuracy by phenomenon (mean over its pairs, as accuracy_by_phenomenon) with its interval."""
    return intervals(per_pair(store, model, benchmark, methods, view), ["phenomenon"])


def paradigm_intervals(store: Store, model: str, benchmark: str, methods, view: str | None = "mean") -> pd.DataFrame:
    """Accuracy per paradigm with its interval."""
    return intervals(per_pair(store, model, benchmark, methods, view), ["paradigm"])


def length_intervals(store: Store, model: str, benchmark: str, methods, view: str | None = "mean",
                     clip: int = 4) -> pd.DataFrame:
    """Accuracy by clipped token-length difference with its interval (resampling pairs in each bin)."""
    return intervals(clip_length(per_pair(store, model, benchmark, methods, view), clip), ["len_diff"])


def grouped_paradigm_intervals(store: Store, model: str, benchmark: str, methods, view: str | None,
                               groups: dict[str, str], key: str) -> pd.DataFrame:
    """Accuracy over groups of paradigms (``groups``: paradigm -> group name, in column ``key``), the mean
    over each group's paradigms as Ide Figs. 4-5, with its interval (stratified by paradigm)."""
    pairs = per_pair(store, model, benchmark, methods, view)
    pairs = pairs[pairs.paradigm.isin(groups)].assign(**{key: lambda d: d.paradigm.map(groups)})
    return intervals(pairs, [key], stratify="paradigm")
