"""Ship the separation summaries of the consolidated results (precomputed/results/<model>__<benchmark>
.separation.json), so that Explore's Separation and Across datasets views and `accapp report` read a run's
separation AUC and its bootstrap interval instead of resampling every sentence it holds (17 s for
SmolLM2's whole BLiMP on this 2-core machine) for their first visitor.

A summary names the SHA-256 of the file it was made from and the run's rows per measure; the store's
readers use it only while both still hold (accapp.analysis.separation.read_summary), and compute otherwise.
`accapp bench --consolidate-to` and `accapp consolidate` write the summary themselves; run this after any
other change to a results file (by default, only the summaries that are missing or not current):

  python scripts/separation_summaries.py           # those missing or out of date
  python scripts/separation_summaries.py --all     # every one again
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accapp.analysis.separation import read_summary, write_summary  # noqa: E402 - this checkout's package
from accapp.runner.runner import consolidated_path  # noqa: E402
from accapp.store import Store  # noqa: E402
from accapp.store.store import DEFAULT_RESULTS_DIR  # noqa: E402


def stale(folder: Path) -> list[Path]:
    """The results files in `folder` whose summary is missing or not current."""
    with Store(folder) as store:
        runs = store.catalog()[["model", "benchmark"]].drop_duplicates().itertuples(index=False)
        sentence_runs = store.sentence_catalog()[["model", "benchmark"]].drop_duplicates().itertuples(index=False)
        out = []
        for model, bench in [*runs, *sentence_runs]:
            if read_summary(store, model, bench) is None:
                out.append(consolidated_path(folder, model, bench))
    return [p for p in out if p.is_file()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(DEFAULT_RESULTS_DIR), help="the folder of consolidated results")
    ap.add_argument("--all", action="store_true", help="write every summary again, current or not")
    args = ap.parse_args()
    folder = Path(args.results).resolve()
    files = sorted(p for p in folder.glob("*.parquet") if not p.name.startswith(".")) if args.all else stale(folder)
    for path in files:
        written = write_summary(path)
        print(f"{path.name}: {written.name if written else 'no per-string measure, no summary'}", flush=True)
    if not files:
        print("every summary is current")


if __name__ == "__main__":
    main()
