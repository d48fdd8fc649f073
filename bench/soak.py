"""Soak test: 1,000 probes against the app on loopback; the server's resident memory at start and end.

Starts ``python app.py`` (the default model warmed), sends one probe so the model and every
first-use table are loaded, records the server's resident set size (RSS), then sends PROBES
/probe requests of distinct BLiMP pairs from CLIENTS gradio_client users, sampling the RSS every
tenth of the way, and prints the start, the end, the growth per probe and the bound it is held
to; the last line is one JSON object. Exit status 1 when a probe failed or the growth passed the bound.

    python bench/soak.py --probes 1000 --clients 4 --methods lp

What may grow, and why it stays bounded (the --bound-mb default, 64 MB over 1,000 probes):
- the causal scorer's tokenization cache: every distinct string scored once (2 a probe with LP;
  about 1 KB each), cleared at 200,000 strings (accapp/scoring/causal.py);
- Gradio's per-event analytics (at most GRADIO_ANALYTICS_MAX_EVENTS = 10,000 records of a few
  hundred bytes), its message queues per session (an LRU of 2,000 sessions) and page states
  (ACCAPP_SESSIONS, 1,000);
- the allocator's high-water mark: Python and torch keep freed memory for reuse, so RSS settles
  after the first few hundred requests instead of returning to the start.
Each is either per distinct string (1,000 probes: about 2 MB) or capped, so 1,000 probes stay
well under 64 MB; a leak of the issue's size (0.4 MB a probe) would show as 400 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from probe_latency import start  # noqa: E402  (same folder: one way to start the app)

# Start and end are read this long after the last probe: past the model thread's idle trim
# (accapp.service.host.IDLE_TRIM_S, 1 s), so both are of a settled server.
SETTLE_S = 2.5


def rss_mb(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probes", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--methods", default="lp", help="'all' or comma-separated method ids")
    ap.add_argument("--bound-mb", type=float, default=64.0, help="the most the RSS may grow over the probes")
    args = ap.parse_args()
    methods = None if args.methods == "all" else [m for m in args.methods.split(",") if m]

    from gradio_client import Client

    from accapp.benchmarks import load_benchmark

    blimp = load_benchmark("blimp").sample(args.probes + 1, random_state=0)
    pairs = list(zip(blimp.good, blimp.bad))
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, _ = start(None, Path(tmp) / "server.log", preload=True)
        try:
            Client(url, verbose=False).predict(*pairs[-1], args.model, methods, api_name="/probe")  # warm
            time.sleep(SETTLE_S)
            start_mb = rss_mb(proc.pid)
            samples = [(0, round(start_mb, 1))]
            done, failed = 0, []
            lock = threading.Lock()
            step = max(1, args.probes // 10)
            t0 = time.perf_counter()

            def user(k: int) -> None:
                nonlocal done
                client = Client(url, verbose=False)
                for i in range(k, args.probes, args.clients):
                    good, bad = pairs[i]
                    try:
                        out = client.predict(good, bad, args.model, methods, api_name="/probe")
                        problem = None if out["good"] == good.strip() or out["good"] == good else f"probe {i}: wrong pair"
                    except Exception as exc:  # noqa: BLE001 - counted and reported
                        problem = f"probe {i}: {type(exc).__name__}: {exc}"
                    with lock:
                        done += 1
                        if problem:
                            failed.append(problem)
                        if done % step == 0:
                            samples.append((done, round(rss_mb(proc.pid), 1)))

            threads = [threading.Thread(target=user, args=(k,)) for k in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            time.sleep(SETTLE_S)
            end_mb = rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    growth = end_mb - start_mb
    res = {"probes": args.probes, "clients": args.clients, "model": args.model, "methods": args.methods,
           "answered": done, "errors": len(failed), "error_examples": failed[:5], "wall_s": round(wall, 1),
           "rss_start_mb": round(start_mb, 1), "rss_end_mb": round(end_mb, 1), "growth_mb": round(growth, 1),
           "growth_kb_per_probe": round(1024 * growth / max(1, done), 1), "bound_mb": args.bound_mb,
           "samples": samples, "load_average": [round(x, 2) for x in os.getloadavg()]}
    print(f"soak · {args.probes} probes from {args.clients} clients · {args.model} · methods {args.methods} · {res['wall_s']} s")
    print(f"  server RSS: start {res['rss_start_mb']} MB, end {res['rss_end_mb']} MB, growth {res['growth_mb']} MB "
          f"({res['growth_kb_per_probe']} KB a probe; bound {args.bound_mb} MB)")
    print("  RSS every tenth: " + ", ".join(f"{n}: {mb}" for n, mb in samples))
    for e in failed[:5]:
        print("  error:", e)
    print(json.dumps(res))
    return 0 if not failed and done == args.probes and growth <= args.bound_mb else 1


if __name__ == "__main__":
    raise SystemExit(main())
