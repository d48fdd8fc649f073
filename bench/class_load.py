"""A class on one CPU Space: thirty students probing at once, through the page's own events.

Starts ``python app.py`` on a free loopback port (the default model warmed, then one probe of another
pair so that every method's first-use costs are paid), then STUDENTS visitors, each a gradio_client
session of its own that has opened the page (its load events run, as a browser runs them), all at once:
  (a) the same gallery pair, as a class clicking "Try it in the Probe tab" together (the gallery's
      event the page runs after the click);
  (b) each a different BLiMP pair (bench/typical.py's, one a paradigm), as the class typing its own
      (the Probe tab's Compare event).
Every method runs, as the page sends it. For each visitor: seconds from sending to the first figures
(the first output with the surprisal plot) and to the full result (the event's end), and the highest
place in the queue it was shown while it waited. The whole run twice, with the probe cache and the
gallery's shipped answers (the app as it ships) and without (``ACCAPP_PROBE_CACHE=0``), each on a
fresh server; printed side by side, p50 / p95, the last line one JSON object.

The page's events are private to API clients (the app lists only /probe and the file endpoints); a
browser joins them by their index, and so does this script: gradio_client is told the two events are
callable on its side, nothing changes on the server.

    python bench/class_load.py [--students 30] [--only cached|uncached] [--env NAME=VALUE ...]

``--env`` sets an app setting on both servers (ACCAPP_PROBE_CONCURRENCY=32, to try a limit).

Goals (the issue's, on a 2-core machine): (a) p95 to the full result <= 1 s with the cache;
(b) p95 to the first figures <= 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from load_test import percentile  # noqa: E402  (same folder: the benches' percentiles)
from probe_latency import app_running  # noqa: E402  (same folder: one way to start the app)
from typical import typical_pairs  # noqa: E402  (the probe benches' typical pairs)

GOALS = {"gallery_full_p95_s": 1.0, "different_first_p95_s": 10.0}
FIGURE = 3  # the surprisal plot's place among the Probe tab's outputs (gradio_client leaves the States out)
GALLERY_EVENT, PROBE_EVENT = "gallery_probe", "run_probe"  # the gallery's click, the Compare button


def event_index(client, name: str) -> int:
    """The page event named so (its first trigger), made callable from this client (see the docstring)."""
    for dep in client.config["dependencies"]:
        if dep.get("api_name") == name:
            index = dep.get("id")
            client.endpoints[index].is_valid = True
            return index
    raise SystemExit(f"the app has no event {name!r}")


def connect(url: str):
    """A student's session: gradio_client with a patient timeout (a loaded 2-core server answers slowly)."""
    from gradio_client import Client

    return Client(url, verbose=False, httpx_kwargs={"timeout": 600})


def open_page(client) -> int:
    """What a browser does when the page opens: the page's load events (a shared link's reading, none
    here, so they fill nothing and run nothing). Gradio makes the visitor's session on its first event,
    about 0.1 s of the server's CPU (a copy of every component's settings), so a class that opened the
    page before the teacher says "click" has paid it already. Returns how many events it ran."""
    loads = [dep["id"] for dep in client.config["dependencies"]
             if any(target[1] == "load" for target in dep.get("targets") or [])]
    for index in loads:
        client.endpoints[index].is_valid = True
        client.predict(fn_index=index)
    return len(loads)


def page_inputs(good: str, bad: str) -> list:
    """The Probe tab's inputs as the page sends them by default (every method): good, bad, model,
    second model, methods, unit, view, benchmark method, context."""
    from accapp.methods import method_ids
    from accapp.models import DEFAULT_MODEL

    return [good, bad, DEFAULT_MODEL, "", method_ids("causal"), "bits", "words", "lp", ""]


def figure_position(client, index: int) -> int:
    """Where the surprisal plot stands in the event's outputs as the server sends them (States
    included; gradio_client's FIGURE counts without them)."""
    kinds = {c["id"]: c.get("type") for c in client.config["components"]}
    outputs = next(d for d in client.config["dependencies"] if d["id"] == index)["outputs"]
    shown = [k for k, o in enumerate(outputs) if kinds.get(o) != "state"]
    return shown[FIGURE]


def student(client, index: int, inputs: list, start: threading.Barrier, record: dict) -> None:
    """Send one probe at the barrier, as the page does: join the queue, then read the session's event
    stream; note when the first figures and the end came, and the queue places shown. Plain HTTP on
    one kept connection, so the thirty students cost the 2-core machine little beside the server
    (gradio_client's job threads, a new TLS context a request, took about a core of their own)."""
    import httpx

    endpoint = client.endpoints[index]
    figure = figure_position(client, index)
    body = {"data": list(endpoint.insert_empty_state(*inputs)), "fn_index": index, "event_data": None,
            "trigger_id": None, "session_hash": client.session_hash}
    first, places, waited, error, done = None, [], False, None, False
    with httpx.Client(timeout=600) as http:
        start.wait()
        t0 = time.perf_counter()
        event_id = http.post(client.sse_data_url, json=body).raise_for_status().json()["event_id"]
        with http.stream("GET", client.sse_url, params={"session_hash": client.session_hash}) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("event_id") not in (None, event_id):
                    continue
                kind = msg.get("msg")
                if kind == "estimation":
                    waited = True
                    if msg.get("rank") is not None:
                        places.append(msg["rank"] + 1)  # Gradio's rank counts from 0; the page shows it from 1
                elif kind in ("process_generating", "process_completed"):
                    out = msg.get("output") or {}
                    data = out.get("data") or []
                    if first is None and len(data) > figure and data[figure] not in (None, []):
                        first = time.perf_counter() - t0  # a whole value, or a stream's change to it
                    if kind == "process_completed":
                        if not msg.get("success", False):
                            error = f"error: {str(out.get('error'))[:200]}"
                        elif first is None:
                            error = "no figure in the result"
                        done = True
                        break
                elif kind == "close_stream":
                    break
    full = time.perf_counter() - t0
    if not done and error is None:
        error = "the stream closed before the result"
    record.update(first_s=first if first is not None else full, full_s=full, waited=waited,
                  place=max(places) if places else None, error=error)


def stats(values: list[float]) -> dict:
    if not values:
        return {"p50_s": None, "p95_s": None, "max_s": None}
    return {"p50_s": round(percentile(values, 50), 3), "p95_s": round(percentile(values, 95), 3),
            "max_s": round(max(values), 3)}


def scenario(clients: list, index: int, pairs: list[tuple[str, str]]) -> dict:
    """Every client sends its pair at once: the first figures' and the full result's p50 / p95."""
    records = [{} for _ in clients]
    gate = threading.Barrier(len(clients))
    threads = [threading.Thread(target=student, args=(c, index, page_inputs(*pairs[k % len(pairs)]), gate,
                                                      records[k])) for k, c in enumerate(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    waited = [r for r in records if r.get("waited")]
    return {"students": len(clients), "wall_s": round(time.perf_counter() - t0, 2),
            "first": stats([r["first_s"] for r in records]), "full": stats([r["full_s"] for r in records]),
            "waited_in_queue": len(waited), "shown_their_place": sum(r["place"] is not None for r in waited),
            "highest_place": max((r["place"] or 0 for r in records), default=0),
            "errors": [r["error"] for r in records if r.get("error")][:5]}


def run_mode(name: str, env: dict, students: int, gallery_pair: tuple[str, str], different: list,
             warm: tuple) -> dict:
    with tempfile.TemporaryDirectory() as tmp, app_running(Path(tmp) / "server.log", preload=True, extra_env=env) as (
            _, url, startup):
        print(f"  [{name}] server up in {startup:.1f} s; warming", flush=True)
        warm_client = connect(url)
        warm_client.submit(*page_inputs(*warm), fn_index=event_index(warm_client, PROBE_EVENT)).result(timeout=900)
        with ThreadPoolExecutor(4) as pool:  # a page each; opened before the clock starts, a few at a time
            made = list(pool.map(lambda _: connect(url), range(students)))
            list(pool.map(open_page, made))
        gallery_index = event_index(made[0], GALLERY_EVENT)
        probe_index = event_index(made[0], PROBE_EVENT)
        for c in made[1:]:
            event_index(c, GALLERY_EVENT), event_index(c, PROBE_EVENT)
        print(f"  [{name}] (a) {students} students, one gallery pair", flush=True)
        a = scenario(made, gallery_index, [gallery_pair])
        print(f"  [{name}]     {json.dumps(a)}", flush=True)
        print(f"  [{name}] (b) {students} students, {len(different)} different pairs", flush=True)
        b = scenario(made, probe_index, different)
        print(f"  [{name}]     {json.dumps(b)}", flush=True)
    return {"gallery": a, "different": b, "startup_s": round(startup, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--only", choices=("cached", "uncached"), default=None, help="one of the two runs only")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="an app setting on both servers")
    args = ap.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    from accapp.service import gallery

    first = gallery.load()[0]  # the pair the gallery shows first
    pairs = typical_pairs(args.students + 1)
    warm, different = pairs[0], pairs[1:]
    modes = {"cached": dict(extra), "uncached": {**extra, "ACCAPP_PROBE_CACHE": "0"}}
    res = {}
    for name, env in modes.items():
        if args.only in (None, name):
            res[name] = run_mode(name, env, args.students, (first["good"], first["bad"]), different, warm)
    res.update(students=args.students, gallery_pair=first["id"], env=extra, cpus=os.cpu_count(),
               load_average=[round(x, 2) for x in os.getloadavg()], goals=GOALS)
    print(f"class load · {args.students} students · every method · gallery pair {first['id']} · "
          f"{os.cpu_count()} CPUs · load average {res['load_average']}")
    print(f"  {'':34} {'with the cache':>22} {'without':>22}")
    for scen, label in (("gallery", "(a) one gallery pair"), ("different", "(b) different pairs")):
        for part in ("first", "full"):
            cells = []
            for name in modes:
                s = res.get(name, {}).get(scen, {}).get(part)
                cells.append(f"{s['p50_s']} / {s['p95_s']} s" if s else "-")
            print(f"  {label + ', to ' + ('first figures' if part == 'first' else 'full result'):34} "
                  f"{cells[0]:>22} {cells[1]:>22}")
    for name in res.keys() & modes.keys():
        for scen in ("gallery", "different"):
            r = res[name][scen]
            print(f"  [{name}] {scen}: waited in the queue {r['waited_in_queue']}, shown their place "
                  f"{r['shown_their_place']}, highest place {r['highest_place']}, errors {len(r['errors'])}")
    if "cached" in res:
        c = res["cached"]
        res["goals_met"] = {"gallery_full_p95_s": c["gallery"]["full"]["p95_s"] <= GOALS["gallery_full_p95_s"],
                            "different_first_p95_s": c["different"]["first"]["p95_s"] <= GOALS["different_first_p95_s"]}
    print(json.dumps(res))
    errors = sum(len(res[n][s]["errors"]) for n in res.keys() & modes.keys() for s in ("gallery", "different"))
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
