"""Issue 31's demonstration on a GPU: the app started on its device with the embedded models, one
/probe through Gradio's HTTP API, and what it says of where it ran (docs/gpu.md, next lease).

    python3 scripts/gpu/app_probe.py [--model smollm2-135m-instruct] [--methods lp,yes_no_prob_comp]

Starts `python app.py` on a free loopback port (the default model warmed first, as a Space does),
waits until it answers, sends the casserole pair to /probe, and prints the answer's `ran_on`, the
headline (ran_on carries the pass size chosen) and the seconds each step took. The app's log goes
to $OUT/app.log where OUT is set. Exit 1 when /probe fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from probe_latency import app_running, http_probe  # noqa: E402

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--methods", default="lp,yes_no_prob_comp,ab_prompting")
    args = ap.parse_args()
    log = Path(os.environ.get("OUT", "/tmp")) / "app.log"
    # The default model warmed first, as a Space does (bench/probe_latency.py starts and stops the app).
    with app_running(log, preload=True) as (_, url, up):
        t = time.perf_counter()
        first = http_probe(url, GOOD, BAD, args.model, args.methods.split(","))
        cold = time.perf_counter() - t
        t = time.perf_counter()
        http_probe(url, GOOD, BAD, args.model, args.methods.split(","))
        warm = time.perf_counter() - t
    print(json.dumps({"app_up_s": round(up, 1), "probe_cold_s": round(cold, 3), "probe_warm_s": round(warm, 3),
                      "ran_on": first.get("ran_on"), "headline": (first.get("headline") or {}).get("text")}, indent=1))
    return 0 if first.get("ran_on") else 1

if __name__ == "__main__":
    raise SystemExit(main())
