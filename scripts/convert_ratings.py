"""Convert published human acceptability ratings of minimal pairs into the files the app ships.

A one-off conversion (reads a downloaded copy of the source; the app never does):
  python scripts/convert_ratings.py --li PATH/linguistic_inquiry_data.csv
where the CSV is data/linguistic_inquiry_data.csv of github.com/lindiatjuatja/morcela (commit
a44fd7b6090b8305467ae731daa66abf2bcdf5b6): Sprouse, Schütze & Almeida (2013)'s Linguistic Inquiry
pairs with each sentence's mean z-scored rating (7-point Likert "LS", magnitude estimation "ME") and
the forced-choice share of the starred sentence ("FC"), as Tjuatja et al. (2025) distribute them.

Writes assets/ratings/li.parquet with columns pair_id, good, bad, rating_good, rating_bad (mean
within-participant z-scores of the Likert task), human_delta (rating_good - rating_bad),
rating_good_me, rating_bad_me, human_delta_me (the same from magnitude estimation), fc_good (share of
participants choosing the good sentence in the forced-choice task), mark (the bad sentence's published
mark: *, ??, ?*, ??(*)), paradigm (Sprouse et al.'s phenomenon id: volume.issue.author.example),
phenomenon ("starred" or "questionable" by that mark), edit_distance (Levenshtein distance between the
two strings in characters) and meaning_matched (edit distance below its 75th percentile, Hu et al.
2025 §5.1's filter for meaning-matched pairs).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "assets" / "ratings"
log = logging.getLogger("convert_ratings")


def levenshtein(a: str, b: str) -> int:
    """Edit distance in characters (insert, delete, substitute: 1 each)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def li(path: Path) -> pd.DataFrame:
    src = pd.read_csv(path, dtype={"Bad ID": str, "Good ID": str, "Bad Sentence Gold Judgment": str})
    # an ID reads volume.issue.author.example.(g|mark).token: the phenomenon is everything before the mark
    paradigm = src["Good ID"].str.rsplit(".", n=2).str[0]
    out = pd.DataFrame({
        "benchmark": "li",
        "paradigm": paradigm,
        "phenomenon": src["Bad Sentence Gold Judgment"].map(lambda m: "starred" if m == "*" else "questionable"),
        "pair_id": src["Good ID"],
        "good": src["Good Sentence"].str.strip(),
        "bad": src["Bad Sentence"].str.strip(),
        "rating_good": src["Good Sentence LS"].astype(float),
        "rating_bad": src["Bad Sentence LS"].astype(float),
        "rating_good_me": src["Good Sentence ME"].astype(float),
        "rating_bad_me": src["Bad Sentence ME"].astype(float),
        # FC Mean is the share choosing the bad sentence (its mean is 0.105 over the 725 pairs)
        "fc_good": 1.0 - src["Bad Sentence FC Mean"].astype(float),
        "mark": src["Bad Sentence Gold Judgment"],
    })
    out["human_delta"] = out["rating_good"] - out["rating_bad"]
    out["human_delta_me"] = out["rating_good_me"] - out["rating_bad_me"]
    out["edit_distance"] = [levenshtein(g, b) for g, b in zip(out["good"], out["bad"])]
    out["meaning_matched"] = out["edit_distance"] < out["edit_distance"].quantile(0.75)
    assert out["pair_id"].is_unique and out[["good", "bad"]].notna().all().all()
    return out


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--li", type=Path, required=True, help="linguistic_inquiry_data.csv (github.com/lindiatjuatja/morcela)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    df = li(args.li)
    df.to_parquet(OUT / "li.parquet", index=False)
    log.info("li: %d pairs, %d phenomena (Sprouse et al.'s), %d meaning-matched -> %s", len(df), df["paradigm"].nunique(),
             int(df["meaning_matched"].sum()), OUT / "li.parquet")


if __name__ == "__main__":
    main()
