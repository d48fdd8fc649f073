"""A probe result as files a researcher can keep and cite: JSON and CSV.

Both hold, for each model shown: per-word and per-token surprisal (nats and bits, 1 bit = ln 2
nats), every method's scores and verdicts (each template and answer order), the exact strings
each method fed the model (Engine.prompts_for: the engine's own prompt building), and the
provenance record (accapp.service.provenance: model id, SHA-256 of the weight files,
versions, dtype, quantization, device, convention, UTC date).

The CSV is ONE long ("tidy") table, what pandas and a spreadsheet filter best: one row per
(model, sentence, word) and per (model, sentence, token) for surprisal, one row per method
judgment, one per prompt string and one per provenance field, and one per candidate of what the
model expected instead (expected_word: at each word, the tokens that would begin it; expected_token:
at each token position; service/expected.py); the ``record`` column says which (word / token /
judgment / prompt / provenance / region / spillover / context / expected_word / expected_token) and
columns that do not apply to a record are empty. ``pd.read_csv(f).query("record == 'word'")`` gives
the word surprisals.

Files are written atomically (a temporary name, then a rename) into one folder that keeps the
newest KEEP_FILES files (older ones are deleted): a busy app never fills its disk with exports.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

from accapp.files import CSV_ENCODING, rows_csv_text, safe_name, write_atomic
from accapp.service.expected import export_rows as expected_rows

FORMAT = "accapp-probe-export/1"
KEEP_FILES = 200  # exports kept in the folder (JSON and CSV count one each); older ones are deleted
LN2 = math.log(2)
CSV_COLUMNS = [
    "record", "model_id", "sentence", "sentence_text", "index", "item", "start_char", "end_char",
    "logprob_nats", "surprisal_nats", "surprisal_bits", "sum_of_tokens_surprisal_nats", "sum_of_tokens_surprisal_bits",
    "tokens", "method", "method_name", "family", "template", "variant", "score_good", "score_bad",
    "score_difference", "verdict", "prompt_kind", "prompt_text", "field", "value",
    # what the model expected instead (service/expected.py): probabilities from 0 to 1
    "context_text", "rank", "candidate", "candidate_probability", "candidate_logprob_nats",
    "next_word_begins_probability", "item_word_probability",
]


# ------------------------------------------------------------------------------------------ model side
def engine_extras(engine, good: str, bad: str, methods: list[str], context: str = "") -> dict:
    """What only the engine knows (run it on the model thread): {"prompts": {method: [{kind, text}]},
    "provenance": {...}} for this pair (after its context, if any) and these methods."""
    from accapp.service.provenance import provenance

    pair = engine.check_pair(good, bad, context=context) if context else engine.check_pair(good, bad)
    return {"prompts": {m: engine.prompts_for(pair, m) for m in methods}, "provenance": provenance(engine)}


def report_methods(report: dict) -> list[str]:
    """The method ids a report judged, in order."""
    return list(dict.fromkeys(v["method"] for v in report.get("verdicts") or []))


# ------------------------------------------------------------------------------------------ pure
def token_records(tokens: list[dict]) -> list[dict]:
    """The report's tokens ({token, start, end, logprob in nats}) with units in every name."""
    return [{"index": i, "token": t["token"], "start_char": t["start"], "end_char": t["end"],
             "logprob_nats": t["logprob"], "surprisal_nats": -t["logprob"], "surprisal_bits": -t["logprob"] / LN2}
            for i, t in enumerate(tokens)]


def word_records(words: list[dict]) -> list[dict]:
    """The report's words (the word probability, leading-space corrected where it applies, and the
    plain sum of its tokens) with units in every name."""
    out = []
    for i, w in enumerate(words):
        total = w.get("logprob_sum", w["logprob"])
        out.append({"index": w.get("index", i), "word": w["word"], "start_char": w["start"], "end_char": w["end"],
                    "tokens": list(w.get("tokens") or []), "logprob_nats": w["logprob"],
                    "surprisal_nats": -w["logprob"], "surprisal_bits": -w["logprob"] / LN2,
                    "sum_of_tokens_surprisal_nats": -total, "sum_of_tokens_surprisal_bits": -total / LN2})
    return out


def model_record(report: dict, extras: dict) -> dict:
    """One model's part of the export, from its probe report and engine_extras."""
    words = report.get("words") or {}
    return {
        "model_id": report["model"], "model_name": report.get("model_name"), "kind": report.get("kind"),
        "provenance": extras["provenance"],
        "headline": report.get("headline"), "majority": report.get("majority"), "warnings": report.get("warnings"),
        "word_rule": report.get("word_rule"),
        "words": {k: word_records(words.get(k) or []) for k in ("good", "bad")},
        "tokens": {k: token_records(report["tokens"][k]) for k in ("good", "bad")},
        "methods": report.get("methods"),  # one vote per method (its templates and orders combined by its rule)
        "judgments": report["verdicts"],  # every method x template x answer order; scores in the method's own scale
        "prompts": extras["prompts"],
        "region": report.get("region"),  # the critical region and its spill-over (service/region.py), or None
        "expected": report.get("expected"),  # what the model expected instead, at each word and token
    }


def export_record(reports: list[dict], extras: list[dict], link: str = "") -> dict:
    """The whole export: the pair, the link that reproduces it, and one model_record per model."""
    first = reports[0]
    return {
        "format": FORMAT, "app": "Acceptability Explorer", "link_query": link,
        "good": first["good"], "bad": first["bad"],
        "context": first.get("context"),  # the text both sentences followed (service/context.py), or None
        "units": "logprob_nats: natural-log probability; surprisal_nats = -logprob_nats; "
                 "surprisal_bits = surprisal_nats / ln 2. score_good/score_bad: each method's own scale "
                 "(log-probabilities in nats, or probabilities for the prompting methods). candidate_probability: "
                 "p(candidate token | context_text), from 0 to 1; next_word_begins_probability: the same divided "
                 "by the probability that a new word begins there; item_word_probability: the sentence's own "
                 "word's probability by the word view's rule.",
        "models": [model_record(r, x) for r, x in zip(reports, extras, strict=True)],
    }


def csv_rows(record: dict) -> list[dict]:
    """The export's long table: one dict per row (see the module docstring), keys from CSV_COLUMNS."""
    rows: list[dict] = []
    if record.get("context"):  # the text both sentences followed: one row
        rows.append({"record": "context", "field": "context", "value": record["context"]["text"]})
    for m in record["models"]:
        mid = m["model_id"]
        for field, value in flat_fields(m["provenance"]):
            rows.append({"record": "provenance", "model_id": mid, "field": field, "value": value})
        for side in ("good", "bad"):
            text = record[side]
            for w in m["words"][side]:
                rows.append({"record": "word", "model_id": mid, "sentence": side, "sentence_text": text,
                             "item": w["word"], **{k: v for k, v in w.items() if k != "word"},
                             "tokens": " ".join(map(str, w["tokens"]))})
            for t in m["tokens"][side]:
                rows.append({"record": "token", "model_id": mid, "sentence": side, "sentence_text": text,
                             "item": t["token"], **{k: v for k, v in t.items() if k != "token"}})
        for j in m["judgments"]:
            rows.append({"record": "judgment", "model_id": mid, "method": j["method"], "method_name": j["name"],
                         "family": j["family"], "template": j["template"], "variant": j["variant"],
                         "score_good": j["score_good"], "score_bad": j["score_bad"],
                         "score_difference": j["difference"], "verdict": j["verdict"]})
        rows += region_rows(m.get("region"), mid, record)
        for method, prompts in m["prompts"].items():
            for i, p in enumerate(prompts):
                rows.append({"record": "prompt", "model_id": mid, "method": method, "index": i,
                             "prompt_kind": p["kind"], "prompt_text": p["text"]})
        rows += expected_rows(mid, m.get("expected"), {"good": record["good"], "bad": record["bad"]})
    return rows


def region_rows(region: dict | None, model_id: str, record: dict) -> list[dict]:
    """The critical region's and the spill-over's summed surprisal, one row per sentence and part
    (record "region" or "spillover"; item: their words; start/end: their characters)."""
    rows = []
    for side in ("good", "bad"):
        for part in ("region", "spillover"):
            r = (region or {}).get(side, {}).get(part)
            if r:
                rows.append({"record": part, "model_id": model_id, "sentence": side, "sentence_text": record[side],
                             "item": " ".join(r["words"]), "start_char": r["start"], "end_char": r["end"],
                             "surprisal_nats": r["surprisal_nats"], "surprisal_bits": r["surprisal_bits"]})
    return rows


def flat_fields(obj, prefix: str = ""):
    """(dotted field, scalar) pairs of a nested dict/list (provenance's weights list included)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from flat_fields(v, f"{prefix}{k}.")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from flat_fields(v, f"{prefix}{i}.")
    else:
        yield prefix.rstrip("."), obj


def csv_text(record: dict) -> str:
    """The long table as CSV text, safe in a spreadsheet: the one writer's rules (accapp.files:
    a text cell that would run as a formula gets a leading apostrophe; CRLF line ends)."""
    return rows_csv_text(csv_rows(record), CSV_COLUMNS)


def json_text(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, indent=1, default=str)


# ------------------------------------------------------------------------------------------ files
def file_stem(record: dict, now: float | None = None) -> str:
    """'probe-<models>-<UTC time>-<pid><n>': sortable, unique within a process, safe on any disk."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    models = "+".join(m["model_id"] for m in record["models"])
    return safe_name(f"probe-{models}-{stamp}-{os.getpid()}{next(_SEQ)}")


def _counter():
    n = 0
    while True:
        n += 1
        yield f"-{n}"


_SEQ = _counter()


def prune(folder: Path, keep: int = KEEP_FILES) -> None:
    """Delete all but the newest `keep` export files in the folder."""
    files = sorted((p for p in folder.glob("probe-*") if p.is_file()), key=lambda p: p.stat().st_mtime_ns)
    for p in files[:max(0, len(files) - keep)]:
        try:
            p.unlink()
        except OSError:
            pass  # another request removed it first


def write_table_csv(rows: list[dict], columns: list[str], folder: Path, what: str, keep: int = KEEP_FILES) -> Path:
    """A table the probe made (the many-pairs box's) as a CSV file under the same rules: formula guard,
    BOM, atomic write, the folder pruned to `keep`. Named 'probe-<what>-<UTC time>-<pid><n>.csv'."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = folder / (safe_name(f"probe-{what}-{stamp}-{os.getpid()}{next(_SEQ)}") + ".csv")
    text = rows_csv_text(rows, columns)
    out = write_atomic(path, lambda tmp: tmp.write_bytes(text.encode(CSV_ENCODING)))
    prune(folder, keep)
    return out


def write_exports(record: dict, folder: Path, keep: int = KEEP_FILES) -> tuple[Path, Path]:
    """(JSON path, CSV path) of the export, each written atomically; the folder then pruned to `keep`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stem = file_stem(record)
    js = write_atomic(folder / f"{stem}.json", lambda tmp: tmp.write_text(json_text(record), encoding="utf-8"))
    # UTF-8 with a byte-order mark: Excel then reads Chinese text right; pandas skips the mark.
    cs = write_atomic(folder / f"{stem}.csv", lambda tmp: tmp.write_bytes(csv_text(record).encode(CSV_ENCODING)))
    prune(folder, keep)
    return js, cs
