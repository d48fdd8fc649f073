"""Token-length bias (Ide et al. 2025 §6, Fig. 2, Table 4).

len_diff = |good| - |bad| in the model's tokens of the bare sentences (the runner's column).
Accuracy by difference is a mean over items (rows; for ab_prompting both orders), and the
point-biserial r is scipy.stats.pointbiserialr between ``correct`` and ``len_diff`` over the
same rows (for the ensembles ``correct`` is a share, so r is then the Pearson r that
pointbiserialr computes anyway).
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd
from scipy import stats

from accapp.analysis.accuracy import BASE_CTES, base_params, correlation
from accapp.errors import UserError
from accapp.store import Store, template_sort_key


def accuracy_by_length(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                       template: str | None = "best", clip: int | None = None) -> pd.DataFrame:
    """Accuracy (%) by token-length difference, one row per method x template x difference.

    ``clip``: differences beyond +-clip are pooled into the end bins (labelled "<=-k" and
    ">=k"); None keeps every integer difference. Columns: model, benchmark, method, template,
    len_diff (the bin, clipped value), label, n (rows), pairs, accuracy.
    """
    if clip is not None:
        clip = int(clip)
        if clip < 0:
            raise UserError("clip must be >= 0")
    params = base_params(store, model, benchmark, methods, template)
    params["clip"] = clip
    sql = f"""WITH {BASE_CTES},
    binned AS (
        SELECT s.*, CASE WHEN $clip IS NULL THEN len_diff ELSE greatest(-$clip, least($clip, len_diff)) END AS bin
        FROM sel s JOIN chosen USING (method, template)
    )
    SELECT $model AS model, $benchmark AS benchmark, method, template, bin AS len_diff,
           CASE WHEN $clip IS NOT NULL AND $clip > 0 AND bin = $clip THEN '>=' || bin
                WHEN $clip IS NOT NULL AND $clip > 0 AND bin = -$clip THEN '<=' || bin
                ELSE CAST(bin AS VARCHAR) END AS label,
           count(*) AS n, count(DISTINCT (paradigm, pair_id)) AS pairs, 100 * avg(correct) AS accuracy
    FROM binned GROUP BY method, template, bin
    ORDER BY method, TRY_CAST(template AS INTEGER) NULLS LAST, template, bin"""
    return store.query(sql, params)


def length_bias(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                template: str | None = "best") -> pd.DataFrame:
    """Point-biserial r between prediction success and token-length difference (Ide Table 4).

    One row per method x template (``template`` as in accuracy: None all, an id, or "best").
    Columns: model, benchmark, method, template, n (rows), r, p_value. r is NaN when either
    variable is constant.
    """
    params = base_params(store, model, benchmark, methods, template)
    sql = f"""WITH {BASE_CTES}
    SELECT method, template, correct, len_diff FROM sel JOIN chosen USING (method, template)"""
    df = store.query(sql, params)
    out = []
    for (method, template), g in df.groupby(["method", "template"], sort=False):
        x = g.correct.to_numpy(dtype=float)
        y = g.len_diff.to_numpy(dtype=float)
        r, p = correlation(stats.pointbiserialr, x, y)
        out.append({"model": model, "benchmark": benchmark, "method": method, "template": template,
                    "n": len(x), "r": r, "p_value": p})
    out.sort(key=lambda d: (d["method"], template_sort_key(d["template"])))
    return pd.DataFrame(out, columns=["model", "benchmark", "method", "template", "n", "r", "p_value"])
