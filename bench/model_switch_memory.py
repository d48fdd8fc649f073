"""Resident memory of the app while visitors switch models (unloading must give the memory back).

    python bench/model_switch_memory.py [--budget 1800MB] [--models smollm2-135m-instruct,gemma3-270m,...]
    python bench/model_switch_memory.py --switches 10     # ten round trips between the two embedded models

Starts `python app.py` on a loopback port (bench/probe_latency.py) with ACCAPP_MEMORY_BUDGET=BUDGET
and no warm-up (ACCAPP_PRELOAD=0), reads the server's resident memory once it answers (its base), then sends one
LP /probe per model in turn (a new pair each time, so that no cache answers it) through Gradio's HTTP
API (each a new visitor) and reads the server's resident memory after each. Prints one line per step;
the last line is JSON. Exit 1 when any step
is above the budget plus the base (the app when up, plus its results store's bounded cache,
accapp.store.store.STORE_MEMORY_MB, which the first probe opens), or when the memory at a return to the
first model drifts more than RETURN_DRIFT_MB above its first return (what each switch leaves behind).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from probe_latency import app_running, http_probe  # noqa: E402

from accapp.models.budget import parse_bytes  # noqa: E402
from accapp.service.host import IDLE_TRIM_S  # noqa: E402
from accapp.store.store import STORE_MEMORY_MB  # noqa: E402

SWITCHES = "smollm2-135m-instruct,gemma3-270m,smollm2-135m-instruct,gemma3-270m"
RETURN_DRIFT_MB = 50  # a return to the first model may hold at most this much more than its first return


def resident_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory (MB): VmRSS in all, RssAnon (the heap) or RssFile (mapped files: the weights)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for {pid}")


def mapped_weights(pid: int) -> dict[str, int]:
    """Weight files mapped into the process (MB each): a model unloaded must leave none behind."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[5].endswith((".safetensors", ".gguf", ".bin")):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out[parts[5]] = out.get(parts[5], 0) + (hi - lo) // 2**20
    return out


def run(budget: str, models: list[str]) -> dict:
    log = Path(tempfile.mkdtemp()) / "app.log"
    with app_running(log, preload=False, extra_env={"ACCAPP_MEMORY_BUDGET": budget}) as (proc, url, _):
        base = resident_mb(proc.pid)
        steps = []
        for k, model in enumerate(models):
            # a new pair each step: a repeated probe may answer from the app's cache without loading the model
            http_probe(url, f"The cats sleep in room {k}.", f"The cats sleeps in room {k}.", model, ["lp"])
            time.sleep(IDLE_TRIM_S + 1)  # read it settled: the host gives freed pages back once idle that long
            steps.append({"model": model, "rss_mb": round(resident_mb(proc.pid)),
                          "anon_mb": round(resident_mb(proc.pid, "RssAnon")), "file_mb": round(resident_mb(proc.pid, "RssFile")),
                          "mapped": mapped_weights(proc.pid)})
            print(f"after an LP probe on {model}: {steps[-1]['rss_mb']:,} MB resident (heap {steps[-1]['anon_mb']:,}, "
                  f"mapped files {steps[-1]['file_mb']:,}); weights mapped: {steps[-1]['mapped']}", flush=True)
    # The app's own base: what it held when up, and the results store's bounded cache (opened by the
    # first probe, for the benchmark context beside the verdicts).
    limit = parse_bytes(budget) / 2**20 + base + STORE_MEMORY_MB
    returns = [s["rss_mb"] for s in steps[1:] if s["model"] == models[0]]  # each return to the first model
    drift = max(returns) - returns[0] if returns else 0
    within_budget = all(s["rss_mb"] <= limit for s in steps)
    return {"budget_mb": round(parse_bytes(budget) / 2**20), "base_mb": round(base), "store_mb": STORE_MEMORY_MB,
            "limit_mb": round(limit), "returns_rss_mb": returns, "return_drift_mb": drift, "steps": steps,
            "within_budget": within_budget, "within": within_budget and drift <= RETURN_DRIFT_MB}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", default="1800MB")
    ap.add_argument("--models", default=SWITCHES)
    ap.add_argument("--switches", type=int, default=0, help="N round trips between the first two models instead")
    args = ap.parse_args()
    models = args.models.split(",")
    if args.switches:
        models = (models[:2] * (args.switches + 1))[: 2 * args.switches + 1]
    rep = run(args.budget, models)
    print(f"base {rep['base_mb']:,} MB + the store's bound {rep['store_mb']} MB + budget {rep['budget_mb']:,} MB = "
          f"{rep['limit_mb']:,} MB; "
          f"{'within' if rep['within_budget'] else 'ABOVE'} after every switch; returns to the first model drift "
          f"{rep['return_drift_mb']} MB above its first return (at most {RETURN_DRIFT_MB})")
    print(json.dumps(rep))
    return 0 if rep["within"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
