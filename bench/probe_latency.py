"""Probe latency of the web app: SmolLM2, every method, warm, as three clients see it.

Starts ``python app.py`` on a free loopback port without warming the model (ACCAPP_PRELOAD=0), so
the first request pays for loading it; then times, interleaved round by round:
- http: the /probe endpoint through Gradio's documented HTTP protocol (POST .../call/probe, then
  read the event stream), as curl or `requests` sees it: the app's own answer time;
- client: the same endpoint through `gradio_client` (its polling adds a little on the client);
- browser (with --browser): the Probe tab in headless Chromium, from the click on "Compare" until
  the summary shows the new pair (two pairs alternate, so every click changes the page).
With --blimp N, then http over N BLiMP pairs, one from each paradigm (the first of each paradigm's
seeded sample, as bench/perf.py's probe figure): the spread over typical pairs, every pair new.

With --stages N, no server: the Probe tab's own handler (accapp.ui.probe.run_probe, a generator
that yields each stage) runs in this process on the same N typical pairs, warm, and the time to
its first answer (surprisal by word and the sentence-probability methods) and to the full set
are printed, median and 90th percentile.

    python bench/probe_latency.py [--model smollm2-135m-instruct] [--methods all] [--repeats 5]
                                  [--threads N] [--browser] [--blimp 67] [--json]
    python bench/probe_latency.py --stages 67 [--model ...] [--threads N]

Prints the figures (and JSON with --json). Times are wall-clock seconds seen by the client.
"""

from __future__ import annotations

import argparse
import contextlib
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
PAIRS = [("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
         ("The cat that the dogs chase is asleep.", "The cat that the dogs chase are asleep.")]
GOOD, BAD = PAIRS[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(threads: int | None, log: Path, preload: bool = False, extra_env: dict | None = None, tree: Path = ROOT,
          ) -> tuple[subprocess.Popen, str, float]:
    """`python app.py` of `tree` (this checkout, or another commit's worktree) on a free loopback port:
    (process, url, seconds until it answered)."""
    port = free_port()
    env = dict(os.environ, PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", ACCAPP_PRELOAD="1" if preload else "0",
               GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", **(extra_env or {}))
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    t0 = time.perf_counter()
    if tree != ROOT:
        env["PYTHONPATH"] = str(tree)  # that tree's accapp, not this one's editable install
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=tree, env=env, stdout=log.open("w"),
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


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@contextlib.contextmanager
def app_running(log: Path, preload: bool = False, extra_env: dict | None = None, threads: int | None = None,
                tree: Path = ROOT):
    """(process, url, seconds to answer) of an app started for the block, stopped after it."""
    proc, url, startup = start(threads, log, preload, extra_env, tree)
    try:
        yield proc, url, startup
    finally:
        stop(proc)


def http_probe(url: str, good: str, bad: str, model: str, methods, session: str | None = None) -> dict:
    """One /probe call through Gradio's HTTP API: POST the inputs, then read the event stream.
    session: a visitor's session hash, kept across its calls as a browser or gradio_client does
    (None: a new session each call, as a bare curl gets)."""
    base = url + "gradio_api/call/probe"
    body = json.dumps({"data": [good, bad, model, methods], "session_hash": session}).encode()
    req = urllib.request.Request(base, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        event_id = json.load(r)["event_id"]
    event = None
    with urllib.request.urlopen(f"{base}/{event_id}", timeout=300) as r:
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                data = json.loads(line.split(":", 1)[1])
                if event == "error":
                    raise RuntimeError(f"/probe answered an error: {data}")
                return data[0]
    raise RuntimeError("/probe closed its stream without a result")


class BrowserProbe:
    """The Probe tab in headless Chromium: fill the pair, click Compare, wait for the summary."""

    def __init__(self, url: str) -> None:
        sys.path.insert(0, str(ROOT / "tests"))
        from playwright.sync_api import sync_playwright
        from ui_server import launch_browser

        self._pw = sync_playwright().start()
        self._browser = launch_browser(self._pw)
        self.page = self._browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(300_000)
        self.page.goto(url)
        self.page.wait_for_selector("#probe-run")

    def probe(self, good: str, bad: str) -> float:
        for elem, text in (("probe-good", good), ("probe-bad", bad)):
            self.page.locator(f"#{elem} textarea").fill(text)
        t = time.perf_counter()
        self.page.click("#probe-run")
        self.page.wait_for_function(
            "s => (document.querySelector('#probe-summary')?.innerText || '').includes(s)", arg=bad)
        elapsed = time.perf_counter() - t
        # Let the page finish drawing (untimed), so it takes no CPU from the next client's request.
        self.page.wait_for_selector("#probe-surprisal .js-plotly-plot")
        self.page.wait_for_timeout(1000)
        return elapsed

    def close(self) -> None:
        self._browser.close()
        self._pw.stop()


def staged(model: str, n: int, threads: int | None) -> dict:
    """Time to the probe's first stage and to its last, in process, over n typical pairs (warm)."""
    sys.path.insert(0, str(ROOT))
    import torch
    from typical import spread, typical_pairs

    from accapp.methods import method_ids
    from accapp.models import get_spec
    from accapp.service import host as state
    from accapp.ui import probe

    if threads:
        torch.set_num_threads(threads)
    state.set_state(state.AppState())
    methods = method_ids(get_spec(model).kind)

    def one(good: str, bad: str) -> tuple[float, float]:
        t = time.perf_counter()
        first = None
        for out in probe.run_probe(good, bad, model, "", methods, "bits", "words", "lp", None):
            if first is None and "acc-verdict" in str(out[2]):
                first = time.perf_counter() - t
            if "Nothing scored" in str(out[0]):
                raise RuntimeError(out[0])
        return first, time.perf_counter() - t

    one(*PAIRS[0])  # warm: the model loads, the prefixes and the reliability flags are cached
    firsts, fulls = [], []
    for good, bad in typical_pairs(n):
        f, a = one(good, bad)
        firsts.append(f)
        fulls.append(a)
    return {"model": model, "pairs": n, "methods": len(methods), "threads": torch.get_num_threads(),
            "first_stage": spread(firsts), "full": spread(fulls)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--methods", default="all", help="'all' or comma-separated method ids")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS for the app (default: unset)")
    ap.add_argument("--browser", action="store_true", help="also time the Probe tab in headless Chromium")
    ap.add_argument("--blimp", type=int, default=0, metavar="N",
                    help="then time http over N BLiMP pairs, one a paradigm (67: every paradigm)")
    ap.add_argument("--stages", type=int, default=0, metavar="N",
                    help="only: time the Probe tab's stages in process over N typical BLiMP pairs")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.stages:
        res = staged(args.model, args.stages, args.threads)
        if args.json:
            print(json.dumps(res))
        else:
            print(f"probe stages · {res['model']} · {res['methods']} methods · {res['threads']} threads · "
                  f"{res['pairs']} typical BLiMP pairs, warm, in process (the Probe tab's handler)")
            for k, label in (("first_stage", "first answer (surprisal by word, LP family)"), ("full", "every method")):
                v = res[k]
                print(f"  {label:45}: median {v['median_s']:.3f} s, 90th percentile {v['p90_s']:.3f} s, max {v['max_s']:.3f} s")
        return 0

    from gradio_client import Client

    methods = None if args.methods == "all" else [m.strip() for m in args.methods.split(",") if m.strip()]
    if args.browser and methods is not None:
        ap.error("--browser times the page's default (every method); leave --methods at 'all'")
    warm: dict[str, list[float]] = {"http": [], "client": []}
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, startup = start(args.threads, Path(tmp) / "server.log")
        browser = None
        try:
            t = time.perf_counter()
            out = http_probe(url, GOOD, BAD, args.model, methods)
            cold = time.perf_counter() - t
            client = Client(url, verbose=False)
            if args.browser:
                browser = BrowserProbe(url)
                warm["browser"] = []
            for i in range(args.repeats):
                good, bad = PAIRS[i % 2]  # the browser needs a change to see; the others alternate alike
                t = time.perf_counter()
                http_probe(url, good, bad, args.model, methods)
                warm["http"].append(time.perf_counter() - t)
                t = time.perf_counter()
                client.predict(good, bad, args.model, methods, api_name="/probe")
                warm["client"].append(time.perf_counter() - t)
                if browser:
                    warm["browser"].append(browser.probe(good, bad))
            blimp_times = []
            if args.blimp:
                sys.path.insert(0, str(ROOT))
                from typical import typical_pairs  # bench/typical.py: the pairs bench/perf.py times too

                for good, bad in typical_pairs(args.blimp):
                    t = time.perf_counter()
                    http_probe(url, good, bad, args.model, methods)
                    blimp_times.append(time.perf_counter() - t)
        finally:
            if browser:
                browser.close()
            proc.terminate()
            proc.wait(timeout=30)
    res = {
        "model": args.model, "methods": args.methods, "judgments": len(out["verdicts"]),
        "threads": args.threads or os.environ.get("OMP_NUM_THREADS") or "default", "cpus": os.cpu_count(),
        "startup_s": round(startup, 2), "cold_s": round(cold, 2),
        **{f"warm_{k}_median_s": round(statistics.median(v), 2) for k, v in warm.items()},
        **{f"warm_{k}_s": [round(w, 2) for w in v] for k, v in warm.items()},
    }
    if blimp_times:
        from typical import spread

        res.update({f"warm_http_blimp_{k}": v for k, v in spread(blimp_times, digits=2).items()})
        res["warm_http_blimp_s"] = [round(w, 2) for w in blimp_times]
    if args.json:
        print(json.dumps(res))
    else:
        print(f"probe latency · {res['model']} · methods: {res['methods']} ({res['judgments']} rows) · "
              f"threads: {res['threads']} · {res['cpus']} CPUs · pairs alternate: {PAIRS[0][0]!r} / {PAIRS[1][0]!r}")
        print(f"  server start (until the page answers): {res['startup_s']:.2f} s")
        print(f"  cold (first request, model load included): {res['cold_s']:.2f} s")
        for k in warm:
            print(f"  warm, {k:8} (median of {args.repeats}): {res[f'warm_{k}_median_s']:.2f} s   runs: {res[f'warm_{k}_s']}")
        if blimp_times:
            print(f"  warm, http over {len(blimp_times)} BLiMP pairs (one a paradigm): median {res['warm_http_blimp_median_s']:.2f} s, "
                  f"90th percentile {res['warm_http_blimp_p90_s']:.2f} s, max {res['warm_http_blimp_max_s']:.2f} s, "
                  f"{res['warm_http_blimp_share_within_2s']:.0%} within 2 s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
