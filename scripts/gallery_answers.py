"""Make the teaching gallery's shipped answers: every gallery pair probed with the default model
through the probe's own stages, written to assets/gallery_answers.json.

    python scripts/gallery_answers.py [--out assets/gallery_answers.json] [--pairs ID,ID,...]

Each pair is checked and split into stages as the Probe tab does (service.probe.check_request and
stages, every method of the model's kind, as the tab sends them), and each stage scored with
service.probe.batched_stage on a fresh model host (nothing answered from a cache or an older file).
The file records the model (id, revision, precision, device, parameters, the weights' SHA-256), the
methods' fingerprint, the top-k and the versions it was made with; the app answers from an entry only
where all of them are the request's (accapp/service/probe_cache.py). Written whole or not at all.
Run it again after a change to the model, the methods, their templates or the scoring code
(tests/test_gallery_answers.py compares a few entries with a fresh run).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accapp.methods import method_ids  # noqa: E402
from accapp.models import DEFAULT_MODEL, get_spec  # noqa: E402
from accapp.service import gallery, probe_cache  # noqa: E402
from accapp.service import probe as svc  # noqa: E402
from accapp.service.host import AppState  # noqa: E402
from accapp.service.provenance import provenance  # noqa: E402

SHIPPED_NOTE = "computed ahead, shipped with the app"


def stage_plan(model_id: str, good: str, bad: str) -> list[tuple[str, list[str]]]:
    """The stages the Probe tab runs for this pair with every method of the model's kind."""
    request = svc.check_request(model_id, good, bad, method_ids(get_spec(model_id).kind), runnable_only=True)
    return svc.stages(request.methods)


def answer_pair(state: AppState, model_id: str, pair: dict) -> dict:
    """One gallery pair's stages, each as the probe's own batched_stage answers it."""
    stages = []
    for k, (label, methods) in enumerate(stage_plan(model_id, pair["good"], pair["bad"])):
        result, words, rule, where = svc.batched_stage(model_id, pair["good"], pair["bad"], methods, k == 0, "", state)
        where = dict(where or {}, shipped=True)
        where["text"] = f"{where.get('text', '')} · {SHIPPED_NOTE}".strip(" ·")
        stages.append({"label": label, "methods": list(methods), "with_words": k == 0,
                       "answer": probe_cache.encode((result, words, rule, where))})
    return {"good": pair["good"], "bad": pair["bad"], "context": "", "stages": stages}


def make(model_id: str, pair_ids: list[str] | None = None, log=print) -> dict:
    """The shipped file's data for the gallery's pairs (all, or those named)."""
    probe_cache.use_shipped(None)  # nothing answered from an older file
    state = AppState()  # its own empty cache of repeats: every stage runs the model
    pairs = [p for p in gallery.load() if pair_ids is None or p["id"] in pair_ids]
    if pair_ids is not None and len(pairs) != len(set(pair_ids)):
        raise SystemExit(f"unknown gallery ids: {sorted(set(pair_ids) - {p['id'] for p in pairs})}")
    key = probe_cache.model_key(model_id, state)
    if key is None:
        raise SystemExit(f"{model_id}: its weights cannot be named by a revision, so its answers cannot be shipped")
    out = {}
    t0 = time.perf_counter()
    for n, pair in enumerate(pairs, 1):
        out[pair["id"]] = answer_pair(state, model_id, pair)
        log(f"  {n}/{len(pairs)} {pair['id']} ({time.perf_counter() - t0:.0f} s)")
    held = probe_cache.model_key(model_id, state)  # the model as loaded: the same key, or the file would never match
    if held != key:
        raise SystemExit(f"the model loaded as {held}, not as planned ({key}): not written")
    with state.model(model_id) as engine:
        record = provenance(engine)
    data = probe_cache.shipped_header(key)
    data["about"] = ("The teaching gallery's probe answers, made by scripts/gallery_answers.py with the default model "
                     "through the probe's stages; used only for the same model, revision, precision, methods and "
                     "settings (accapp/service/probe_cache.py).")
    data["provenance"] = {k: record.get(k) for k in ("model_id", "hub_id", "weights", "dtype", "quantization", "device",
                                                      "convention", "app_version", "torch_version",
                                                      "transformers_version", "python_version")}
    data["provenance"]["date_utc"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    data["methods"] = method_ids(get_spec(model_id).kind)
    data["pairs"] = out
    state.stop()
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=probe_cache.SHIPPED_PATH)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--pairs", default=None, help="comma-separated gallery ids (default: every pair)")
    args = ap.parse_args()
    ids = [p for p in args.pairs.split(",") if p] if args.pairs else None
    data = make(args.model, ids)
    probe_cache.write_json_atomic(args.out, data)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KB, {len(data['pairs'])} pairs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
