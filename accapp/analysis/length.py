"""Token-length bias (Ide et al. 2025 §6, Fig. 2, Table 4).

len_diff = |good| - |bad| in the model's tokens of the bare sentences (the runner's column).
Accuracy by difference is a mean over items (rows; for ab_prompting both orders), and the
point-biserial r is scipy.stats.pointbiserialr between ``correct`` and ``len_diff`` over the
same rows (for the ensembles ``correct`` is a share, so r is then the Pearson r that
pointbiserialr computes anyway).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd
from scipy import stats

from accapp.analysis.accuracy import BASE_CTES, STRICT_CORRECT, base_params, correlation
from accapp.errors import UserError
from accapp.store import Store, template_sort_key

# How many rows of a run have each token-length difference and each value of correct, per method x
# template x variant, flagged rows left out: a table computed once a run (Store.derived). Both
# figures below are made of these counts, and a scan of a whole run's rows takes 0.4 s. They are Ide
# et al.'s figures (Table 4, Fig. 2), so correct is the papers' rule (accuracy.STRICT).
LENGTH_COUNTS = "length_counts"
LENGTH_COUNTS_COLUMNS = "method VARCHAR, template VARCHAR, variant VARCHAR, len_diff BIGINT, correct DOUBLE, n BIGINT"
LENGTH_COUNTS_SQL = f"""
    SELECT method, template, variant, len_diff, {STRICT_CORRECT}, count(*)
    FROM results WHERE model = $model AND benchmark = $benchmark AND coalesce(flag, '') = ''
    GROUP BY ALL"""

# The counts of the chosen methods and templates: method, template, variant, len_diff, correct, n.
_COUNTS_CTE = f""",
counts AS (
    SELECT c.method, c.template, c.variant, c.len_diff, c.correct, c.n
    FROM {LENGTH_COUNTS} c JOIN chosen USING (method, template)
    WHERE c.model = $model AND c.benchmark = $benchmark
)"""


def _length_params(store: Store, model: str, benchmark: str, methods, template) -> dict:
    params = base_params(store, model, benchmark, methods, template)
    store.derived(LENGTH_COUNTS, LENGTH_COUNTS_COLUMNS, LENGTH_COUNTS_SQL, model, benchmark, {"ens": params["ens"]})
    return params


def accuracy_by_length(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                       template: str | None = "best", clip: int | None = None) -> pd.DataFrame:
    """Accuracy (%) by token-length difference, one row per method x template x difference.

    ``clip``: differences beyond +-clip are pooled into the end bins (labelled "<=-k" and
    ">=k"); None keeps every integer difference. Columns: model, benchmark, method, template,
    len_diff (the bin, clipped value), label, n (rows), pairs, accuracy. A pair has one row per
    variant, so a bin's pairs are its largest per-variant row count (as per_paradigm counts them).
    """
    if clip is not None:
        clip = int(clip)
        if clip < 0:
            raise UserError("clip must be >= 0")
    params = _length_params(store, model, benchmark, methods, template)
    params["clip"] = clip
    sql = f"""WITH {BASE_CTES}{_COUNTS_CTE},
    binned AS (
        SELECT method, template, variant,
               CASE WHEN $clip IS NULL THEN len_diff ELSE greatest(-$clip, least($clip, len_diff)) END AS bin,
               sum(n) AS n, sum(n) FILTER (WHERE correct IS NOT NULL) AS n_valid, sum(n * correct) AS s
        FROM counts GROUP BY ALL
    )
    SELECT $model AS model, $benchmark AS benchmark, method, template, bin AS len_diff,
           CASE WHEN $clip IS NOT NULL AND $clip > 0 AND bin = $clip THEN '>=' || bin
                WHEN $clip IS NOT NULL AND $clip > 0 AND bin = -$clip THEN '<=' || bin
                ELSE CAST(bin AS VARCHAR) END AS label,
           sum(n)::BIGINT AS n, max(n)::BIGINT AS pairs,
           CASE WHEN sum(n_valid) > 0 THEN 100 * sum(s) / sum(n_valid) END AS accuracy
    FROM binned GROUP BY method, template, bin
    ORDER BY method, TRY_CAST(template AS INTEGER) NULLS LAST, template, bin"""
    return store.query(sql, params)


def length_bias(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                template: str | None = "best") -> pd.DataFrame:
    """Point-biserial r between prediction success and token-length difference (Ide Table 4).

    One row per method x template (``template`` as in accuracy: None all, an id, or "best").
    Columns: model, benchmark, method, template, n (rows), r, p_value. r is NaN when either
    variable is constant. The rows are rebuilt from their counts (each (correct, len_diff) value
    as often as it occurs), so scipy sees the same values as the rows themselves.
    """
    params = _length_params(store, model, benchmark, methods, template)
    sql = f"""WITH {BASE_CTES}{_COUNTS_CTE}
    SELECT method, template, correct, len_diff, sum(n)::BIGINT AS n FROM counts GROUP BY ALL"""
    df = store.query(sql, params)
    out = []
    for (method, template), g in df.groupby(["method", "template"], sort=False):
        times = g.n.to_numpy(dtype=np.int64)
        x = np.repeat(g.correct.to_numpy(dtype=float, na_value=np.nan), times)
        y = np.repeat(g.len_diff.to_numpy(dtype=float, na_value=np.nan), times)
        r, p = correlation(stats.pointbiserialr, x, y)
        out.append({"model": model, "benchmark": benchmark, "method": method, "template": template,
                    "n": len(x), "r": r, "p_value": p})
    out.sort(key=lambda d: (d["method"], template_sort_key(d["template"])))
    return pd.DataFrame(out, columns=["model", "benchmark", "method", "template", "n", "r", "p_value"])
