"""Refuse a commit that leaves out a shipped results file: every manifest in precomputed/results
must have its parquet file beside it (MODEL__BENCH.manifest.json -> MODEL__BENCH.parquet).

    python3 scripts/gpu/check_results_present.py            # the working tree: present, a parquet file, rows
    python3 scripts/gpu/check_results_present.py --staged   # what the commit being made holds (the index):
                                                            # as a git pre-commit hook (docs/gpu-runbook.md)

A GPU lease sets the parquet files aside (scripts/gpu/aside.py) so that a call's tree fits 64 MiB;
a commit made meanwhile must not record them as deleted. Exit 1, naming each file, when one is missing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = "precomputed/results"
MANIFEST = ".manifest.json"


def parquet_of(manifest: str) -> str:
    return manifest[: -len(MANIFEST)] + ".parquet"


def missing_beside(paths: list[str]) -> list[str]:
    """The parquet files that the manifests among `paths` name and `paths` lacks."""
    have = set(paths)
    return sorted(parquet_of(p) for p in paths if p.endswith(MANIFEST) and parquet_of(p) not in have)


def unreadable(path: Path) -> str | None:
    """Why a present results file is not a parquet file with rows (a Git LFS pointer, cut short, empty), or None."""
    with open(path, "rb") as f:
        head = f.read(4)
        f.seek(max(0, path.stat().st_size - 4))
        tail = f.read(4)
    if head != b"PAR1" or tail != b"PAR1":
        return "not a parquet file"
    import pyarrow.parquet as pq

    return None if pq.read_metadata(path).num_rows > 0 else "no rows"


def git(*args: str, root: Path) -> list[str]:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line]


def staged_problems(root: Path = ROOT) -> list[str]:
    """What the index (the commit being made) lacks: a results file whose manifest stays (removing both is
    a choice, not an accident)."""
    listed = git("ls-files", "--cached", "--", RESULTS, root=root)
    return [f"{p}: its manifest is committed without it" for p in missing_beside(listed)]


def tree_problems(root: Path = ROOT) -> list[str]:
    """What the working tree lacks, or holds broken."""
    paths = [p.relative_to(root).as_posix() for p in sorted((root / RESULTS).glob("*"))]
    out = [f"{p}: missing beside its manifest" for p in missing_beside(paths)]
    for p in paths:
        if p.endswith(".parquet") and (why := unreadable(root / p)):
            out.append(f"{p}: {why}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--staged", action="store_true", help="check the index (a pre-commit hook), not the working tree")
    ap.add_argument("--root", default=str(ROOT))
    args = ap.parse_args()
    root = Path(args.root)
    problems = staged_problems(root) if args.staged else tree_problems(root)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print("Shipped results are missing: put them back (python scripts/gpu/aside.py back) before committing.",
              file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
