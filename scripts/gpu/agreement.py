"""Two runs' scores of the same pairs compared: per method, the rows, the largest absolute score
difference (nats for the LP family, the method's own unit elsewhere) and the verdicts that differ.
Used by agree.py on the GPU machine and by compare.py and record.py here; imports no torch."""

from __future__ import annotations

import pandas as pd

KEYS = ["pair", "method", "template", "variant"]


def compare(ref: pd.DataFrame, got: pd.DataFrame) -> pd.DataFrame:
    """Per method: rows compared, largest |score difference| (nats, or the method's unit), verdicts changed."""
    m = ref.merge(got, on=KEYS, suffixes=("_ref", ""), how="outer", indicator=True)
    missing = int((m["_merge"] != "both").sum())
    if missing:
        print(f"  !! {missing} rows present in only one of the two runs")
    m = m[m["_merge"] == "both"]
    m["diff"] = pd.concat([(m.score_good - m.score_good_ref).abs(), (m.score_bad - m.score_bad_ref).abs()], axis=1).max(axis=1)
    m["changed"] = m.verdict != m.verdict_ref
    return m.groupby("method").agg(rows=("diff", "size"), max_abs_diff=("diff", "max"), verdicts_changed=("changed", "sum"))


def summarize(ref: pd.DataFrame, got: pd.DataFrame) -> dict:
    """One setting against its reference, as the runs' JSON records keep it: the largest difference and
    the verdicts changed over every method, the share of the scores that are not a number, and per method."""
    table = compare(ref, got)
    scores = pd.concat([got.score_good, got.score_bad])
    return {"max_abs_diff": float(table.max_abs_diff.max()), "verdicts_changed": int(table.verdicts_changed.sum()),
            "rows": int(table.rows.sum()), "nan_share": float(scores.isna().mean()),
            "per_method": table.reset_index().to_dict(orient="records")}
