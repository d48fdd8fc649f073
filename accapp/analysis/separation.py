"""Hu et al. 2025: separation of grammatical and ungrammatical strings (§6.3) and the
within-pair correlation of their log-probabilities (§4).

Separation: all good and all bad sentences of the run are pooled (one string per pair side,
as many as there are pairs; repeated sentences are not merged), each keeps its per-sentence
score under the metric, and the ROC AUC (sklearn.metrics.roc_auc_score) is computed with
good = class 1. AUC 0.5 = no separation, 1 = perfect. The metrics are methods whose
score_good / score_bad are per-sentence scores: lp (log P), mean_lp, bayes_factor_uniform,
bayes_factor_unigram, slor, and pen_lp.

Its interval (separation_intervals): a percentile bootstrap stratified by class, the good strings and
the bad ones each resampled with replacement at their own number (as ``scipy.stats.bootstrap`` does
with two samples, method="percentile"), N_RESAMPLES times from a seeded numpy Generator. A benchmark of
single labelled sentences (CoLA) pools its sentences (label 1 = class 1) from the store's
``sentences`` view, every per-string method it holds.

Summaries shipped beside a run: a whole run's intervals are a bootstrap over every sentence it holds (about
17 s for SmolLM2's BLiMP on a 2-core CPU, docs/datasets.md), so write_summary stores them in
``<model>__<benchmark>.separation.json`` beside the results file, and separation_intervals reads them from
there while that file is unchanged (its SHA-256), the run holds the rows it held (the store's counts) and
the interval's settings are the same; otherwise it computes them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import roc_auc_score

from accapp.analysis.accuracy import correlation
from accapp.analysis.intervals import LEVEL, N_RESAMPLES, SEED, percentile_interval
from accapp.errors import UserError
from accapp.files import file_sha256, run_file, write_json_atomic
from accapp.store import Store

SEPARATION_METRICS = ("lp", "mean_lp", "pen_lp", "bayes_factor_uniform", "bayes_factor_unigram", "slor")
INTERVAL_COLUMNS = ["model", "benchmark", "metric", "strings", "n_good", "n_bad", "auc", "ci_low", "ci_high"]
INTERVAL_SOURCE = (f"{LEVEL:.0%} percentile bootstrap, good and bad strings resampled apart, {N_RESAMPLES:,} "
                   f"resamples, seed {SEED}")
SUMMARY_SUFFIX = ".separation.json"  # beside <model>__<benchmark>.parquet
_CELLS = 4_000_000  # bound on a resampling chunk's cells (resamples x (strings + distinct scores))


# ------------------------------------------------------------------------------------ pure maths
def auc(good, bad) -> float:
    """ROC AUC of good (class 1) against bad (class 0) scores, sklearn.metrics.roc_auc_score; NaN
    when a class is empty."""
    good, bad = np.asarray(good, dtype=float), np.asarray(bad, dtype=float)
    if not len(good) or not len(bad):
        return float("nan")
    y = np.concatenate([np.ones(len(good)), np.zeros(len(bad))])
    return float(roc_auc_score(y, np.concatenate([good, bad])))


def bad_below(bad_counts: np.ndarray) -> np.ndarray:
    """For counts of bad strings per distinct score (scores in increasing order, the last axis): how
    many bad strings score below each score, those at it counting one half. A good string's share of
    the bad ones it beats is this at its score over their number; the AUC is its mean over the good."""
    n = np.asarray(bad_counts)
    return np.cumsum(n, axis=-1) - 0.5 * n


def _resampled_counts(levels: np.ndarray, size: int, n_levels: int, rng: np.random.Generator) -> np.ndarray:
    """`size` resamples with replacement of strings given by their score's level: counts per level."""
    idx = rng.integers(0, len(levels), size=(size, len(levels)))
    flat = (np.arange(size)[:, None] * n_levels + levels[idx]).ravel()
    return np.bincount(flat, minlength=size * n_levels).reshape(size, n_levels).astype(np.int32)


def resampled_aucs(good, bad, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """AUCs of `n_resamples` stratified resamples: the bad and the good strings each drawn with
    replacement at their own number (in chunks of resamples: the bad strings' draws, then the good's)."""
    good, bad = np.asarray(good, dtype=float), np.asarray(bad, dtype=float)
    values, inverse = np.unique(np.concatenate([good, bad]), return_inverse=True)
    g, b = inverse[:len(good)], inverse[len(good):]
    rng = np.random.default_rng(seed)
    chunk = max(1, _CELLS // (len(good) + len(bad) + len(values)))
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        below = bad_below(_resampled_counts(b, k, len(values), rng))
        drawn = g[rng.integers(0, len(g), size=(k, len(g)))]
        out[start:start + k] = np.take_along_axis(below, drawn, axis=1).sum(axis=1) / (len(g) * len(b))
    return out


def auc_interval(good, bad, n_resamples: int = N_RESAMPLES, seed: int = SEED, level: float = LEVEL) -> tuple[float, float]:
    """The percentile bootstrap interval of the AUC (INTERVAL_SOURCE); NaN with fewer than 2 strings a class."""
    if len(good) < 2 or len(bad) < 2:
        return float("nan"), float("nan")
    return percentile_interval(resampled_aucs(good, bad, n_resamples, seed), level)
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


# ------------------------------------------------------------------------------------ pooled strings
def pooled_scores(store: Store, model: str, benchmark: str, metrics: Iterable[str] | str | None = None):
    """Yield (metric, good scores, bad scores) of every string of a run: a benchmark of single sentences
    by its labels (every method it holds, or `metrics`), a pair benchmark its good and its bad sentences
    (the per-string methods it holds, SEPARATION_METRICS)."""
    if store.has_sentences(model, benchmark):
        rows = store.sentence_rows(model, benchmark, store.sentence_methods(model, benchmark, metrics))
        rows = rows[np.isfinite(rows.score.to_numpy(dtype=float))]
        for metric, g in rows.groupby("method", sort=True):
            label = g.label.to_numpy()
            score = g.score.to_numpy(dtype=float)
            yield metric, score[label == 1], score[label == 0]
        return
    for metric, _, good, bad in _scores(store, model, benchmark, _metrics(store, model, benchmark, metrics), None):
        yield metric, good, bad


def separation_intervals(store: Store, model: str, benchmark: str, metrics: Iterable[str] | str | None = None,
                         n_resamples: int = N_RESAMPLES, seed: int = SEED, level: float = LEVEL) -> pd.DataFrame:
    """Separation AUC of every string of a run pooled (Hu et al. 2025 §6.3), with its bootstrap interval
    (INTERVAL_SOURCE), one row per metric: INTERVAL_COLUMNS. Read from the run's shipped summary while it is
    current (read_summary), computed otherwise."""
    if (n_resamples, seed, level) == (N_RESAMPLES, SEED, LEVEL):
        shipped = read_summary(store, model, benchmark)
        if shipped is not None:
            if metrics is None:
                return shipped
            wanted = _pooled_metrics(store, model, benchmark, metrics)
            if set(wanted) <= set(shipped.metric):
                return shipped.set_index("metric").loc[sorted(wanted)].reset_index()[INTERVAL_COLUMNS]
    return intervals_of(pooled_scores(store, model, benchmark, metrics), model, benchmark, n_resamples, seed, level)


def _pooled_metrics(store: Store, model: str, benchmark: str, metrics) -> list[str]:
    """The metrics pooled_scores yields for `metrics` (checked as it checks them)."""
    if store.has_sentences(model, benchmark):
        return store.sentence_methods(model, benchmark, metrics)
    return _metrics(store, model, benchmark, metrics)


def intervals_of(scores, model: str, benchmark: str, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                 level: float = LEVEL) -> pd.DataFrame:
    """Separation AUC and its bootstrap interval (INTERVAL_SOURCE) of (metric, good scores, bad scores)
    triples, one row per metric: INTERVAL_COLUMNS. Scores that are not finite are left out."""
    out = []
    for metric, good, bad in scores:
        good, bad = np.asarray(good, dtype=float), np.asarray(bad, dtype=float)
        good, bad = good[np.isfinite(good)], bad[np.isfinite(bad)]
        lo, hi = auc_interval(good, bad, n_resamples, seed, level)
        out.append({"model": model, "benchmark": benchmark, "metric": metric, "strings": len(good) + len(bad),
                    "n_good": len(good), "n_bad": len(bad), "auc": auc(good, bad), "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(out, columns=INTERVAL_COLUMNS)


# ------------------------------------------------------------------------------------ summaries beside a run
def summary_path(results_file: Path) -> Path:
    """Where write_summary puts a results file's summary: <model>__<benchmark>.separation.json."""
    results_file = Path(results_file)
    return results_file.with_name(results_file.name.removesuffix(".parquet") + SUMMARY_SUFFIX)


def _run_rows(store: Store, model: str, benchmark: str) -> dict[str, int]:
    """Rows per per-string method of a run as the store sees it (from its cached catalogs)."""
    if store.has_sentences(model, benchmark):
        cat = store.sentence_catalog()
        cat = cat[(cat.model == model) & (cat.benchmark == benchmark)]
        return {m: int(n) for m, n in zip(cat.method, cat.sentences)}
    cat = store.catalog()
    cat = cat[(cat.model == model) & (cat.benchmark == benchmark) & cat.method.isin(SEPARATION_METRICS)]
    return {m: int(n) for m, n in cat.groupby("method").n_rows.sum().items()}


def _plain(value):
    """A JSON value that reads back as the same float64 (repr round-trips); NaN as null."""
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and value != value else value


def _settings() -> dict:
    return {"n_resamples": N_RESAMPLES, "seed": SEED, "level": LEVEL}


def write_summary(results_file: Path) -> Path | None:
    """Compute a consolidated results file's separation intervals (every per-string measure) and write them
    beside it (summary_path), atomically; None (and no file) when its run has no such measure."""
    results_file = Path(results_file).resolve()
    runs = pd.read_parquet(results_file, columns=["model", "benchmark"]).drop_duplicates()
    if len(runs) != 1:
        raise ValueError(f"{results_file.name} holds {len(runs)} runs (model, benchmark); a summary is of one")
    model, benchmark = runs.iloc[0]
    with Store(results_file.parent) as store:
        df = intervals_of(pooled_scores(store, model, benchmark), model, benchmark)
        rows = _run_rows(store, model, benchmark)
    path = summary_path(results_file)
    if df.empty:
        path.unlink(missing_ok=True)
        return None
    summary = {"about": "Separation AUC (Hu et al. 2025 §6.3) of every string of the run pooled, with its interval; "
                        "accapp/analysis/separation.py. Read while results_file is unchanged (sha256) and the run has "
                        "rows_by_method.",
               "model": model, "benchmark": benchmark, "results_file": results_file.name,
               "sha256": file_sha256(results_file), "rows_by_method": rows, "interval": INTERVAL_SOURCE, **_settings(),
               "rows": [{k: _plain(v) for k, v in r.items()} for r in df.to_dict("records")]}
    return write_json_atomic(summary, path)


def read_summary(store: Store, model: str, benchmark: str) -> pd.DataFrame | None:
    """The run's summary (write_summary) as INTERVAL_COLUMNS, or None when there is none or it is not current:
    its results file is not the one the store reads or has changed, the run's rows differ, or so do the
    interval's settings."""
    results_file = run_file(store.results_dir, model, benchmark)
    path = summary_path(results_file)
    if not path.is_file() or results_file not in set(store.result_files) | set(store.sentence_files):
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        current = (summary["model"] == model and summary["benchmark"] == benchmark
                   and all(summary[k] == v for k, v in _settings().items())
                   and summary["rows_by_method"] == _run_rows(store, model, benchmark)
                   and summary["sha256"] == file_sha256(results_file))
        if not current:
            return None
        return pd.DataFrame(summary["rows"], columns=INTERVAL_COLUMNS).astype(
            {"strings": int, "n_good": int, "n_bad": int, "auc": float, "ci_low": float, "ci_high": float})
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):  # a damaged summary: compute instead
        return None
