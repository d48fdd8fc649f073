"""The whole-benchmark processes' shares, and a later lease's resume from what an earlier one did
(issue 32, item 4; docs/gpu.md).

    python scripts/gpu/resume_full.py --lists --benchmark blimp --procs 8
        # one line a process: its paradigms, comma-separated (device.sh full-start starts one process a line)
    python scripts/gpu/resume_full.py --from .gpu/resume/gemma3-270m__blimp.parquet --runs /tmp/runs \\
        --model gemma3-270m --benchmark blimp --procs 8

A lease ends before Gemma's whole BLiMP does. What it finished comes back consolidated (device.sh
finish: merge_full.py on the GPU machine); the next lease carries that file and, before its processes
start, this script splits it back into each process's own folder (RUNS/<model>-<benchmark>-K/), only
the units of that process's paradigms (accapp.runner.runner.restore_units). Each process then scores
only the pairs its units lack. Each process's manifest keeps the earlier run's start but not its
compute seconds: they are the earlier leases', and merge_full.py --previous adds them once.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from accapp.benchmarks import bench_name, load_benchmark  # noqa: E402
from accapp.files import safe_name, write_json_atomic  # noqa: E402
from accapp.runner.runner import restore_units  # noqa: E402


def shares(benchmark: str, procs: int) -> list[list[str]]:
    """Each process's paradigms: every procs-th of the benchmark's, sorted (the one home of the split)."""
    paradigms = sorted(load_benchmark(benchmark).paradigm.unique())
    return [paradigms[k::procs] for k in range(procs) if paradigms[k::procs]]


def process_folder(runs: Path, model: str, benchmark: str, k: int) -> Path:
    return Path(runs) / f"{safe_name(model)}-{safe_name(bench_name(benchmark))}-{k}"


def restore_shares(previous: Path, runs: Path, model: str, benchmark: str, procs: int) -> dict[int, int]:
    """Unit files restored into each process's folder, by process."""
    written = {}
    for k, paradigms in enumerate(shares(benchmark, procs)):
        folder = process_folder(runs, model, benchmark, k)
        written[k] = restore_units(previous, folder, paradigms)
        for manifest_path in folder.glob("*/*/manifest.json"):
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            manifest.pop("compute_seconds", None)  # the earlier leases': merge_full.py --previous counts them once
            manifest.pop("whole_benchmark", None)
            write_json_atomic(manifest, manifest_path)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--procs", type=int, required=True)
    ap.add_argument("--lists", action="store_true", help="print each process's paradigms, a line each")
    ap.add_argument("--from", dest="previous", help="the consolidated file an earlier lease brought back")
    ap.add_argument("--runs", default="/tmp/runs")
    ap.add_argument("--model")
    args = ap.parse_args()
    if args.lists:
        for paradigms in shares(args.benchmark, args.procs):
            print(",".join(paradigms))
        return
    if not (args.previous and args.model):
        ap.error("--from and --model, or --lists")
    written = restore_shares(Path(args.previous), Path(args.runs), args.model, args.benchmark, args.procs)
    print(f"restored {sum(written.values())} unit files into {len(written)} process folders from {args.previous}")


if __name__ == "__main__":
    main()
