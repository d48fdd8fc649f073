"""Probe latency of the web app: SmolLM2, every method, through the /probe API endpoint.

Starts ``python app.py`` on a free loopback port without warming the model (ACCAPP_PRELOAD=0), so
the first request pays for loading it; then times:
- cold: the first /probe request after start (model load included);
- warm: the median of the next N requests (default 5).

    python bench/probe_latency.py [--model smollm2-135m-instruct] [--methods all] [--repeats 5] [--threads N]

Prints the figures (and JSON with --json). Times are wall-clock seconds seen by the client.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(threads: int | None, log: Path, preload: bool = False) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    env = dict(os.environ, PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", ACCAPP_PRELOAD="1" if preload else "0",
               GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    while time.perf_counter() - t0 < 300:
        if proc.poll() is not None:
            raise SystemExit(f"the app exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "config", timeout=5):
                return proc, url, time.perf_counter() - t0
        except OSError:
            time.sleep(0.25)
    proc.kill()
    raise SystemExit("the app did not start within 300 s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--methods", default="all", help="'all' or comma-separated method ids")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS for the app (default: unset)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from gradio_client import Client

    methods = None if args.methods == "all" else [m.strip() for m in args.methods.split(",") if m.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, startup = start(args.threads, Path(tmp) / "server.log")
        try:
            client = Client(url, verbose=False)
            t = time.perf_counter()
            out = client.predict(GOOD, BAD, args.model, methods, api_name="/probe")
            cold = time.perf_counter() - t
            warm = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                client.predict(GOOD, BAD, args.model, methods, api_name="/probe")
                warm.append(time.perf_counter() - t)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    res = {
        "model": args.model, "methods": args.methods, "judgments": len(out["verdicts"]),
        "threads": args.threads or os.environ.get("OMP_NUM_THREADS") or "default", "cpus": os.cpu_count(),
        "startup_s": round(startup, 2), "cold_s": round(cold, 2), "warm_median_s": round(statistics.median(warm), 2),
        "warm_s": [round(w, 2) for w in warm],
    }
    if args.json:
        print(json.dumps(res))
    else:
        print(f"probe latency · {res['model']} · methods: {res['methods']} ({res['judgments']} rows) · "
              f"threads: {res['threads']} · {res['cpus']} CPUs")
        print(f"  server start (until the page answers): {res['startup_s']:.2f} s")
        print(f"  cold (first request, model load included): {res['cold_s']:.2f} s")
        print(f"  warm (median of {args.repeats}): {res['warm_median_s']:.2f} s   runs: {res['warm_s']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
