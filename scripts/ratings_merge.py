"""Merge a `bench` run on part of a built-in rated set into its shipped results
(precomputed/ratings/<model>__<set>.parquet and its manifest).

The prompting methods cost tens of model passes per pair (5 templates each; CPU: SmolLM2-135M's
in-template LP family took 3.9 s a pair on one thread of the shared machine), so they ran on a
sample of the 725 LI pairs: the first pair of each of the 97 paradigms. This script adds those
rows beside the full-set methods (rows of the same pair, method, template and answer order are
replaced) and records in the manifest which methods cover which pairs (``pairs_by_method``,
``sample_by_method``), so the summary's "pairs" column and the docs say it.

  python -m accapp bench --model M --benchmark li_sample.csv --methods in_template_lp,... \\
      --threads 1 --out RUNS
  python scripts/ratings_merge.py --model M --set li --runs RUNS/M/li_sample --sample "first pair of each paradigm (97)"

Several runs of the same methods on parts of the set (the sample, then the rest) merge in one call:
``--runs RUNS/M/li_sample RUNS/M/li_rest --sample "all 725 pairs"``. The manifest's ``pairs_by_method``
counts each method's pairs in the merged file.
Then ship the summaries of the merged results: ``python scripts/ratings_summaries.py``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
KEY = ["pair_id", "method", "template", "variant"]


def merge(model: str, name: str, runs: list[Path], sample: str) -> Path:
    dest = ROOT / "precomputed" / "ratings" / f"{model}__{name}.parquet"
    manifest_path = dest.with_name(dest.name.replace(".parquet", ".manifest.json"))
    old = pd.read_parquet(dest)
    parts = [pd.concat([pd.read_parquet(p) for p in sorted((run / "units").glob("*/*/*.parquet"))], ignore_index=True)
             for run in runs]  # each run's rows, read once
    new = pd.concat(parts, ignore_index=True)
    new["benchmark"] = old["benchmark"].iloc[0]
    new = new[old.columns]
    for c in ("template", "variant"):
        new[c] = new[c].fillna("").astype(str)
    keep = old.merge(new[KEY].drop_duplicates(), on=KEY, how="left", indicator=True)
    out = pd.concat([old[(keep["_merge"] == "left_only").to_numpy()], new], ignore_index=True)
    out = out.astype(old.dtypes.to_dict())
    out.to_parquet(dest, index=False)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for folder, part in zip(runs, parts):
        run = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        for m in run["methods"]:
            if m not in manifest["methods"]:
                manifest["methods"].append(m)
            manifest["templates"][m] = run["templates"][m]
            manifest["template_sources"][m] = run["template_sources"][m]
            manifest.setdefault("pairs_by_method", {})[m] = int(out.loc[out["method"] == m, "pair_id"].nunique())
            manifest.setdefault("sample_by_method", {})[m] = sample
        manifest.setdefault("runs", []).append({k: run.get(k) for k in ("methods", "started", "finished", "compute_seconds",
                                                                          "versions", "in_template_scope", "dtype")}
                                               | {"pairs": int(part["pair_id"].nunique()), "sample": sample})
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--set", default="li")
    ap.add_argument("--runs", required=True, type=Path, nargs="+",
                    help="the bench runs' folders (units/ and manifest.json), one or more")
    ap.add_argument("--sample", required=True, help="which pairs the run covered, in words")
    args = ap.parse_args()
    print(merge(args.model, args.set, args.runs, args.sample))


if __name__ == "__main__":
    main()
