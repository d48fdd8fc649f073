"""An idle app's CPU: `python app.py` started on a free loopback port, left alone once its model is
preloaded, its process's CPU time read from /proc over a window. What an app nobody uses costs a
Space, and every process beside it (accapp/service/idle.py).

Prints, per tree, the idle CPU as a share of one core, and the seconds from start to the page
answering. --tree: the checkout whose app.py runs (another commit's worktree, side by side).

    python bench/idle_cpu.py --tree . --tree ../wt-base
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """user + system CPU of the process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def idle_share(tree: Path, settle: float, window: float) -> tuple[float, float]:
    port = free_port()
    env = {**os.environ, "PORT": str(port), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_ANALYTICS_ENABLED": "False",
           "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(tree)}
    start = time.monotonic()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(log.read().decode(errors="replace")[-2000:])
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=5):
                        break
                except OSError:
                    time.sleep(0.2)
            ready = time.monotonic() - start
            time.sleep(settle)  # the preloaded model's warm-up done
            before, t0 = cpu_seconds(proc.pid), time.monotonic()
            time.sleep(window)
            return (cpu_seconds(proc.pid) - before) / (time.monotonic() - t0), ready
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


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
