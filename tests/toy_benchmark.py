"""A toy benchmark file for the runner's tests: paradigms of minimal pairs ("The dog0 p1 barks." /
"... bark."), a CSV any `--benchmark` takes."""

from __future__ import annotations

from pathlib import Path


def write_toy_benchmark(path: Path, paradigms=("p1", "p2", "p3"), per_paradigm: int = 3, ids: bool = False) -> Path:
    """Write the CSV; with ids, a pair_id column that restarts in every paradigm, as BLiMP's does."""
    rows = ["good,bad,paradigm" + (",pair_id" if ids else "")]
    for para in paradigms:
        for i in range(per_paradigm):
            rows.append(f"The dog{i} {para} barks.,The dog{i} {para} bark.,{para}" + (f",{i}" if ids else ""))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path
