"""How many whole-benchmark processes a GPU takes: its free memory over what one process held at the
peak of an earlier whole run (the records in docs/gpu-runs/, scripts/gpu/record.py), at most one a
CPU core (each process runs one torch thread).

    python3 scripts/gpu/procs.py --machine /tmp/machine.json     # prints the number (device.sh full-start auto)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import per_process_mib, records, whole_runs  # noqa: E402 - the GPU scripts are not a package


def footprint_mib(recs) -> float:
    """The most GPU memory a whole-benchmark process held at its run's peak, over the recorded runs."""
    runs = whole_runs(recs)
    if not runs:
        raise SystemExit("no whole-benchmark run in docs/gpu-runs to size the processes from")
    return max(per_process_mib(run) for _, run in runs)


def procs_for(free_mib: float, footprint: float, cores: int) -> int:
    """Processes that fit the free memory at `footprint` MiB each, at least 1, at most one a core."""
    return max(1, min(cores, int(free_mib // footprint)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--machine", required=True, help="scripts/gpu/machine.py's JSON, made just before")
    args = ap.parse_args()
    machine = json.loads(Path(args.machine).read_text(encoding="utf-8"))
    footprint = footprint_mib(records())
    n = procs_for(machine["gpu_free_mib"], footprint, machine["cpu_count"])
    print(f"{machine.get('gpu')}: {machine['gpu_free_mib']:,} MiB free / {footprint:,.0f} MiB a process -> {n}",
          file=sys.stderr)
    print(n)


if __name__ == "__main__":
    main()
