"""Convert the papers' published numbers into `precomputed/published/` (Parquet) for the store.

Reads `../shared/data/published/*.csv` and the BLiMP release `../shared/data/blimp/data/*.jsonl`
(paths relative to the project root; override with --shared). The app itself never reads
../shared: it reads only what this script writes.

Writes, one Parquet file per CSV with the same columns, values and units (percent or fraction,
as the CSV has them) and the `source` column kept:

  ide2025_accuracy, ide2025_ensembles, ide2025_length_bias, ide2025_ab_share, ide2025_findings,
  kauf2023_blimp, kauf2023_blimp_overall, blimp2020_models, blimp2020_human

and one more made from the BLiMP data files:

  blimp_paradigms: paradigm (UID), phenomenon (linguistics_term with s-selection folded into
  argument_structure: 12 phenomena), linguistics_term (as released), field, n_pairs,
  word_shuffling (every pair has the same bag of lower-cased word and punctuation tokens,
  Ide et al. 2025 §6), sv_attractor (none / relational_noun / relative_clause for the six
  subject-verb agreement paradigms, Ide et al. 2025 Fig. 5; empty otherwise), source.

Usage: python scripts/convert_published.py [--shared ../shared] [--out precomputed/published]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: import accapp from this checkout

# Column types of each published CSV (name -> pandas dtype); everything not listed is a string.
TYPES = {
    "ide2025_accuracy": {"value": "float64"},
    "ide2025_ensembles": {"value": "float64"},
    "ide2025_length_bias": {"point_biserial_r": "float64"},
    "ide2025_ab_share": {"percent_A": "float64"},
    "ide2025_findings": {"value": "float64"},
    "kauf2023_blimp": {"accuracy": "float64"},
    "kauf2023_blimp_overall": {"value": "float64"},
    "blimp2020_models": {"accuracy": "float64"},
    "blimp2020_human": {"human_accuracy": "float64", "accepted_of_5": "int32", "n_responses": "int32"},
}
ROWS = {
    "ide2025_accuracy": 252, "ide2025_ensembles": 72, "ide2025_length_bias": 6, "ide2025_ab_share": 12,
    "ide2025_findings": 10, "kauf2023_blimp": 1072, "kauf2023_blimp_overall": 221, "blimp2020_models": 268,
    "blimp2020_human": 67,
}

FOLD = {"s-selection": "argument_structure"}
BLIMP_SOURCE = "Warstadt et al. 2020, BLiMP data files (UID, linguistics_term, field); flags computed from the pairs"


def read_published(path: Path) -> pd.DataFrame:
    name = path.stem
    types = TYPES.get(name, {})
    df = pd.read_csv(path, dtype=types, keep_default_na=False,
                     na_values={c: [""] for c in types})
    for col in df.columns:
        if col not in types:
            df[col] = df[col].astype("string")
    if "significant_vs_lp" in df.columns:
        df["significant_vs_lp"] = df["significant_vs_lp"].map({"true": True, "false": False, "": pd.NA}).astype("boolean")
    if name in ROWS and len(df) != ROWS[name]:
        raise SystemExit(f"{path}: {len(df)} rows, expected {ROWS[name]}")
    if "source" not in df.columns or df["source"].isna().any() or (df["source"] == "").any():
        raise SystemExit(f"{path}: every row needs a source")
    return df


def blimp_paradigms(blimp_dir: Path) -> pd.DataFrame:
    """One row per BLiMP paradigm; the word-shuffling flag and attractor types come from
    accapp.analysis.paradigms and BLiMP's descriptor, so the shipped flags and the app's analyses agree."""
    from accapp.analysis.paradigms import attractors, word_shuffling

    SV_ATTRACTOR = attractors("blimp")

    rows, pairs = [], []
    for path in sorted(blimp_dir.glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            items = [json.loads(line) for line in fh if line.strip()]
        first = items[0]
        term = first["linguistics_term"]
        rows.append({"paradigm": first["UID"], "phenomenon": FOLD.get(term, term), "linguistics_term": term,
                     "field": first["field"], "n_pairs": len(items)})
        pairs += [{"paradigm": first["UID"], "good": r["sentence_good"], "bad": r["sentence_bad"]} for r in items]
    df = pd.DataFrame(rows)
    flags = word_shuffling(pd.DataFrame(pairs))
    df = df.merge(flags[["paradigm", "word_shuffling"]], on="paradigm", how="left")
    df["word_shuffling"] = df["word_shuffling"].astype(bool)
    df["sv_attractor"] = df.paradigm.map(SV_ATTRACTOR).fillna("")
    df["source"] = BLIMP_SOURCE
    df["n_pairs"] = df["n_pairs"].astype("int32")
    for col in ("paradigm", "phenomenon", "linguistics_term", "field", "sv_attractor", "source"):
        df[col] = df[col].astype("string")
    if len(df) != 67 or df.phenomenon.nunique() != 12:
        raise SystemExit(f"BLiMP: {len(df)} paradigms, {df.phenomenon.nunique()} phenomena; expected 67 and 12")
    missing = set(SV_ATTRACTOR) - set(df.paradigm)
    if missing:
        raise SystemExit(f"BLiMP: attractor paradigms not found: {sorted(missing)}")
    return df


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--out", type=Path, default=ROOT / "precomputed" / "published")
    args = ap.parse_args(argv)
    src = args.shared / "data" / "published"
    csvs = sorted(src.glob("*.csv"))
    if not csvs:
        print(f"no CSV files in {src}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for path in csvs:
        df = read_published(path)
        df.to_parquet(args.out / f"{path.stem}.parquet", index=False)
        print(f"{path.stem}: {len(df)} rows")
    par = blimp_paradigms(args.shared / "data" / "blimp" / "data")
    par.to_parquet(args.out / "blimp_paradigms.parquet", index=False)
    print(f"blimp_paradigms: {len(par)} paradigms, {int(par.word_shuffling.sum())} word-shuffling")
    return 0


if __name__ == "__main__":
    sys.exit(main())
