"""Load test of the web app on loopback: many gradio_client users probing at once.

Starts ``python app.py`` on a free loopback port (the default model warmed first), then
CLIENTS threads, each with its own gradio_client Client, send PROBES /probe requests each,
one after another (bounded in count, and in time by --deadline). Every request must be
answered with the right verdict and no error. Prints p50 / p95 / max latency and the
requests per second; the last line is one JSON object.

    python bench/load_test.py --clients 20 --probes 10 --methods lp,mean_lp,pen_lp
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_latency import start  # noqa: E402  (same folder: one way to start the app)

PAIRS = [
    ("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
    ("The dogs bark.", "The dogs barks."),
    ("Many girls insulted themselves.", "Many girls insulted herself."),
    ("<img src=x onerror=alert(1)> The cat sleeps.", "<img src=x onerror=alert(1)> The cat sleep."),
]


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q))


def run(url: str, clients: int, probes: int, model: str, methods: list[str] | None, deadline: float) -> dict:
    from gradio_client import Client

    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + deadline

    def user(k: int) -> None:
        client = Client(url, verbose=False)
        for j in range(probes):
            if time.perf_counter() > stop_at:
                with lock:
                    errors.append(f"client {k}: deadline passed before probe {j}")
                return
            good, bad = PAIRS[(k + j) % len(PAIRS)]
            t = time.perf_counter()
            try:
                out = client.predict(good, bad, model, methods, api_name="/probe")
                ok = out["good"] == good and out["bad"] == bad and len(out["verdicts"]) >= 1
                problem = None if ok else f"client {k} probe {j}: wrong answer {str(out)[:200]}"
            except Exception as exc:  # noqa: BLE001 - every failure is counted and reported
                problem = f"client {k} probe {j}: {type(exc).__name__}: {exc}"
            with lock:
                latencies.append(time.perf_counter() - t)
                if problem:
                    errors.append(problem)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=user, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {
        "clients": clients, "probes_each": probes, "requests": clients * probes, "answered": len(latencies),
        "errors": len(errors), "error_examples": errors[:5], "wall_s": round(wall, 2),
        "requests_per_s": round(len(latencies) / wall, 2),
        "p50_s": round(percentile(latencies, 50), 3) if latencies else None,
        "p95_s": round(percentile(latencies, 95), 3) if latencies else None,
        "max_s": round(max(latencies), 3) if latencies else None,
        "mean_s": round(statistics.fmean(latencies), 3) if latencies else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--probes", type=int, default=10)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--methods", default="lp,mean_lp,pen_lp", help="'all' or comma-separated method ids")
    ap.add_argument("--deadline", type=float, default=900.0, help="seconds after which no new request is sent")
    ap.add_argument("--url", default=None, help="an app already running (default: start one here)")
    args = ap.parse_args()
    methods = None if args.methods == "all" else [m for m in args.methods.split(",") if m]
    with tempfile.TemporaryDirectory() as tmp:
        proc = None
        url = args.url
        if url is None:
            proc, url, _ = start(None, Path(tmp) / "server.log", preload=True)
        try:
            from gradio_client import Client

            Client(url, verbose=False).predict(*PAIRS[0], args.model, methods, api_name="/probe")  # warm
            res = run(url, args.clients, args.probes, args.model, methods, args.deadline)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
    res.update(model=args.model, methods=args.methods)
    print(f"load test · {res['clients']} clients x {res['probes_each']} probes · {res['model']} · methods {res['methods']}")
    print(f"  answered {res['answered']}/{res['requests']}, errors {res['errors']}, {res['wall_s']} s, "
          f"{res['requests_per_s']} requests/s")
    print(f"  latency p50 {res['p50_s']} s, p95 {res['p95_s']} s, max {res['max_s']} s")
    for e in res["error_examples"]:
        print("  error:", e)
    print(json.dumps(res))
    return 0 if res["errors"] == 0 and res["answered"] == res["requests"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
