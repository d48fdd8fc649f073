"""What the shipped results cost the app: Explore's first view, in time and memory (issue 32, item 4).

    python bench/store_cost.py                       # the shipped precomputed/results
    python bench/store_cost.py --compare REV         # beside the results as commit REV shipped them

Each results folder is measured in a fresh process: importing the app's Explore tab, opening the
DuckDB store over the folder, then Explore's whole first render for BLiMP (the default model,
every view: tables, figures, intervals, wrong pairs), then a second render (warm). Prints seconds
and the process's peak RSS (MB) after each step, and the folder's size; beside each render's seconds,
the CPU seconds the process spent on it (all its threads), a steadier figure than the wall time on a
machine that other jobs share.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def peak_rss_mb() -> float:
    from accapp.models.release import resident_mb

    return resident_mb("VmHWM")


def measure() -> dict:
    """In this process: the steps' seconds and peak RSS (ACCAPP_RESULTS_DIR names the folder)."""
    out = {}
    t = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from accapp.service.host import get_state
    from accapp.ui import explore
    out["import_s"], out["import_rss_mb"] = round(time.perf_counter() - t, 2), round(peak_rss_mb())
    t = time.perf_counter()
    store = get_state().store()
    models = store.models("blimp")
    out["open_s"], out["open_rss_mb"] = round(time.perf_counter() - t, 2), round(peak_rss_mb())
    for step in ("first", "warm"):
        t, cpu = time.perf_counter(), time.process_time()
        res = explore._render("blimp", None, None, None, False, "all", None)
        out[f"{step}_render_s"], out[f"{step}_render_rss_mb"] = round(time.perf_counter() - t, 2), round(peak_rss_mb())
        out[f"{step}_render_cpu_s"] = round(time.process_time() - cpu, 2)
    out["models"] = models
    out["status"] = res["status"][:160]
    return out


def run_on(folder: Path) -> dict:
    env = {**os.environ, "ACCAPP_RESULTS_DIR": str(folder), "GRADIO_TEMP_DIR": tempfile.mkdtemp()}
    done = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, check=True)
    rep = json.loads(done.stdout.strip().splitlines()[-1])
    rep["folder_mb"] = round(sum(f.stat().st_size for f in folder.glob("*")) / 1e6, 1)
    return rep


def folder_at(rev: str) -> Path:
    """precomputed/results as commit rev shipped it, in a temporary folder."""
    dest = Path(tempfile.mkdtemp()) / "results"
    dest.mkdir()
    names = subprocess.run(["git", "ls-tree", "--name-only", rev, "precomputed/results/"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for name in names:
        data = subprocess.run(["git", "show", f"{rev}:{name}"], cwd=ROOT, check=True, capture_output=True).stdout
        (dest / Path(name).name).write_bytes(data)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", default=None, help="a commit whose shipped results to measure beside today's")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure()))
        return
    runs = {"shipped now": ROOT / "precomputed" / "results"}
    if args.compare:
        runs = {f"as of {args.compare}": folder_at(args.compare), **runs}
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    for name, folder in runs.items():
        rep = run_on(folder)
        print(f"{name}: {rep['folder_mb']} MB on disk; import {rep['import_s']} s ({rep['import_rss_mb']} MB); "
              f"store open {rep['open_s']} s; Explore's first render {rep['first_render_s']} s "
              f"({rep['first_render_cpu_s']} CPU s, peak RSS {rep['first_render_rss_mb']} MB), warm "
              f"{rep['warm_render_s']} s ({rep['warm_render_cpu_s']} CPU s, peak {rep['warm_render_rss_mb']} MB)")
        print(f"   status: {rep['status']}")


if __name__ == "__main__":
    main()
