"""Scoring a file of pairs: one output row per input row, every selected method's scores.

Every row is checked on its own (``engine.check_pair``): a row that fails (an empty sentence,
one too long) gets its message in the ``error`` column and the others are scored in batches
(``engine.score_pairs``); a batch that fails is redone pair by pair, so the failure lands on
its row. The engine is reached through ``run(fn, *args)``, which calls ``fn(engine, *args)``:
the app runs it in the model's slot on the model thread, :func:`direct` runs it in place.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from accapp.engine import PairResult
from accapp.errors import UserError
from accapp.methods import resolve
from accapp.models import get_spec
from accapp.runner.datasets import parse_pairs
from accapp.service.messages import message_of
from accapp.service.probe import majority

BATCH = 8  # pairs per engine call: a progress step, and the work one failed batch re-does pair by pair
MAX_ROWS = int(os.environ.get("ACCAPP_UI_MAX_ROWS", "5000") or 5000)


def direct(engine):
    """A `run` for an engine in hand: run(fn, *args) = fn(engine, *args)."""
    return lambda fn, *args: fn(engine, *args)


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
    """The pairs of an uploaded CSV / JSONL file (a path or a file object with .name) and its file name."""
    if not path:
        raise UserError("Upload a CSV or JSONL file of pairs first.")
    path = Path(path if isinstance(path, (str, os.PathLike)) else getattr(path, "name", ""))
    if not path.is_file():
        raise UserError("The uploaded file is gone from the server (uploads are removed after a while): upload it again.")
    return parse_pairs(path.read_bytes(), path.name), path.name


def check_request(pairs: pd.DataFrame, model_id: str, methods: list[str]) -> list[str]:
    """What can fail before the model loads: the model, the methods for its kind, the file's size."""
    spec = get_spec(model_id)
    methods = list(methods or [])
    if not methods:
        raise UserError("Pick at least one method.")
    resolve(methods, spec.kind)
    if len(pairs) > MAX_ROWS:
        raise UserError(f"The file has {len(pairs):,} rows; this app scores at most {MAX_ROWS:,} at a time. "
                        "Split the file, or run `python -m accapp bench --benchmark FILE` on your own machine.")
    return methods


def check_rows(engine, pairs: pd.DataFrame) -> tuple[list[tuple[int, object]], dict[int, str]]:
    """([(row index, checked Pair)], {row index: message}) over every row of the file."""
    return engine.check_pairs((i, good, bad, None) for i, (good, bad) in enumerate(zip(pairs["good"], pairs["bad"])))


def _score(engine, pairs, methods) -> list[dict]:
    return [result_columns(r) for r in engine.score_pairs(pairs, methods)]


def score_steps(pairs: pd.DataFrame, model_id: str, methods: list[str], *, run, progress=None):
    """Score a frame of pairs one batch a step: yields (rows done, rows) after each batch and
    returns the result frame (the input, ``row``, ``model``, ``error``, then the scores).

    The app's handlers are generators over these steps: Gradio can stop a generator between
    two steps (the Stop button, /cancel), where a plain function would run to its end.
    """
    methods = check_request(pairs, model_id, methods)
    total = len(pairs)
    valid, errors = run(check_rows, pairs)
    results: dict[int, dict] = {}
    done = len(errors)
    if progress is not None:
        progress((done, total), desc="Scoring pairs", unit="pairs")
    for start in range(0, len(valid), BATCH):
        chunk = valid[start:start + BATCH]
        try:
            for (i, _), cols in zip(chunk, run(_score, [p for _, p in chunk], methods)):
                results[i] = cols
        except Exception:  # noqa: BLE001 - redo the batch pair by pair to pin the failure on its row
            for i, p in chunk:
                try:
                    results[i] = run(_score, [p], methods)[0]
                except Exception as exc:  # noqa: BLE001
                    errors[i] = message_of(exc)
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
