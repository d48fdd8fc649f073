"""An idle app's CPU: `python app.py` started on a free loopback port (bench/probe_latency.py's
`app_running`), left alone once its model is preloaded, its process's CPU time read from /proc over
a window. What an app nobody uses costs a Space, and every process beside it (accapp/service/idle.py).

Prints, per tree, the idle CPU as a share of one core, and the seconds from start to the page
answering. --tree: the checkout whose app.py runs (another commit's worktree, side by side).

    python bench/idle_cpu.py --tree . --tree ../wt-base
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_latency import ROOT, app_running  # noqa: E402  (same folder: one way to start the app)

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """user + system CPU of the process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def idle_share(tree: Path, settle: float, window: float) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp, \
            app_running(Path(tmp) / "app.log", preload=True, threads=1, tree=tree) as (proc, _, ready):
        time.sleep(settle)  # the preloaded model's warm-up done
        before, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(window)
        return (cpu_seconds(proc.pid) - before) / (time.monotonic() - t0), ready


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", help="a checkout whose app.py runs (repeatable; default: this one)")
    ap.add_argument("--settle", type=float, default=10.0, help="seconds left after the page answers")
    ap.add_argument("--window", type=float, default=20.0, help="seconds of idle CPU measured")
    args = ap.parse_args()
    for tree in [Path(t).resolve() for t in (args.tree or [str(ROOT)])]:
        share, ready = idle_share(tree, args.settle, args.window)
        print(f"{tree.name}: idle app {100 * share:.1f} % of a core over {args.window:.0f} s "
              f"(page answered after {ready:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
