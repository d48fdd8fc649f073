"""Scoring a file of pairs: one output row per input row, every selected method's scores.

Every row is checked on its own (``engine.check_pairs``): a row that fails (an empty sentence,
one too long, a line of the file that could not be read) gets its message in the ``error``
column and the others are scored. The engine is reached through ``run(fn, *args)``, which calls
``fn(engine, *args)``: the app runs it as a low-priority step on the model
(:meth:`accapp.service.host.AppState.background`, which may raise :class:`ModelBusy`: the step is
tried again after a yield, and after ``ACCAPP_FILE_MAX_WAIT_S`` seconds of waiting it goes in
turn with the probes, so a stream of probes never starves a file), :func:`direct` runs it in place.

Steps are short, so that a probe never waits long for the model and Stop works at once: rows are
checked ``CHECK_ROWS`` at a time, and pairs are scored a few at a time with a few groups of
methods a step (methods that share their model passes go together, :func:`method_groups`), the
pairs and groups of a step chosen from the measured times so that a step takes about
``ACCAPP_FILE_STEP_S`` seconds of model time (0.5; :class:`StepPlanner`). A step that fails is
redone pair by pair, so the failure lands on its row.

What a run can give besides the wide result (:func:`scored_steps` keeps every pair's results):
the long layout (:func:`long_frame`, one row per pair x method x template x answer order, the
columns of ``accapp.score_pairs``), each sentence's tokens and words with their surprisal
(:func:`token_frame`, from the same model passes as the scores: ``Engine.score_pairs(words=True)``),
accuracy by phenomenon (:func:`phenomenon_summary`: the papers' strict rule, and beside it the
project's with ties within each method's tolerance wrong, as in accapp.analysis.accuracy; rows
flagged "identical", a pair whose sentences are the same after normalisation, left out and
counted) and
the metadata record (:func:`metadata`: ``provenance(engine)`` and the input file's name, SHA-256,
rows, methods, layout, failed rows).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import math
import os
import re
import time
from pathlib import Path

import pandas as pd

from accapp import settings
from accapp.benchmarks import MAX_FILE_BYTES, parse_pairs
from accapp.engine import PairResult
from accapp.errors import UserError, shown
from accapp.languages import name as language_name
from accapp.methods import describe, parse_ids, pass_group_order, resolve
from accapp.models import get_spec
from accapp.schema import ENSEMBLE_METHODS, FLAG_IDENTICAL, normalised, pair_flag
from accapp.service.gpu import model_call
from accapp.service.host import QUIET_STEP_S, STEP_S, ModelBusy  # noqa: F401 - ModelBusy: the steps' name for it
from accapp.service.messages import message_of
from accapp.service.probe import language_mismatch, majority, model_spec
from accapp.service.provenance import provenance
from accapp.service.units import file_unit, round_percent

MAX_ROWS = settings.integer("ACCAPP_UI_MAX_ROWS")
MAX_UPLOAD_BYTES = min(MAX_FILE_BYTES, int(settings.number("ACCAPP_MAX_UPLOAD_MB") * 1024 * 1024))
MAX_CHUNK = 32  # pairs in one step at most
CHECK_ROWS = 256  # rows checked (tokenized) in one step
LAYOUTS = ("wide", "long")  # wide: one row per input row (the default); long: one per pair x judgment
# accapp.score_pairs' columns: the long layout has them (after the input's own columns and row).
LONG_COLUMNS = ["pair", "good", "bad", "method", "template", "variant", "score_good", "score_bad", "verdict",
                "prediction", "len_good", "len_bad", "flag"]
# the long file's columns: score_pairs' with each row's score unit after its scores (the method's descriptor)
FILE_LONG_COLUMNS = LONG_COLUMNS[:LONG_COLUMNS.index("score_bad") + 1] + ["score_unit"] + \
    LONG_COLUMNS[LONG_COLUMNS.index("score_bad") + 1:]
TOKEN_COLUMNS = ["row", "side", "unit", "index", "text", "start", "end", "tokens", "word_index", "logprob_nats",
                 "surprisal_nats", "surprisal_bits", "logprob_sum_nats", "correction_applies"]
# accuracy_percent: the papers' rule (right when score_good > score_bad); accuracy_ties_wrong_percent: the
# project's (ties within the method's tolerance wrong, `ties` of them); left_out: pairs flagged "identical"
SUMMARY_COLUMNS = ["phenomenon", "method", "pairs", "judgments", "ties", "correct", "accuracy_percent",
                   "accuracy_ties_wrong_percent", "left_out"]


def direct(engine):
    """A `run` for an engine in hand: run(fn, *args) = fn(engine, *args) (``waited``, how long the
    step has waited for the model, matters only to the app's run)."""
    return lambda fn, *args, waited=0.0: fn(engine, *args)


def column_name(method: str, template: str, variant: str, field: str, unit: str = "") -> str:
    """'lp: score_good', 'in_template_lp [2]: verdict', 'ab_prompting [1, good=A]: score_bad';
    with a unit: 'lp: score_good (nats)', 'yes_no_prob_comp [1]: score_bad (P(Yes))'."""
    tag = [t for t in ((template if template not in ("-", "") else ""), variant) if t]
    return f"{method}{' [' + ', '.join(tag) + ']' if tag else ''}: {field}" + (f" ({unit})" if unit else "")


WHOLE_COLUMNS = ("tokens_good", "tokens_bad", "judgments_for_good", "judgments_for_bad")  # counts: integers in the CSV


def result_columns(result: PairResult) -> dict:
    """One scored pair's output columns: token counts, the majority, every judgment's scores and verdict."""
    maj = majority(result.scores)
    out = {"tokens_good": result.len_good, "tokens_bad": result.len_bad, "majority_verdict": maj["verdict"],
           "judgments_for_good": maj["good"], "judgments_for_bad": maj["bad"]}
    for s in result.scores:
        unit = file_unit(s.method)  # a score's unit in its column's name (the method's descriptor)
        for field, value, u in (("score_good", s.score_good, unit), ("score_bad", s.score_bad, unit),
                                ("verdict", s.verdict, "")):
            out[column_name(s.method, str(s.template), str(s.variant), field, u)] = value
    for method, why in result.unavailable.items():  # a method the model cannot run: the reason, in place of scores
        out[column_name(method, "-", "", "unavailable")] = why
    return out


@dataclasses.dataclass
class Upload:
    """An uploaded file's pairs and what its metadata says of it."""

    pairs: pd.DataFrame
    name: str
    sha256: str
    bytes: int
    has_phenomenon: bool  # the file has a ``phenomenon`` column (parse_pairs fills "all" where not)


def read_upload(path) -> tuple[pd.DataFrame, str]:
    """The pairs of an uploaded CSV / JSONL file (a path or a file object with .name) and its file name.

    The size is checked before the file is read; a line that cannot be read becomes its row's
    error (an ``error`` column), the others are scored.
    """
    up = read_upload_info(path)
    return up.pairs, up.name


def read_upload_info(path) -> Upload:
    """read_upload, with the file's SHA-256, size and whether it has a phenomenon column."""
    if not path:
        raise UserError("Upload a CSV or JSONL file of pairs first.")
    path = Path(path if isinstance(path, (str, os.PathLike)) else getattr(path, "name", ""))
    if not path.is_file():
        raise UserError("The uploaded file is gone from the server (an upload is removed once scored, and after an hour): upload it again.")
    check_upload_size(path.stat().st_size)
    data = path.read_bytes()
    # the app's own row limit, so the message names the limit that applies (and parsing stops there)
    pairs = parse_pairs(data, path.name, bad_lines="row", max_rows=MAX_ROWS)
    return Upload(pairs, path.name, hashlib.sha256(data).hexdigest(), len(data), _has_column(data, path.name, "phenomenon"))


def _has_column(data: bytes, name: str, column: str) -> bool:
    """Whether a CSV/TSV header names ``column``, or a JSONL record has it as a key (parse_pairs has
    read the file by now, so it decodes)."""
    try:
        text = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False
    if Path(name).suffix.lower() in (".jsonl", ".json", ".ndjson"):
        return re.search(r'"' + re.escape(column) + r'"\s*:', text) is not None
    first = next(iter(text.splitlines()), "")
    header = next(csv.reader(io.StringIO(first), delimiter="\t" if name.lower().endswith(".tsv") else ","), [])
    return column in {h.strip().lower() for h in header}


def check_upload_size(size: int) -> None:
    if size > MAX_UPLOAD_BYTES:
        raise UserError(f"The file is {size / 1e6:.1f} MB; this app takes files up to {MAX_UPLOAD_BYTES / 1e6:.0f} MB.")


def check_methods(model_id: str, methods) -> list[str]:
    """The method ids of a request, repeats dropped, before anything loads (a list over
    accapp.errors.MAX_METHOD_IDS ids is refused, as is a method the model's kind cannot run)."""
    spec = model_spec(model_id)
    methods = parse_ids(methods or []) or []  # the cap and the types, as every entry point checks them
    if not methods:
        raise UserError("Pick at least one method.")
    resolve(methods, spec.kind)
    return methods


def check_request(pairs: pd.DataFrame, model_id: str, methods: list[str]) -> list[str]:
    """What can fail before the model loads: the model, the methods for its kind, the file's size."""
    methods = check_methods(model_id, methods)
    if len(pairs) > MAX_ROWS:
        raise UserError(f"The file has {len(pairs):,} rows; this app scores at most {MAX_ROWS:,} at a time. "
                        "Split the file, or run `python -m accapp bench --benchmark FILE` on your own machine.")
    return methods


def method_groups(kind: str, methods: list[str]) -> list[list[str]]:
    """The methods in groups, each group's methods sharing their model passes (their descriptors' pass
    group, accapp/methods/data/methods.json), the shared groups first in the descriptors' order (the
    ensembles next to the in-template LP and Yes/No groups whose strings they reuse, so that one step
    can hold them all), then each other group in the order asked."""
    groups: dict[str, list[str]] = {}
    for m in resolve(methods, kind):
        groups.setdefault(describe(m.id).pass_group, []).append(m.id)
    order = pass_group_order()
    return [groups[k] for k in sorted(groups, key=lambda k: order.index(k) if k in order else len(order))]


class StepPlanner:
    """How much one step holds: k pairs, and a run of method groups whose measured model time for
    k pairs stays within STEP_S (at least one group, one pair). A group's time a pair is learnt from
    the steps (a group not yet measured goes alone)."""

    def __init__(self, groups: list[list[str]], target=STEP_S) -> None:
        self.groups = groups
        self._target = target  # seconds, or a function giving them (they may change between steps)
        self.cost: dict[int, float] = {}  # group index -> seconds a pair (the latest measurement)

    @property
    def target(self) -> float:
        return float(self._target() if callable(self._target) else self._target)

    def pairs(self) -> int:
        if len(self.cost) < len(self.groups):
            return 1
        return max(1, min(MAX_CHUNK, int(self.target / max(max(self.cost.values()), 1e-6))))

    def bundles(self, k: int) -> list[list[int]]:
        out: list[list[int]] = []
        target = self.target
        for g in range(len(self.groups)):
            known = g in self.cost and (not out or all(i in self.cost for i in out[-1]))
            if out and known and (sum(self.cost[i] for i in out[-1]) + self.cost[g]) * k <= target:
                out[-1].append(g)
            else:
                out.append([g])
        return out

    def measured(self, bundle: list[int], k: int, seconds: float) -> None:
        per_pair = seconds / max(1, k)
        if len(bundle) == 1:
            self.cost[bundle[0]] = per_pair
            return
        predicted = sum(self.cost[i] for i in bundle) or 1e-6
        for i in bundle:  # scaled by how the bundle compared with its prediction
            self.cost[i] *= per_pair / predicted


def check_rows(engine, pairs: pd.DataFrame) -> tuple[list[tuple[int, object]], dict[int, str]]:
    """([(row index, checked Pair)], {row index: message}) over every row of the file."""
    rows = zip(pairs["good"], pairs["bad"], contexts(pairs))
    return engine.check_pairs((i, good, bad, None, *([ctx] if ctx else [])) for i, (good, bad, ctx) in enumerate(rows))


def contexts(pairs: pd.DataFrame) -> list[str]:
    """Each row's context (the file's optional `context` column: text both sentences follow; "" = none)."""
    if "context" not in pairs:
        return [""] * len(pairs)
    return ["" if c is None or (isinstance(c, float) and c != c) else str(c) for c in pairs["context"]]


def _check(engine, rows):
    return engine.check_pairs((i, good, bad, None, *([ctx] if ctx else [])) for i, good, bad, ctx in rows)


@model_call(lambda pairs, methods, *_, **__: (len(pairs), len(methods)))
def _score(engine, pairs, methods) -> list[dict]:
    return [result_columns(r) for r in engine.score_pairs(pairs, methods)]


@model_call(lambda pairs, methods, *_, **__: (len(pairs), len(methods)))
def _score_timed(engine, pairs, methods, words=False) -> tuple[list[PairResult], float]:
    t = time.perf_counter()
    # words=True: each result also has its sentences' words, from the same passes (Engine.score_pairs)
    out = engine.score_pairs(pairs, methods, words=True) if words else engine.score_pairs(pairs, methods)
    return out, time.perf_counter() - t


def _itself(engine):
    return engine


def _call(run, fn, *args, waiting=None):
    """run(fn, *args, waited=seconds), yielding ``waiting`` each time the model is busy (a step Stop
    can end); ``waited`` tells the app how long this step has waited (it goes first after a while)."""
    first = None
    while True:
        try:
            return run(fn, *args, waited=0.0 if first is None else time.monotonic() - first)
        except ModelBusy:
            first = time.monotonic() if first is None else first
            yield waiting


def _merge(parts: list[PairResult], order: dict[str, int]) -> PairResult:
    """One pair's results from several groups of methods: the scores in the request's method order
    (tokens and words from the first group's call, the one asked for words)."""
    scores = sorted((s for p in parts for s in p.scores), key=lambda s: order.get(s.method, len(order)))
    return dataclasses.replace(parts[0], scores=scores)


@dataclasses.dataclass
class Scored:
    """A scored file: the input (``row``, ``model``, ``error`` added) and each scored row's results."""

    base: pd.DataFrame
    results: dict[int, PairResult]  # row index (0-based) -> its results; failed rows are absent
    model_id: str
    methods: list[str]
    engine: object = None  # the engine that scored (for provenance); None when no row was scored

    @property
    def failed(self) -> int:
        return int((self.base["error"] != "").sum())

    def wide(self) -> pd.DataFrame:
        """One row per input row: the input, ``row``, ``model``, ``error``, then every judgment's columns."""
        scores = pd.DataFrame([result_columns(self.results[i]) if i in self.results else {} for i in range(len(self.base))])
        for col in WHOLE_COLUMNS:  # whole numbers, also beside a failed row's empty cells (not 12.0)
            if col in scores:
                scores[col] = scores[col].astype("Int64")
        return pd.concat([self.base, scores], axis=1)


def scored_steps(pairs: pd.DataFrame, model_id: str, methods: list[str], *, run, progress=None, target=STEP_S,
                 words: bool = False):
    """score_steps, returning a :class:`Scored` (every pair's results kept, for the long layout and
    the tokens); ``words``: each result also carries its sentences' words (the tokens always come)."""
    methods = check_request(pairs, model_id, methods)
    total = len(pairs)
    errors: dict[int, str] = {}
    if "error" in pairs:  # lines the parser could not read (datasets.parse_pairs(bad_lines="row"))
        errors = {i: str(e) for i, e in enumerate(pairs["error"]) if e}
        pairs = pairs.drop(columns=["error"])
    todo = [(i, g, b, c) for i, (g, b, c) in enumerate(zip(pairs["good"], pairs["bad"], contexts(pairs))) if i not in errors]
    valid: list = []
    for start in range(0, len(todo), CHECK_ROWS):
        ok, bad = yield from _call(run, _check, todo[start:start + CHECK_ROWS], waiting=(len(errors), total))
        valid += ok
        errors.update(bad)
    done = len(errors)
    if progress is not None:
        progress((done, total), desc="Scoring pairs", unit="pairs")
    yield done, total
    groups = method_groups(get_spec(model_id).kind, methods)
    planner = StepPlanner(groups, target)
    order = {m: n for n, m in enumerate(methods)}
    results: dict[int, PairResult] = {}
    start = 0
    while start < len(valid):
        k = planner.pairs()
        chunk = valid[start:start + k]
        try:
            parts: list[list[PairResult]] = [[] for _ in chunk]
            for n_bundle, bundle in enumerate(planner.bundles(len(chunk))):
                wanted = [m for g in bundle for m in groups[g]]
                out, seconds = yield from _call(run, _score_timed, [p for _, p in chunk], wanted, words and n_bundle == 0,
                                                waiting=(done, total))
                planner.measured(bundle, len(chunk), seconds)
                for n, r in enumerate(out):
                    parts[n].append(r)
                yield done, total  # a step is one bundle: Stop and probes wait for one bundle at most
            for (i, _), pair_parts in zip(chunk, parts):
                results[i] = _merge(pair_parts, order)
        except Exception:  # noqa: BLE001 - redo the chunk pair by pair to pin the failure on its row
            for i, p in chunk:
                try:
                    pair_parts = []
                    for n_group, group in enumerate(groups):
                        out, _ = yield from _call(run, _score_timed, [p], group, words and n_group == 0, waiting=(done, total))
                        pair_parts.append(out[0])
                        yield done, total  # here too a step is one call
                    results[i] = _merge(pair_parts, order)
                except Exception as exc:  # noqa: BLE001
                    errors[i] = message_of(exc)
        start += len(chunk)
        done += len(chunk)
        if progress is not None:
            progress((done, total), desc="Scoring pairs", unit="pairs")
        yield done, total
    base = pairs.reset_index(drop=True).copy()
    base.insert(0, "row", range(1, total + 1))
    base["model"] = model_id
    base["error"] = [errors.get(i, "") for i in range(total)]
    base["flag"] = row_flags(base)
    engine = None
    if results:  # the engine itself, for the provenance (a step of its own: the app's engine lives with the model)
        engine = yield from _call(run, _itself, waiting=(done, total))
    return Scored(base, results, model_id, methods, engine)


def row_flags(base: pd.DataFrame) -> list[str]:
    """Each row's flag: "identical" (its two sentences are the same after normalisation: no pair, left
    out of accuracy), "repeats row N" (the same pair as an earlier row: scored and counted), else ''."""
    first: dict[tuple[str, str], int] = {}
    out = []
    for row, good, bad, error in zip(base["row"], base["good"], base["bad"], base["error"]):
        if error:  # a row that could not be read or checked has its error, not a flag
            out.append("")
            continue
        key = (normalised(good), normalised(bad))
        flag = pair_flag(good, bad)
        if not flag and key in first:
            flag = f"repeats row {first[key]}"
        first.setdefault(key, int(row))
        out.append(flag)
    return out


def flag_counts(base: pd.DataFrame) -> dict[str, int]:
    """{"identical": rows left out of accuracy, "repeated": rows repeating an earlier row} of a scored file."""
    flags = base["flag"] if "flag" in base else pd.Series([], dtype=str)
    return {"identical": int((flags == FLAG_IDENTICAL).sum()), "repeated": int(flags.str.startswith("repeats").sum())}


def flag_notes(base: pd.DataFrame) -> list[str]:
    """The file summary's sentences about flagged rows (plain text; empty when none)."""
    counts, out = flag_counts(base), []
    if counts["identical"]:
        rows = base.loc[base["flag"] == FLAG_IDENTICAL, "row"].head(5).astype(int).tolist()
        out.append(f"{counts['identical']} row{'s' if counts['identical'] != 1 else ''} (row {', '.join(map(str, rows))}"
                   f"{', ...' if counts['identical'] > 5 else ''}) hold two identical sentences: no pair, every method ties. "
                   "Flagged \"identical\" and left out of the accuracy.")
    if counts["repeated"]:
        out.append(f"{counts['repeated']} row{'s' if counts['repeated'] != 1 else ''} repeat an earlier row's pair "
                   "(flagged \"repeats row N\"); each is scored and counted.")
    return out


def language_notes(base: pd.DataFrame, languages) -> list[str]:
    """The file summary's sentence about rows in a language the model was not made for, as the probe says it
    of a pair (service.probe.language_mismatch, row by row); empty when there are none, or when the model's
    languages are unknown (a model the registry does not list)."""
    if not languages or base is None or base.empty or not {"good", "bad"} <= set(base.columns):
        return []
    by_lang: dict[str, list[int]] = {}
    rows = base["row"] if "row" in base else pd.Series(range(1, len(base) + 1), index=base.index)
    for row, good, bad in zip(rows, base["good"], base["bad"]):
        lang = language_mismatch(languages, str(good or ""), str(bad or ""))
        if lang is not None:
            by_lang.setdefault(lang, []).append(int(row))
    out = []
    for lang, found in by_lang.items():
        n = len(found)
        shown_rows = ", ".join(map(str, found[:5])) + (", ..." if n > 5 else "")
        out.append(f"{n} row{'s' if n != 1 else ''} (row {shown_rows}) look{'s' if n == 1 else ''} "
                   f"{language_name(lang)}, a language this model was not made for ({', '.join(languages)}): "
                   "expect poor judgments there.")
    return out


def score_steps(pairs: pd.DataFrame, model_id: str, methods: list[str], *, run, progress=None, target=STEP_S):
    """Score a frame of pairs in short steps: yields (rows done, rows) after each step and returns
    the result frame (the input, ``row``, ``model``, ``error``, then the scores). ``target``: the
    model seconds a step aims at, or a function giving them before each step.

    The app's handlers are generators over these steps: Gradio can stop a generator between
    two steps (the Stop button, /cancel), where a plain function would run to its end.
    """
    scored = yield from scored_steps(pairs, model_id, methods, run=run, progress=progress, target=target)
    return scored.wide()


def finish(steps):
    """Run a step generator to its end; return what it returns."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def score_frame(pairs: pd.DataFrame, model_id: str, methods: list[str], *, run, progress=None) -> pd.DataFrame:
    """score_steps run to its end: the result frame."""
    return finish(score_steps(pairs, model_id, methods, run=run, progress=progress))


# ---- what a run can give besides the wide result ---------------------------------------------
def check_layout(layout) -> str:
    layout = str(layout or "wide").strip().lower()
    if layout not in LAYOUTS:
        raise UserError(f"The layout must be one of {', '.join(LAYOUTS)}, not '{shown(layout)}'.")
    return layout


def long_frame(scored: Scored) -> pd.DataFrame:
    """One row per pair x method x template x answer order: ``row`` and the input's columns, then
    accapp.score_pairs' columns (``pair`` is the row's 0-based position; ``score_unit`` after the
    scores: nats, nats/token, P(Yes) or share of draws), then ``model`` and
    ``error``. A row that failed keeps one line, with its ``error`` and no scores."""
    inputs = [c for c in scored.base.columns if c not in ("good", "bad", "model", "error", "flag")]
    out = []
    for i, rec in enumerate(scored.base.to_dict("records")):
        head = {c: rec[c] for c in inputs}
        tail = {"model": rec["model"], "error": rec["error"]}
        res = scored.results.get(i)
        base = {"pair": i, "good": rec["good"], "bad": rec["bad"], "flag": rec.get("flag", "")}
        if res is None:
            out.append({**head, **base, **tail})
            continue
        base = {**base, "good": res.pair.good, "bad": res.pair.bad}
        for s in res.scores:
            out.append({**head, **base, **s.as_dict(), "score_unit": file_unit(s.method), "len_good": res.len_good,
                        "len_bad": res.len_bad, "flag": base["flag"], **tail})
    df = pd.DataFrame(out, columns=inputs + FILE_LONG_COLUMNS + ["model", "error"])
    for col in ("len_good", "len_bad"):  # whole numbers, also beside a failed row's empty cells
        df[col] = df[col].astype("Int64")
    return df


def token_frame(scored: Scored) -> pd.DataFrame:
    """Each scored sentence's tokens and words (``unit``), one row each: ``row`` (as in the
    results), ``side`` (good/bad), ``index``, ``text``, character ``start``/``end``, log-probability
    and surprisal in nats and bits. A token row: its own log-prob (the model's; LP sums them) and
    ``word_index``, the word it belongs to; a word row (accapp/words.py, as the probe shows
    them): its ``tokens`` and the word's log-prob (a causal LM's corrected for a leading-space
    tokenizer, Pimentel & Meister 2024; ``logprob_sum_nats`` the plain sum of its tokens)."""
    ln2 = math.log(2)
    rows = []
    for i in sorted(scored.results):
        res = scored.results[i]
        for side in ("good", "bad"):
            words = (res.words or {}).get(side) or []
            word_of = {t: w["index"] for w in words for t in w["tokens"]}
            for k, t in enumerate(res.tokens[side]):
                lp = float(t["logprob"])
                rows.append({"row": i + 1, "side": side, "unit": "token", "index": k, "text": t["token"],
                             "start": t["start"], "end": t["end"], "tokens": str(k), "word_index": word_of.get(k),
                             "logprob_nats": lp, "surprisal_nats": -lp, "surprisal_bits": -lp / ln2,
                             "logprob_sum_nats": lp, "correction_applies": False})
            for w in words:
                lp = float(w["logprob"])
                rows.append({"row": i + 1, "side": side, "unit": "word", "index": w["index"], "text": w["word"],
                             "start": w["start"], "end": w["end"], "tokens": " ".join(str(t) for t in w["tokens"]),
                             "word_index": w["index"], "logprob_nats": lp, "surprisal_nats": -lp,
                             "surprisal_bits": -lp / ln2, "logprob_sum_nats": float(w["logprob_sum"]),
                             "correction_applies": bool(w["correction_applies"])})
    df = pd.DataFrame(rows, columns=TOKEN_COLUMNS)
    df["word_index"] = df["word_index"].astype("Int64")
    return df


def judgments(long: pd.DataFrame) -> pd.DataFrame:
    """The long layout's scored lines with ``correct`` and ``tie`` as the benchmark runs count them
    (accapp/runner/runner.py, accapp/analysis/accuracy.py): ``correct`` the papers' rule (score_good
    > score_bad), ``correct_ties_wrong`` the project's (the verdict is "good": a tie within the
    method's tolerance is wrong), an ensemble's both the share of its seeded draws that were right,
    and never a tie. Lines flagged "identical" (no pair) are left out."""
    ok = long[(long["error"] == "") & long["method"].notna()].copy()
    if "flag" in ok:
        ok = ok[ok["flag"].fillna("") != FLAG_IDENTICAL]
    ens = ok["method"].isin(list(ENSEMBLE_METHODS))
    share = ok["score_good"].astype(float)
    ok["correct"] = (ok["score_good"].astype(float) > ok["score_bad"].astype(float)).astype(float).where(~ens, share)
    ok["correct_ties_wrong"] = (ok["verdict"] == "good").astype(float).where(~ens, share)
    ok["tie"] = (ok["verdict"] == "tie") & ~ens
    return ok


def phenomenon_summary(long: pd.DataFrame, methods: list[str] | None = None) -> pd.DataFrame:
    """Accuracy (%) by phenomenon and method over the scored rows: ``pairs`` (rows scored),
    ``judgments`` (pair x template x answer order), ``ties`` (within the method's tolerance), ``correct``,
    ``accuracy_percent`` = 100 x mean correct over the judgments by the papers' rule (score_good >
    score_bad), and beside it ``accuracy_ties_wrong_percent``, the project's (ties wrong), both rounded
    to what their number of judgments supports (accapp.service.units.round_percent);
    ``left_out``: pairs flagged "identical", in no accuracy (a phenomenon's accuracy is the mean over
    its items, as in accapp.analysis.accuracy). Phenomena in order of first appearance, methods in
    the request's order."""
    ok = judgments(long)
    if ok.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    ok["phenomenon"] = ok["phenomenon"].astype(str)
    out = ok.groupby(["phenomenon", "method"], sort=False).agg(
        pairs=("pair", "nunique"), judgments=("correct", "size"), ties=("tie", "sum"), correct=("correct", "sum"),
        accuracy=("correct", "mean"), accuracy_ties_wrong=("correct_ties_wrong", "mean")).reset_index()
    # percentages to what their judgments support (whole percents below 10, else 0.1 %)
    out["accuracy_percent"] = [round_percent(100 * a, n) for a, n in zip(out["accuracy"], out["judgments"])]
    out["accuracy_ties_wrong_percent"] = [round_percent(100 * a, n) for a, n in
                                          zip(out["accuracy_ties_wrong"], out["judgments"])]
    flagged = long[(long["error"] == "") & long["method"].notna() & (long.get("flag", "") == FLAG_IDENTICAL)]
    left = flagged.assign(phenomenon=flagged["phenomenon"].astype(str)).groupby(["phenomenon", "method"]).pair.nunique()
    out["left_out"] = [int(left.get((p, m), 0)) for p, m in zip(out["phenomenon"], out["method"])]
    only_flagged = [k for k in left.index if k not in set(zip(out["phenomenon"], out["method"]))]
    if only_flagged:  # a phenomenon whose every pair was left out: its row says so, with no accuracy
        out = pd.concat([out, pd.DataFrame([{"phenomenon": p, "method": m, "pairs": 0, "judgments": 0, "ties": 0,
                                             "correct": 0.0, "left_out": int(left[(p, m)])} for p, m in only_flagged])],
                        ignore_index=True)
    out["ties"] = out["ties"].astype(int)
    order = {m: n for n, m in enumerate(methods or [])}
    first = {p: n for n, p in enumerate(dict.fromkeys(ok["phenomenon"]))}
    out = out.sort_values(["phenomenon", "method"], key=lambda c: c.map(first) if c.name == "phenomenon"
                          else c.map(lambda m: order.get(m, len(order)))).reset_index(drop=True)
    return out[SUMMARY_COLUMNS]


def metadata(scored: Scored, upload: Upload, layout: str, tokens: bool, files: dict[str, str]) -> dict:
    """The sidecar's record: the provenance of the engine that scored (accapp.service.provenance)
    and the input file's name, SHA-256 and rows, the methods, the layout, how many rows failed, and
    the files written."""
    if scored.engine is not None:
        try:
            prov = provenance(scored.engine)
        except Exception as exc:  # noqa: BLE001 - the results stand; the record says what it lacks
            prov = {"model_id": scored.model_id, "error": f"provenance unavailable: {message_of(exc)}"}
    else:
        prov = {"model_id": scored.model_id, "error": "no row was scored, so no model ran"}
    return {
        "provenance": prov,
        "input": {"file": upload.name, "sha256": upload.sha256, "bytes": upload.bytes, "rows": len(scored.base),
                  "has_phenomenon": upload.has_phenomenon},
        "model": scored.model_id,
        "methods": scored.methods,
        # methods the model cannot run, with the reason (none when no row was scored)
        "methods_unavailable": scored.engine.unavailable_for(scored.methods) if scored.engine is not None else {},
        "format": layout,
        "tokens": bool(tokens),
        "rows": len(scored.base),
        "rows_scored": len(scored.base) - scored.failed,
        "rows_failed": scored.failed,
        # rows whose sentences are identical (left out of accuracy), rows repeating an earlier row's pair
        "rows_identical": flag_counts(scored.base)["identical"],
        "rows_repeated": flag_counts(scored.base)["repeated"],
        "files": files,
    }
