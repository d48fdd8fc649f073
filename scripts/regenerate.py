"""Regenerate part of the shipped results after a change to some methods (issue 23, item 7).

    python scripts/regenerate.py --model smollm2-135m-instruct --benchmark blimp \
        --methods meta_question_simple,meta_instruct,meta_question_complex,slor,bayes_factor_unigram \
        --reason "issue 23: per-order comparison answers; case-aware unigrams"
    python scripts/regenerate.py --model gemma3-270m --benchmark blimp   # verdicts only

1. The shipped file precomputed/results/<model>__<benchmark>.parquet is split back into unit files
   in a scratch runs folder (accapp.runner.restore_units); the units of --methods are removed.
2. Those methods are scored again by the project's runner on the very pairs they had (the same
   seeded sample: per method, the pairs per paradigm the manifest records), resuming the rest.
3. Every row's verdict columns (correct, tie) are recomputed from its scores with the one tie
   rule (accapp.methods.formulas.verdict), the units consolidated, and the shipped file and its
   manifest replaced atomically; the manifest records what was regenerated, when and why.
4. Prints each method's accuracy (mean over paradigms, %) before and after, and how many
   verdicts changed: how much each method moved.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from accapp.engine import build_engine  # noqa: E402
from accapp.files import safe_name, write_json_atomic, write_parquet_atomic  # noqa: E402
from accapp.methods.formulas import TIE_EXPONENT, verdict  # noqa: E402
from accapp.runner.runner import consolidate, restore_units, run_benchmark  # noqa: E402
from accapp.schema import ENSEMBLE_METHODS  # noqa: E402

RESULTS = ROOT / "precomputed" / "results"


def accuracy(df: pd.DataFrame) -> pd.Series:
    """Per method, the mean over templates and paradigms of the share right (%), as Explore's default."""
    per = df.groupby(["method", "template", "paradigm"]).correct.mean()
    return (100 * per.groupby(["method", "template"]).mean().groupby("method").mean()).round(2)


def apply_tie_rule(df: pd.DataFrame) -> pd.DataFrame:
    """correct and tie from the scores with the one tie rule (ensembles keep their vote share)."""
    plain = ~df.method.isin(list(ENSEMBLE_METHODS))
    v = [verdict(g, b) for g, b in zip(df.score_good[plain], df.score_bad[plain])]
    df = df.copy()
    df.loc[plain, "correct"] = [1.0 if x == "good" else 0.0 for x in v]
    df.loc[plain, "tie"] = [x == "tie" for x in v]
    df.loc[~plain, "tie"] = False
    return df


def replace_scores(df: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The shipped rows with the scores of `rows` (same pairs, methods, templates, variants) in place."""
    keys = ["paradigm", "pair_id", "method", "template", "variant"]
    rows = rows[keys + ["score_good", "score_bad"]].astype({"pair_id": str, "variant": str, "template": str})
    merged = df.merge(rows, on=keys, how="left", suffixes=("", "_new"), indicator=True)
    hit = merged["_merge"] == "both"
    if hit.sum() != len(rows):
        raise SystemExit(f"{len(rows) - int(hit.sum())} rescored rows match no shipped row")
    for col in ("score_good", "score_bad"):
        merged.loc[hit, col] = merged.loc[hit, col + "_new"]
    return merged[df.columns]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--methods", default="", help="comma-separated method ids to score again (none: verdicts only)")
    ap.add_argument("--rows", default=None,
                    help="a Parquet of rescored rows (paradigm, pair_id, method, template, variant, score_good, "
                         "score_bad) to put in place of the shipped scores, e.g. bench/unigram_case.py's output")
    ap.add_argument("--reason", default="issue 23")
    ap.add_argument("--runs", default=None, help="scratch runs folder (default: a temporary one; kept when given)")
    args = ap.parse_args()
    name = f"{safe_name(args.model)}__{safe_name(args.benchmark)}"
    shipped, manifest_path = RESULTS / f"{name}.parquet", RESULTS / f"{name}.manifest.json"
    before = pd.read_parquet(shipped)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    methods = [m for m in args.methods.split(",") if m]
    runs = Path(args.runs) if args.runs else Path(tempfile.mkdtemp(prefix="accapp-regen-"))
    try:
        if methods:
            restore_units(shipped, runs)
            units = runs / safe_name(args.model) / safe_name(args.benchmark) / "units"
            for method_dir in units.glob("*/*"):
                if method_dir.name in methods:
                    shutil.rmtree(method_dir)
            engine = build_engine(args.model)
            sizes: dict[int, list[str]] = {}
            for m in methods:
                sizes.setdefault(int(manifest["per_paradigm_by_method"][m]), []).append(m)
            for n, group in sorted(sizes.items()):
                print(f"scoring {', '.join(group)} on {n} pairs per paradigm", flush=True)
                summary = run_benchmark(engine, args.benchmark, group, runs, n, manifest.get("seed", 0))
                if summary["units_failed"] or summary["pairs_failed"]:
                    raise SystemExit(f"failed units or pairs: {summary}")
            scratch = runs / "_consolidated"
            consolidate(runs, scratch, args.model, manifest["benchmark"])
            after = pd.read_parquet(scratch / f"{name}.parquet")
            new_manifest = json.loads((scratch / f"{name}.manifest.json").read_text(encoding="utf-8"))
            manifest.update({k: new_manifest[k] for k in ("pairs_by_method", "per_paradigm_by_method", "methods")})
            manifest["templates"] = {**manifest.get("templates", {}), **new_manifest.get("templates", {})}
        else:
            after = before
        if args.rows:
            after = replace_scores(after, pd.read_parquet(args.rows))
            methods = methods + sorted(pd.read_parquet(args.rows).method.unique())
        after = apply_tie_rule(after)
        old_keys = set(map(tuple, before[["paradigm", "pair_id", "method"]].drop_duplicates().to_numpy()))
        new_keys = set(map(tuple, after[["paradigm", "pair_id", "method"]].drop_duplicates().to_numpy()))
        if old_keys != new_keys:
            raise SystemExit(f"the pairs changed: {len(old_keys ^ new_keys)} (paradigm, pair, method) differ")
        today = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        manifest.setdefault("regenerated", []).append({"date": today, "methods": methods or "verdicts only",
                                                       "reason": args.reason})
        # a pending entry is settled once every method it names has been scored again
        pending = [p for p in manifest.get("pending", []) if not set(p["methods"]) <= set(methods)]
        manifest.pop("pending", None)
        if pending:
            manifest["pending"] = pending
        manifest["convention"] = manifest.get("convention", "project")
        manifest["tie_rule"] = f"scores within 2^{TIE_EXPONENT} x max(1, |score|) are a tie (accapp/methods/formulas.py)"
        write_parquet_atomic(after, shipped, compression="zstd")
        write_json_atomic(manifest, manifest_path)
    finally:
        if not args.runs:
            shutil.rmtree(runs, ignore_errors=True)
    keys = ["paradigm", "pair_id", "method", "template", "variant"]
    joined = before.merge(after, on=keys, suffixes=("_before", "_after"))
    changed = (joined.correct_before != joined.correct_after).groupby(joined.method).sum()
    table = pd.DataFrame({"before %": accuracy(before), "after %": accuracy(after), "verdicts changed": changed,
                          "judgments": joined.groupby("method").size()})
    table["moved (points)"] = (table["after %"] - table["before %"]).round(2)
    print(f"{args.model} · {args.benchmark}")
    print(table.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
