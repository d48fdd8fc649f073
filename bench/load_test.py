"""Load test of the web app on loopback: many gradio_client users probing at once, alone or
beside file jobs.

Starts ``python app.py`` on a free loopback port (the default model warmed first), then
CLIENTS threads, each a visitor with a session of its own, send PROBES /probe requests each,
one after another (bounded in count, and in time by --deadline). Every request must be
answered with the right pair and no error. Prints p50 / p95 / max latency and the
requests per second; the last line is one JSON object.

The visitors live on this machine but stand for people elsewhere, so their own work should cost
the server's cores little: by default each speaks Gradio's HTTP API with urllib (``--client http``,
about 0.002 s of CPU a probe); ``--client gradio`` uses gradio_client (about 0.04 s a probe).
Each probe takes the next pair of the visitor's own walk through ``--pairs``: ``blimp`` (default),
300 BLiMP pairs and the 4 fixed ones, so that a batch of probes holds different sentences, as
visitors' do; ``fixed``, the 4 fixed pairs only (how earlier figures were measured).

    python bench/load_test.py --clients 20 --probes 10 --methods lp,mean_lp,pen_lp

``--mixed`` (issue 22): the same probing clients twice, first alone, then while FILE_JOBS
visitors (4) each score a file of FILE_ROWS pairs with every method through /score_file; prints
the probes' p50/p95 in both phases (the target: LP-only p95 at most 2 s beside the file jobs),
and checks that every probe and every file job is answered, each file with one row per pair.

    python bench/load_test.py --mixed --clients 10 --probes 20 --methods lp
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from probe_latency import http_probe, start  # noqa: E402  (same folder: one way to start the app)

PAIRS = [
    ("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
    ("The dogs bark.", "The dogs barks."),
    ("Many girls insulted themselves.", "Many girls insulted herself."),
    ("<img src=x onerror=alert(1)> The cat sleeps.", "<img src=x onerror=alert(1)> The cat sleep."),
]


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q))


def pair_pool(kind: str) -> list[tuple[str, str]]:
    """The pairs visitors probe: 'fixed' (PAIRS) or 'blimp' (300 BLiMP pairs, seed 0, then PAIRS)."""
    if kind == "fixed":
        return list(PAIRS)
    return file_pairs(300, 1000) + list(PAIRS)


def caller(url: str, client: str):
    """A visitor's probe call, f(good, bad, model, methods) -> the /probe answer, on a session of its own."""
    if client == "gradio":
        from gradio_client import Client

        c = Client(url, verbose=False)
        return lambda good, bad, model, methods: c.predict(good, bad, model, methods, api_name="/probe")
    session = uuid.uuid4().hex[:12]
    return lambda good, bad, model, methods: http_probe(url, good, bad, model, methods, session)


def probe_clients(url: str, clients: int, probes: int, model: str, methods: list[str] | None, deadline: float,
                  pause: float = 0.0, client: str = "http", pairs: list[tuple[str, str]] | None = None,
                  ) -> tuple[list[tuple[float, float]], list[str], float]:
    """CLIENTS users, PROBES probes each: ([(start, end) of every answered probe], errors, wall seconds)."""
    pairs = pairs or PAIRS
    spans: list[tuple[float, float]] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + deadline

    def user(k: int) -> None:
        call = caller(url, client)
        for j in range(probes):
            if time.perf_counter() > stop_at:
                with lock:
                    errors.append(f"client {k}: deadline passed before probe {j}")
                return
            good, bad = pairs[(k * probes + j) % len(pairs)]
            t = time.perf_counter()
            try:
                out = call(good, bad, model, methods)
                ok = out["good"] == good and out["bad"] == bad and len(out["verdicts"]) >= 1
                problem = None if ok else f"client {k} probe {j}: wrong answer {str(out)[:200]}"
            except Exception as exc:  # noqa: BLE001 - every failure is counted and reported
                problem = f"client {k} probe {j}: {type(exc).__name__}: {exc}"
            with lock:
                spans.append((t, time.perf_counter()))
                if problem:
                    errors.append(problem)
            if pause:
                time.sleep(pause)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=user, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return spans, errors, time.perf_counter() - t0


def stats(latencies: list[float]) -> dict:
    if not latencies:
        return {"n": 0, "p50_s": None, "p95_s": None, "max_s": None, "mean_s": None}
    return {"n": len(latencies), "p50_s": round(percentile(latencies, 50), 3), "p95_s": round(percentile(latencies, 95), 3),
            "max_s": round(max(latencies), 3), "mean_s": round(statistics.fmean(latencies), 3)}


def run(url: str, clients: int, probes: int, model: str, methods: list[str] | None, deadline: float,
        client: str = "http", pairs: list[tuple[str, str]] | None = None) -> dict:
    spans, errors, wall = probe_clients(url, clients, probes, model, methods, deadline, client=client, pairs=pairs)
    latencies = [b - a for a, b in spans]
    s = stats(latencies)
    return {
        "clients": clients, "probes_each": probes, "requests": clients * probes, "answered": len(latencies),
        "errors": len(errors), "error_examples": errors[:5], "wall_s": round(wall, 2),
        "requests_per_s": round(len(latencies) / wall, 2),
        "p50_s": s["p50_s"], "p95_s": s["p95_s"], "max_s": s["max_s"], "mean_s": s["mean_s"],
    }


def file_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """N BLiMP pairs (a different sample per seed), as a visitor's file would hold."""
    from accapp.benchmarks import load_benchmark

    df = load_benchmark("blimp").sample(n, random_state=seed)
    return list(zip(df.good, df.bad))


def file_jobs(url: str, jobs: int, rows: int, model: str, folder: Path) -> tuple[list[dict], threading.Thread]:
    """Start JOBS visitors, each scoring its own file of ROWS pairs with every method; returns the
    per-job records (filled in as they end) and a thread that ends when all have."""
    import pandas as pd
    from gradio_client import Client, handle_file

    from accapp.methods import method_ids

    records: list[dict] = [{"job": k} for k in range(jobs)]

    def visitor(k: int) -> None:
        path = folder / f"visitor-{k}.csv"
        pd.DataFrame(file_pairs(rows, k), columns=["good", "bad"]).to_csv(path, index=False)
        t = time.perf_counter()
        records[k]["start"] = t
        try:
            out = Client(url, verbose=False).predict(handle_file(str(path)), model, method_ids("causal"),
                                                     api_name="/score_file")
            df = pd.read_csv(out, keep_default_na=False)
            records[k]["rows"] = len(df)
            records[k]["row_errors"] = int((df["error"] != "").sum())
            records[k]["ok"] = len(df) == rows
        except Exception as exc:  # noqa: BLE001 - reported
            records[k]["ok"] = False
            records[k]["error"] = f"{type(exc).__name__}: {exc}"
        records[k]["end"] = time.perf_counter()
        records[k]["seconds"] = round(records[k]["end"] - t, 2)
        print(f"  (file job {k} ended after {records[k]['seconds']} s: {records[k].get('rows')} rows"
              f"{', ' + records[k]['error'] if records[k].get('error') else ''})", flush=True)

    threads = [threading.Thread(target=visitor, args=(k,)) for k in range(jobs)]
    for t in threads:
        t.start()

    def wait() -> None:
        for t in threads:
            t.join()

    waiter = threading.Thread(target=wait)
    waiter.start()
    return records, waiter


def mixed(url: str, clients: int, probes: int, model: str, methods: list[str] | None, deadline: float, jobs: int,
          rows: int, folder: Path, client: str = "http", pairs: list[tuple[str, str]] | None = None) -> dict:
    alone_spans, alone_errors, alone_wall = probe_clients(url, clients, probes, model, methods, deadline,
                                                          client=client, pairs=pairs)
    print(f"  (probes alone: {stats([b - a for a, b in alone_spans])})", flush=True)
    records, waiter = file_jobs(url, jobs, rows, model, folder)
    time.sleep(3.0)  # the jobs are uploaded and the first ones scoring
    spans, errors, wall = probe_clients(url, clients, probes, model, methods, deadline, client=client, pairs=pairs)
    print(f"  (probes beside the file jobs: {stats([b - a for a, b in spans])}; waiting for the file jobs)", flush=True)
    waiter.join(timeout=deadline)
    files_end = max((r.get("end") or float("inf")) for r in records)
    beside = [b - a for a, b in spans if b <= files_end]  # answered while a file job still ran or waited
    return {
        "clients": clients, "probes_each": probes, "model": model, "methods": methods,
        "alone": {**stats([b - a for a, b in alone_spans]), "errors": len(alone_errors), "wall_s": round(alone_wall, 2)},
        "with_files": {**stats(beside), "answered": len(spans), "errors": len(errors), "wall_s": round(wall, 2),
                       "all_probes": stats([b - a for a, b in spans])},
        "file_jobs": [{k: v for k, v in r.items() if k not in ("start", "end")} for r in records],
        "file_rows": rows,
        "error_examples": (alone_errors + errors)[:5] + [r["error"] for r in records if r.get("error")][:3],
        "requests": 2 * clients * probes + jobs,
        "answered": len(alone_spans) + len(spans) + sum(1 for r in records if "rows" in r),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--probes", type=int, default=10)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--methods", default="lp,mean_lp,pen_lp", help="'all' or comma-separated method ids")
    ap.add_argument("--deadline", type=float, default=900.0, help="seconds after which no new request is sent")
    ap.add_argument("--url", default=None, help="an app already running (default: start one here)")
    ap.add_argument("--mixed", action="store_true", help="probes alone, then beside FILE_JOBS file jobs with every method")
    ap.add_argument("--file-jobs", type=int, default=4)
    ap.add_argument("--file-rows", type=int, default=8)
    ap.add_argument("--client", choices=("http", "gradio"), default="http", help="how visitors call /probe")
    ap.add_argument("--pairs", choices=("blimp", "fixed"), default="blimp", help="the pairs visitors probe")
    args = ap.parse_args()
    pairs = pair_pool(args.pairs)
    methods = None if args.methods == "all" else [m for m in args.methods.split(",") if m]
    with tempfile.TemporaryDirectory() as tmp:
        proc = None
        url = args.url
        if url is None:
            proc, url, _ = start(None, Path(tmp) / "server.log", preload=True)
        try:
            from gradio_client import Client

            warm = Client(url, verbose=False)
            warm.predict(*PAIRS[0], args.model, methods, api_name="/probe")
            if args.mixed:
                warm.predict(*PAIRS[1], args.model, None, api_name="/probe")  # every method's first-use costs
                res = mixed(url, args.clients, args.probes, args.model, methods, args.deadline, args.file_jobs,
                            args.file_rows, Path(tmp), args.client, pairs)
            else:
                res = run(url, args.clients, args.probes, args.model, methods, args.deadline, args.client, pairs)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
    res.update(model=args.model, methods=args.methods, client=args.client, pairs=args.pairs, cpus=os.cpu_count(),
               load_average=[round(x, 2) for x in os.getloadavg()])
    if args.mixed:
        a, w = res["alone"], res["with_files"]
        print(f"mixed load test · {args.clients} clients ({args.client}, {args.pairs} pairs) x {args.probes} probes · "
              f"{res['model']} · methods {res['methods']}"
              f" · {args.file_jobs} file jobs x {args.file_rows} rows, every method")
        print(f"  probes alone:           p50 {a['p50_s']} s, p95 {a['p95_s']} s, max {a['max_s']} s ({a['n']} probes)")
        print(f"  probes beside the files: p50 {w['p50_s']} s, p95 {w['p95_s']} s, max {w['max_s']} s ({w['n']} probes "
              f"answered while a file job ran)")
        for r in res["file_jobs"]:
            print(f"  file job {r['job']}: {r.get('rows')} rows in {r.get('seconds')} s, {r.get('row_errors')} row errors"
                  + (f", {r['error']}" if r.get("error") else ""))
        print(f"  answered {res['answered']}/{res['requests']}; load average {res['load_average']}")
        for e in res["error_examples"]:
            print("  error:", e)
        print(json.dumps(res))
        ok = (res["answered"] == res["requests"] and a["errors"] == 0 and w["errors"] == 0
              and all(r.get("ok") for r in res["file_jobs"]))
        return 0 if ok else 1
    print(f"load test · {res['clients']} clients ({args.client}, {args.pairs} pairs) x {res['probes_each']} probes · "
          f"{res['model']} · methods {res['methods']}")
    print(f"  answered {res['answered']}/{res['requests']}, errors {res['errors']}, {res['wall_s']} s, "
          f"{res['requests_per_s']} requests/s")
    print(f"  latency p50 {res['p50_s']} s, p95 {res['p95_s']} s, max {res['max_s']} s")
    for e in res["error_examples"]:
        print("  error:", e)
    print(json.dumps(res))
    return 0 if res["errors"] == 0 and res["answered"] == res["requests"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
