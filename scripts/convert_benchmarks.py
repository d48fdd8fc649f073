"""Convert BLiMP and CLiMP from ../shared/data into the compact files the app ships.

A one-off conversion (reads ../shared, which the app never does):
  python scripts/convert_benchmarks.py
Writes assets/benchmarks/{blimp,climp}.parquet with columns
benchmark, paradigm, phenomenon, pair_id, good, bad.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "assets" / "benchmarks"

# BLiMP's two s-selection paradigms belong to argument structure (12 phenomena).
FOLD = {"s-selection": "argument_structure"}


def blimp() -> pd.DataFrame:
    rows = []
    for path in sorted(glob.glob(str(SHARED / "blimp" / "data" / "*.jsonl"))):
        for line in open(path, encoding="utf-8"):
            d = json.loads(line)
            rows.append({
                "benchmark": "blimp",
                "paradigm": d["UID"],
                "phenomenon": FOLD.get(d["linguistics_term"], d["linguistics_term"]),
                "pair_id": str(d["pairID"]),
                "good": d["sentence_good"],
                "bad": d["sentence_bad"],
            })
    return pd.DataFrame(rows)


def climp() -> pd.DataFrame:
    """CLiMP sentences carry no final punctuation; like Ide et al.'s code we append '。'."""
    rows = []
    for path in sorted(glob.glob(str(SHARED / "climp" / "*.csv"))):
        name = Path(path).name
        if name == "ba_construction_1000.csv":
            # No header, one sentence a line (CRLF), alternating good (把) and bad (被).
            lines = [l for l in Path(path).read_text(encoding="utf-8").splitlines() if l.strip()]
            pairs = [(lines[i], lines[i + 1], "ba_construction", "ba_construction") for i in range(0, len(lines), 2)]
        else:
            df = pd.read_csv(path, dtype=str)
            df.columns = ["row", "phenomenon", "paradigm", "sentence", "label"]
            assert (df["label"].iloc[::2] == "1").all() and (df["label"].iloc[1::2] == "0").all(), name
            good, bad = df.iloc[::2].reset_index(drop=True), df.iloc[1::2].reset_index(drop=True)
            pairs = list(zip(good["sentence"], bad["sentence"], good["paradigm"], good["phenomenon"]))
        for i, (g, b, paradigm, phen) in enumerate(pairs):
            rows.append({"benchmark": "climp", "paradigm": paradigm, "phenomenon": phen, "pair_id": str(i),
                         "good": g.strip() + "。", "bad": b.strip() + "。"})
    return pd.DataFrame(rows)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, df in (("blimp", blimp()), ("climp", climp())):
        df.to_parquet(OUT / f"{name}.parquet", index=False, compression="zstd")
        print(name, len(df), df.paradigm.nunique(), "paradigms", df.phenomenon.nunique(), "phenomena")


if __name__ == "__main__":
    main()
