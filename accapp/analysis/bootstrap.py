"""Paired bootstrap against LP (Ide et al. 2025 footnote 11; Koehn 2004).

For a method and the baseline (LP by default) each pair gets a correctness value: 1/0, or a
share where the method has several rows per pair (the two A/B orders; template "mean" =
the mean over the numbered templates; the ensembles' share of draws). The pairs both have
are resampled with replacement, as many as there are, ``n_resamples`` times (1,000) from a
seeded numpy Generator; p-value = share of resamples in which the method's accuracy is not
above the baseline's (difference <= 0). Accuracies here are means over pairs (the paper
resamples the 67,000 / 16,000 instances), in percent.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from accapp.analysis.accuracy import NUMERIC_TEMPLATE, best_template
from accapp.analysis.intervals import resampled_means
from accapp.errors import UserError
from accapp.store import Store

COLUMNS = ["model", "benchmark", "method", "template", "baseline", "baseline_template", "pairs", "accuracy",
           "baseline_accuracy", "difference", "p_value", "n_resamples", "seed"]


def per_pair_correct(store: Store, model: str, benchmark: str, method: str, template: str | None) -> pd.DataFrame:
    """paradigm, pair_id, correct (mean over the method's rows for the pair under ``template``:
    an id, "mean" = over the numbered templates, "best", or None = every row of the method)."""
    store.check(model, benchmark, [method])
    if template == "best":
        template = best_template(store, model, benchmark, method)
    if template not in (None, "mean"):
        store.check(model, benchmark, [method], template=template)
    sql = f"""SELECT paradigm, pair_id, avg(correct) AS correct FROM results
              WHERE model = $model AND benchmark = $benchmark AND method = $method
                AND ($template IS NULL OR ($template = 'mean' AND {NUMERIC_TEMPLATE}) OR template = $template)
              GROUP BY paradigm, pair_id ORDER BY paradigm, pair_id"""
    df = store.query(sql, {"model": model, "benchmark": benchmark, "method": method, "template": template})
    if df.empty:
        raise UserError(f"No rows for {method} with template {template!r} ({model}, {benchmark}).")
    return df


def _default_templates(store: Store, model: str, benchmark: str, method: str) -> list[str]:
    """["mean"] for a method with numbered templates; else each of its templates ("-", or
    Hu & Levy's "judgment" and "comparison", each its own test)."""
    templates = store.templates(model, benchmark, method)
    return ["mean"] if any(t.isdigit() for t in templates) else templates


def bootstrap_p(diff: np.ndarray, n_resamples: int = 1000, seed: int = 0) -> float:
    """Share of resamples (with replacement, size len(diff)) whose mean difference is <= 0. The
    resampling is the intervals' (one resampler for the project: :func:`.intervals.resampled_means`)."""
    diff = np.asarray(diff, dtype=float)
    if len(diff) == 0:
        raise UserError("No pairs to resample.")
    means = resampled_means(diff, n_resamples, np.random.default_rng(seed))
    return float(np.count_nonzero(means <= 1e-9)) / n_resamples  # tolerance for float sums of shares


def paired_bootstrap(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                     template: str | None = "default", baseline: str = "lp", baseline_template: str | None = None,
                     n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap of each method against the baseline, one row per method.

    ``template``: "default" = "mean" for methods with numbered templates (the Table 3 stars
    are on the means) and otherwise one row per template the method has ("-"; "judgment" and
    "comparison"); or an id / "best" / "mean" / None (all the method's rows) for every method.
    ``baseline_template`` None = all the baseline's rows (LP has one, "-"). Methods equal to
    the baseline are skipped. One row per method and template. Columns: COLUMNS (accuracies and difference in
    percent; p_value in [0, 1]).
    """
    methods = store.check(model, benchmark, methods)
    store.check(model, benchmark, [baseline])
    if n_resamples < 1:
        raise UserError("n_resamples must be >= 1")
    base = per_pair_correct(store, model, benchmark, baseline, baseline_template)
    base_templates = store.templates(model, benchmark, baseline)
    base_label = baseline_template if baseline_template is not None else (
        base_templates[0] if len(base_templates) == 1 else "all")
    out = []
    for method in methods:
        if method == baseline:
            continue
        chosen = _default_templates(store, model, benchmark, method) if template == "default" else [template]
        for t in chosen:
            if t == "best":
                t = best_template(store, model, benchmark, method)
            mine = per_pair_correct(store, model, benchmark, method, t)
            both = mine.merge(base, on=["paradigm", "pair_id"], suffixes=("", "_base"))
            diff = both.correct.to_numpy() - both.correct_base.to_numpy()
            out.append({
                "model": model, "benchmark": benchmark, "method": method, "template": t if t is not None else "all",
                "baseline": baseline, "baseline_template": base_label,
                "pairs": len(both), "accuracy": 100 * both.correct.mean(),
                "baseline_accuracy": 100 * both.correct_base.mean(), "difference": 100 * diff.mean(),
                "p_value": bootstrap_p(diff, n_resamples, seed), "n_resamples": n_resamples, "seed": seed,
            })
    return pd.DataFrame(out, columns=COLUMNS)
