"""Issue 53's demonstration of the app on its device: the app started with the embedded models, /probe
with every method through gradio_client, and what it says of where it ran (docs/gpu-runbook.md).

    python3 scripts/gpu/app_probe.py [--model smollm2-135m-instruct] [--methods all] [--warm 5]

Starts `python app.py` on a free loopback port (the default model warmed first, as a Space does), waits
until it answers, sends the casserole pair to /probe through gradio_client (cold: the first probe; warm:
the next --warm pairs, other pairs, one at a time), and samples the GPU's memory every 0.1 s (nvidia-smi) from before the app
starts to after it stops. Prints the answer's `ran_on` (device, GPU, dtype, pass size), the seconds each
step took and the GPU memory the app held at its peak, and writes the whole first answer with them to
$OUT/app-probe.json (OUT unset: /tmp). Run the same command on the CPU machine and compare the two files
with `scripts/gpu/app_compare.py`. Exit 1 when /probe fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from probe_latency import app_running  # noqa: E402

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
# Warm probes: other pairs (the app caches a pair's answer, so repeating the first would time the cache).
WARM_PAIRS = [("The dogs bark at night.", "The dogs barks at night."),
              ("Who did Mary see yesterday?", "Who did Mary see John yesterday?"),
              ("No student has ever left.", "Some student has ever left."),
              ("The book that I read was long.", "The book that I read were long."),
              ("She herself wrote the letter.", "She himself wrote the letter."),
              ("Many people were walking home.", "Many people was walking home."),
              ("Every child likes candy.", "Every child like candy."),
              ("The keys to the cabinet are lost.", "The keys to the cabinet is lost.")]


class GpuMemory:
    """nvidia-smi's memory.used (MiB) every 0.1 s in the background; nothing where there is no nvidia-smi."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                          "-lms", "100"], stdout=path.open("w"), stderr=subprocess.DEVNULL)
        except OSError:
            self.proc = None

    def stop(self) -> dict | None:
        if self.proc is None:
            return None
        self.proc.terminate()
        self.proc.wait()
        mib = [int(x) for x in self.path.read_text().split() if x.strip().isdigit()]
        return {"before_mib": mib[0], "peak_mib": max(mib), "app_peak_mib": max(mib) - mib[0],
                "samples": len(mib)} if mib else None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--methods", default="all", help="method ids, comma-separated, or all")
    ap.add_argument("--warm", type=int, default=5, help="warm probes after the first")
    args = ap.parse_args()
    from gradio_client import Client

    out = Path(os.environ.get("OUT", "/tmp"))
    methods = args.methods.split(",")
    memory = GpuMemory(out / "gpu-memory.txt")
    time.sleep(0.5)  # the first sample is the memory before the app
    try:
        with app_running(out / "app.log", preload=True) as (_, url, up):
            client = Client(url, verbose=False)
            t = time.perf_counter()
            first = client.predict(GOOD, BAD, args.model, methods, None, api_name="/probe")
            cold = time.perf_counter() - t
            warm = []
            for good, bad in WARM_PAIRS[:args.warm]:
                t = time.perf_counter()
                client.predict(good, bad, args.model, methods, None, api_name="/probe")
                warm.append(time.perf_counter() - t)
    finally:
        gpu = memory.stop()
    record = {"pair": [GOOD, BAD], "model": args.model, "methods": methods, "app_up_s": round(up, 1),
              "probe_cold_s": round(cold, 3), "probe_warm_s": [round(w, 3) for w in warm],
              "probe_warm_median_s": round(statistics.median(warm), 3) if warm else None, "gpu_memory": gpu,
              "ran_on": first.get("ran_on"), "headline": (first.get("headline") or {}).get("text"),
              "methods_answered": len(first.get("verdicts") or []), "answer": first}
    (out / "app-probe.json").write_text(json.dumps(record, indent=1, default=str))
    print(json.dumps({k: v for k, v in record.items() if k != "answer"}, indent=1, default=str))
    return 0 if first.get("ran_on") else 1


if __name__ == "__main__":
    raise SystemExit(main())
