"""Hu et al. 2025: separation of grammatical and ungrammatical strings (§6.3) and the
within-pair correlation of their log-probabilities (§4).

Separation: all good and all bad sentences of the run are pooled (one string per pair side,
as many as there are pairs; repeated sentences are not merged), each keeps its per-sentence
score under the metric, and the ROC AUC (sklearn.metrics.roc_auc_score) is computed with
good = class 1. AUC 0.5 = no separation, 1 = perfect. The metrics are methods whose
score_good / score_bad are per-sentence scores: lp (log P), mean_lp, bayes_factor_uniform,
bayes_factor_unigram, slor.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_auc_score

from accapp.analysis.accuracy import correlation
from accapp.errors import UserError
from accapp.store import Store

SEPARATION_METRICS = ("lp", "mean_lp", "bayes_factor_uniform", "bayes_factor_unigram", "slor")
GROUPINGS = (None, "paradigm", "phenomenon")


def _grouping(by: str | None) -> str | None:
    if by not in GROUPINGS:
        raise UserError(f"Unknown grouping {by!r}; one of overall (None), paradigm, phenomenon.")
    return by


def _scores(store: Store, model: str, benchmark: str, metrics: list[str], by: str | None):
    """Yield (metric, group, good scores, bad scores) per metric x group (numpy arrays, pairs in the same order)."""
    group_expr = {None: "'overall'", "paradigm": "paradigm", "phenomenon": "phenomenon"}[by]
    sql = f"""SELECT method, {group_expr} AS grp, score_good, score_bad FROM results
              WHERE model = $model AND benchmark = $benchmark AND list_contains($metrics, method)
                AND score_good IS NOT NULL AND score_bad IS NOT NULL
                AND isfinite(score_good) AND isfinite(score_bad)
              ORDER BY method, grp, paradigm, pair_id"""
    df = store.query(sql, {"model": model, "benchmark": benchmark, "metrics": metrics})
    for (method, grp), g in df.groupby(["method", "grp"], sort=True):
        yield method, grp, g.score_good.to_numpy(dtype=float), g.score_bad.to_numpy(dtype=float)


def _metrics(store: Store, model: str, benchmark: str, metrics: Iterable[str] | str | None) -> list[str]:
    present = store.check(model, benchmark)
    if metrics is None:
        return [m for m in SEPARATION_METRICS if m in present]
    metrics = store.check(model, benchmark, metrics)
    bad = [m for m in metrics if m not in SEPARATION_METRICS]
    if bad:
        raise UserError(f"{bad[0]!r} has no per-sentence score; separation metrics: {', '.join(SEPARATION_METRICS)}.")
    return metrics


def separation_auc(store: Store, model: str, benchmark: str, metrics: Iterable[str] | str | None = None,
                   by: str | None = None) -> pd.DataFrame:
    """ROC AUC of pooled good (class 1) vs bad (class 0) sentence scores, per metric (and group).

    ``by``: None (whole benchmark), "paradigm" or "phenomenon". Columns: model, benchmark,
    metric, group ("overall" or the paradigm / phenomenon), n_good, n_bad, auc.
    """
    by = _grouping(by)
    metrics = _metrics(store, model, benchmark, metrics)
    out = []
    for method, grp, good, bad in _scores(store, model, benchmark, metrics, by):
        y = np.concatenate([np.ones(len(good)), np.zeros(len(bad))])
        auc = float(roc_auc_score(y, np.concatenate([good, bad]))) if len(good) and len(bad) else float("nan")
        out.append({"model": model, "benchmark": benchmark, "metric": method, "group": grp,
                    "n_good": len(good), "n_bad": len(bad), "auc": auc})
    return pd.DataFrame(out, columns=["model", "benchmark", "metric", "group", "n_good", "n_bad", "auc"])


def pair_correlation(store: Store, model: str, benchmark: str, metric: str = "lp", by: str | None = None) -> pd.DataFrame:
    """Pearson r between the good and the bad sentence's score within pairs (Hu et al. §4, Fig. 2a;
    log-probabilities with metric "lp"), scipy.stats.pearsonr.

    Columns: model, benchmark, metric, group, pairs, r, p_value (NaN with < 3 pairs or a constant side).
    """
    by = _grouping(by)
    metrics = _metrics(store, model, benchmark, [metric])
    out = []
    for method, grp, x, y in _scores(store, model, benchmark, metrics, by):
        r, p = correlation(stats.pearsonr, x, y)
        out.append({"model": model, "benchmark": benchmark, "metric": method, "group": grp,
                    "pairs": len(x), "r": r, "p_value": p})
    return pd.DataFrame(out, columns=["model", "benchmark", "metric", "group", "pairs", "r", "p_value"])


def score_distributions(store: Store, model: str, benchmark: str, metrics: Iterable[str] | str | None = None) -> pd.DataFrame:
    """Long table of per-sentence scores for plotting the overlap (Hu et al. Fig. 4a):
    metric, paradigm, pair_id, label ("good"/"bad"), score."""
    metrics = _metrics(store, model, benchmark, metrics)
    sql = """SELECT method AS metric, paradigm, pair_id, 'good' AS label, score_good AS score FROM results
             WHERE model = $model AND benchmark = $benchmark AND list_contains($metrics, method)
             UNION ALL
             SELECT method, paradigm, pair_id, 'bad', score_bad FROM results
             WHERE model = $model AND benchmark = $benchmark AND list_contains($metrics, method)
             ORDER BY metric, label DESC, paradigm, pair_id"""
    return store.query(sql, {"model": model, "benchmark": benchmark, "metrics": metrics})
