"""Regenerate part of the shipped results after a change to some methods (issue 23, item 7).

    python scripts/regenerate.py --model smollm2-135m-instruct --benchmark blimp \
        --methods meta_question_simple,meta_instruct,meta_question_complex,slor,bayes_factor_unigram \
        --reason "issue 23: per-order comparison answers; case-aware unigrams"
    python scripts/regenerate.py --model gemma3-270m --benchmark blimp   # verdicts only

1. The shipped file precomputed/results/<model>__<benchmark>.parquet is split back into unit files
   in a scratch runs folder (accapp.runner.restore_units); the units of --methods are removed.
2. Those methods are scored again by the project's runner on the very pairs they had (the same
   seeded sample: per method, the pairs per paradigm the manifest records), resuming the rest.
3. Every row's verdict columns (correct, tie) are recomputed from its scores with its method's
   tie rule (accapp.methods.ties: the tolerance from the size of its terms; a Bayes factor's or
   SLOR's from the same pair's LP and MeanLP rows), from the scores as stored (float32: a verdict
   within float32's rounding of its tolerance may come out the other way, as it may with the
   block size the scores were made in: accapp.runner.runner.STORED_FLOAT32), its flag set ("identical": the pair's two
   sentences are the same after normalisation, left out of accuracy), the units consolidated, and
   the shipped file and its manifest replaced atomically; the manifest records what was
   regenerated, when and why.
4. Prints each method's accuracy (mean over paradigms, %, flagged pairs left out) before and
   after, the papers' strict rule's beside them, and how many verdicts changed: how much each
   method moved.
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

from accapp.analysis.separation import write_summary  # noqa: E402
from accapp.engine import build_engine  # noqa: E402
from accapp.files import run_file, safe_name, write_json_atomic  # noqa: E402
from accapp.methods.ties import verdicts_of_results  # noqa: E402
from accapp.runner.runner import STORED_SCORES, consolidate, restore_units, run_benchmark, write_results_file  # noqa: E402
from accapp.schema import ENSEMBLE_METHODS, pair_flag  # noqa: E402

RESULTS = ROOT / "precomputed" / "results"


def accuracy(df: pd.DataFrame, column: str = "correct") -> pd.Series:
    """Per method, the mean over templates and paradigms of the share right (%), as Explore's default
    (pairs flagged "identical" left out, as accapp.analysis.accuracy leaves them)."""
    if "flag" in df:
        df = df[df["flag"].fillna("") == ""]
    per = df.groupby(["method", "template", "paradigm"])[column].mean()
    return (100 * per.groupby(["method", "template"]).mean().groupby("method").mean()).round(2)


def apply_tie_rule(df: pd.DataFrame) -> pd.DataFrame:
    """correct and tie from the scores with each method's tie rule (ensembles keep their vote
    share), and the flag of every row ("identical" where the pair's sentences are the same)."""
    plain = ~df.method.isin(list(ENSEMBLE_METHODS))
    v = verdicts_of_results(df[plain])
    df = df.copy()
    df.loc[plain, "correct"] = [1.0 if x == "good" else 0.0 for x in v]
    df.loc[plain, "tie"] = [x == "tie" for x in v]
    df.loc[~plain, "tie"] = False
    df["flag"] = [pair_flag(g, b) for g, b in zip(df.good, df.bad)]
    return df


def rerule_ensembles(df: pd.DataFrame) -> pd.DataFrame:
    """The ensembles' rows again from the same pair's Yes/No prob comp and in-template LP rows, each
    vote a strict prediction (score_good > score_bad, as Ide et al. count it; methods/ensembles.py)."""
    from accapp.methods.formulas import ENSEMBLE_SETTINGS, ensemble_correct

    ens = df.method.isin(list(ENSEMBLE_METHODS))
    if not ens.any():
        return df
    keys = ["paradigm", "pair_id"]
    votes = {}
    for method in ("yes_no_prob_comp", "in_template_lp"):
        part = df[df.method == method].assign(right=lambda d: d.score_good > d.score_bad,
                                              t=lambda d: d.template.astype(int)).sort_values("t")
        votes[method] = part.groupby(keys, sort=False).right.apply(list)
    df = df.copy()
    at = df.index[ens]
    p = votes["yes_no_prob_comp"].reindex(pd.MultiIndex.from_frame(df.loc[at, keys]))
    l_ = votes["in_template_lp"].reindex(pd.MultiIndex.from_frame(df.loc[at, keys]))
    if p.isna().any() or l_.isna().any():
        raise SystemExit("an ensemble row has no Yes/No or in-template LP rows for its pair")
    won = [ensemble_correct(pv, lv, *ENSEMBLE_SETTINGS[m]) for m, pv, lv in zip(df.loc[at, "method"], p, l_)]
    df.loc[at, "score_good"] = won
    df.loc[at, "score_bad"] = [1.0 - w for w in won]
    df.loc[at, "correct"] = won
    df.loc[at, "prediction"] = [f"P votes {sum(pv)}/5, L votes {sum(lv)}/5" for pv, lv in zip(p, l_)]
    return df


def strict_accuracy(df: pd.DataFrame) -> pd.Series:
    """accuracy() by the papers' rule: right when score_good > score_bad (ensembles: their share)."""
    plain = ~df.method.isin(list(ENSEMBLE_METHODS))
    strict = (df.score_good > df.score_bad).astype(float).where(plain, df.correct)
    return accuracy(df.assign(strict=strict), "strict")


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
    shipped = run_file(RESULTS, args.model, args.benchmark)
    manifest_path = run_file(RESULTS, args.model, args.benchmark, ".manifest.json")
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
            after = pd.read_parquet(run_file(scratch, args.model, args.benchmark))
            new_manifest = json.loads(run_file(scratch, args.model, args.benchmark, ".manifest.json").read_text(encoding="utf-8"))
            manifest.update({k: new_manifest[k] for k in ("pairs_by_method", "per_paradigm_by_method", "methods")})
            manifest["templates"] = {**manifest.get("templates", {}), **new_manifest.get("templates", {})}
        else:
            after = before
        if args.rows:
            after = replace_scores(after, pd.read_parquet(args.rows))
            methods = methods + sorted(pd.read_parquet(args.rows).method.unique())
        after = apply_tie_rule(rerule_ensembles(after))
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
        manifest["tie_rule"] = ("each method's: scores within its tie_rtol x the size of its terms are a tie "
                                "(accapp/methods/data/methods.json, accapp/methods/ties.py, docs/ties.md)")
        manifest["stored_scores"] = STORED_SCORES
        write_results_file(after, shipped)
        write_json_atomic(manifest, manifest_path)
        write_summary(shipped)  # the separation intervals beside it, of the new scores
    finally:
        if not args.runs:
            shutil.rmtree(runs, ignore_errors=True)
    keys = ["paradigm", "pair_id", "method", "template", "variant"]
    joined = before.merge(after, on=keys, suffixes=("_before", "_after"))
    changed = (joined.correct_before != joined.correct_after).groupby(joined.method).sum()
    table = pd.DataFrame({"before %": accuracy(before), "after %": accuracy(after), "strict %": strict_accuracy(after),
                          "verdicts changed": changed, "judgments": joined.groupby("method").size()})
    table["moved (points)"] = (table["after %"] - table["before %"]).round(2)
    flagged = int((after["flag"] != "").groupby([after.paradigm, after.pair_id]).any().sum())
    print(f"pairs flagged identical (left out of every accuracy): {flagged}")
    print(f"{args.model} · {args.benchmark}")
    print(table.to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
