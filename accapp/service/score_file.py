"""Scoring a file of pairs: one output row per input row, every selected method's scores.

Every row is checked on its own (``engine.check_pairs``): a row that fails (an empty sentence,
one too long, a line of the file that could not be read) gets its message in the ``error``
column and the others are scored. The engine is reached through ``run(fn, *args)``, which calls
``fn(engine, *args)``: the app runs it as a low-priority step on the model
(:meth:`accapp.ui.state.AppState.background`, which may raise :class:`ModelBusy`: the step is
tried again after a yield, and after ``ACCAPP_FILE_MAX_WAIT_S`` seconds of waiting it goes in
turn with the probes, so a stream of probes never starves a file), :func:`direct` runs it in place.

Steps are short, so that a probe never waits long for the model and Stop works at once: rows are
checked ``CHECK_ROWS`` at a time, and pairs are scored a few at a time with a few groups of
methods a step (methods that share their model passes go together, :func:`method_groups`), the
pairs and groups of a step chosen from the measured times so that a step takes about
``ACCAPP_FILE_STEP_S`` seconds of model time (0.5; :class:`StepPlanner`). A step that fails is
redone pair by pair, so the failure lands on its row.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pandas as pd

from accapp.engine import PairResult
from accapp.errors import UserError
from accapp.methods import resolve
from accapp.models import get_spec
from accapp.runner.datasets import MAX_FILE_BYTES, parse_pairs
from accapp.service.messages import message_of
from accapp.service.probe import majority

MAX_ROWS = int(os.environ.get("ACCAPP_UI_MAX_ROWS", "5000") or 5000)
MAX_UPLOAD_BYTES = min(MAX_FILE_BYTES, int(float(os.environ.get("ACCAPP_MAX_UPLOAD_MB", "20") or 20) * 1024 * 1024))
MAX_METHOD_IDS = 64  # a request's list of method ids (there are 23 methods; repeats are dropped)
STEP_S = float(os.environ.get("ACCAPP_FILE_STEP_S", "0.5") or 0.5)  # the model time one step aims at
# ... and when no probe came for a while (the app's AppState.step_target): longer steps lose less to
# splitting the methods, and the first probe to come waits for one of them at most.
QUIET_STEP_S = float(os.environ.get("ACCAPP_FILE_QUIET_STEP_S", "2") or 2)
MAX_CHUNK = 32  # pairs in one step at most
CHECK_ROWS = 256  # rows checked (tokenized) in one step
# Methods whose model passes are shared go in one step (the same strings); each other method alone.
SHARED_GROUPS = {"sentence probability": "sentence", "normalised probability": "sentence", "ensemble": "ensemble"}
IN_TEMPLATE_SINGLE = {"in_template_lp", "in_template_mean_lp", "in_template_pen_lp"}


class ModelBusy(Exception):
    """A step could not have the model within its wait (interactive requests came first): yield, then retry."""


def direct(engine):
    """A `run` for an engine in hand: run(fn, *args) = fn(engine, *args) (``waited``, how long the
    step has waited for the model, matters only to the app's run)."""
    return lambda fn, *args, waited=0.0: fn(engine, *args)


def column_name(method: str, template: str, variant: str, field: str) -> str:
    """'lp: score_good', 'in_template_lp [2]: verdict', 'ab_prompting [1, good=A]: score_bad'."""
    tag = [t for t in ((template if template not in ("-", "") else ""), variant) if t]
    return f"{method}{' [' + ', '.join(tag) + ']' if tag else ''}: {field}"


def result_columns(result: PairResult) -> dict:
    """One scored pair's output columns: token counts, the majority, every judgment's scores and verdict."""
    maj = majority(result.scores)
    out = {"tokens_good": result.len_good, "tokens_bad": result.len_bad, "majority_verdict": maj["verdict"],
           "judgments_for_good": maj["good"], "judgments_for_bad": maj["bad"]}
    for s in result.scores:
        for field, value in (("score_good", s.score_good), ("score_bad", s.score_bad), ("verdict", s.verdict)):
            out[column_name(s.method, str(s.template), str(s.variant), field)] = value
    return out


def read_upload(path) -> tuple[pd.DataFrame, str]:
    """The pairs of an uploaded CSV / JSONL file (a path or a file object with .name) and its file name.

    The size is checked before the file is read; a line that cannot be read becomes its row's
    error (an ``error`` column), the others are scored.
    """
    if not path:
        raise UserError("Upload a CSV or JSONL file of pairs first.")
    path = Path(path if isinstance(path, (str, os.PathLike)) else getattr(path, "name", ""))
    if not path.is_file():
        raise UserError("The uploaded file is gone from the server (an upload is removed once scored, and after an hour): upload it again.")
    check_upload_size(path.stat().st_size)
    return parse_pairs(path.read_bytes(), path.name, bad_lines="row"), path.name


def check_upload_size(size: int) -> None:
    if size > MAX_UPLOAD_BYTES:
        raise UserError(f"The file is {size / 1e6:.1f} MB; this app takes files up to {MAX_UPLOAD_BYTES / 1e6:.0f} MB.")


def check_methods(model_id: str, methods) -> list[str]:
    """The method ids of a request, repeats dropped, before anything loads (a list over
    MAX_METHOD_IDS ids is refused, as is a method the model's kind cannot run)."""
    spec = get_spec(model_id)
    methods = list(methods or [])
    if len(methods) > MAX_METHOD_IDS:
        raise UserError(f"{len(methods):,} method ids were sent; at most {MAX_METHOD_IDS} are accepted.")
    methods = list(dict.fromkeys(str(m) for m in methods))
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
    """The methods in groups, each group's methods sharing their model passes; the ensembles next to
    the in-template LP and Yes/No groups whose strings they reuse, so that one step can hold them all."""
    groups: dict[str, list[str]] = {}
    for m in resolve(methods, kind):
        key = "in_template" if m.id in IN_TEMPLATE_SINGLE else SHARED_GROUPS.get(m.family, m.id)
        groups.setdefault(key, []).append(m.id)
    near = {"sentence": 0, "in_template": 1, "yes_no_prob_comp": 2, "ensemble": 3}
    return [groups[k] for k in sorted(groups, key=lambda k: near.get(k, len(near)))]


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
    return engine.check_pairs((i, good, bad, None) for i, (good, bad) in enumerate(zip(pairs["good"], pairs["bad"])))


def _check(engine, rows):
    return engine.check_pairs((i, good, bad, None) for i, good, bad in rows)


def _score(engine, pairs, methods) -> list[dict]:
    return [result_columns(r) for r in engine.score_pairs(pairs, methods)]


def _score_timed(engine, pairs, methods) -> tuple[list[PairResult], float]:
    t = time.perf_counter()
    out = engine.score_pairs(pairs, methods)
    return out, time.perf_counter() - t


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
    """One pair's results from several groups of methods: the scores in the request's method order."""
    scores = sorted((s for p in parts for s in p.scores), key=lambda s: order.get(s.method, len(order)))
    return dataclasses.replace(parts[0], scores=scores)


def score_steps(pairs: pd.DataFrame, model_id: str, methods: list[str], *, run, progress=None, target=STEP_S):
    """Score a frame of pairs in short steps: yields (rows done, rows) after each step and returns
    the result frame (the input, ``row``, ``model``, ``error``, then the scores). ``target``: the
    model seconds a step aims at, or a function giving them before each step.

    The app's handlers are generators over these steps: Gradio can stop a generator between
    two steps (the Stop button, /cancel), where a plain function would run to its end.
    """
    methods = check_request(pairs, model_id, methods)
    total = len(pairs)
    errors: dict[int, str] = {}
    if "error" in pairs:  # lines the parser could not read (datasets.parse_pairs(bad_lines="row"))
        errors = {i: str(e) for i, e in enumerate(pairs["error"]) if e}
        pairs = pairs.drop(columns=["error"])
    todo = [(i, g, b) for i, (g, b) in enumerate(zip(pairs["good"], pairs["bad"])) if i not in errors]
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
    results: dict[int, dict] = {}
    start = 0
    while start < len(valid):
        k = planner.pairs()
        chunk = valid[start:start + k]
        try:
            parts: list[list[PairResult]] = [[] for _ in chunk]
            for bundle in planner.bundles(len(chunk)):
                wanted = [m for g in bundle for m in groups[g]]
                out, seconds = yield from _call(run, _score_timed, [p for _, p in chunk], wanted, waiting=(done, total))
                planner.measured(bundle, len(chunk), seconds)
                for n, r in enumerate(out):
                    parts[n].append(r)
            for (i, _), pair_parts in zip(chunk, parts):
                results[i] = result_columns(_merge(pair_parts, order))
        except Exception:  # noqa: BLE001 - redo the chunk pair by pair to pin the failure on its row
            for i, p in chunk:
                try:
                    pair_parts = []
                    for group in groups:
                        out, _ = yield from _call(run, _score_timed, [p], group, waiting=(done, total))
                        pair_parts.append(out[0])
                    results[i] = result_columns(_merge(pair_parts, order))
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
    scores = pd.DataFrame([results.get(i, {}) for i in range(total)])
    return pd.concat([base, scores], axis=1)


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
