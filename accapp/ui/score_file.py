"""Score-a-file tab: a CSV or JSONL of minimal pairs in, a CSV with one row per input row out.

Every row is checked on its own (``engine.check_pair``): a row that fails (an empty sentence,
one too long) gets its message in the ``error`` column and the others are scored in batches
(``engine.score_pairs``). The result is written to a temporary file and renamed into place,
so a download never sees half a file. The same function is the ``/score_file`` API endpoint.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import gradio as gr
import pandas as pd

from accapp.bench.datasets import parse_pairs
from accapp.errors import UserError
from accapp.methods import method_ids, resolve
from accapp.models import DEFAULT_MODEL, get_spec
from accapp.ui.common import esc, friendly, intro, message_of, note
from accapp.ui.probe import majority, method_choices
from accapp.ui.state import get_state, model_choices

BATCH = 8  # pairs per engine call: a progress step, and the work one failed batch re-does pair by pair
MAX_ROWS = int(os.environ.get("ACCAPP_UI_MAX_ROWS", "5000") or 5000)
DEFAULT_METHODS = ["lp", "mean_lp", "pen_lp", "in_template_lp", "yes_no_prob_comp"]
KEEP_RESULTS_S = 3600
EXAMPLE_ROWS = [
    ("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
    ("The dogs bark.", "The dogs barks."),
    ("Who should Derek hug after shocking Richard?", "Who should Derek hug Richard after shocking?"),
]


def column_name(method: str, template: str, variant: str, field: str) -> str:
    """'lp: score_good', 'in_template_lp [2]: verdict', 'ab_prompting [1, good=A]: score_bad'."""
    tag = [t for t in ((template if template not in ("-", "") else ""), variant) if t]
    return f"{method}{' [' + ', '.join(tag) + ']' if tag else ''}: {field}"


def _result_columns(result) -> dict:
    out = {"tokens_good": result.len_good, "tokens_bad": result.len_bad}
    maj = majority(result.rows)
    out["majority_verdict"] = maj["verdict"]
    out["judgments_for_good"] = maj["good"]
    out["judgments_for_bad"] = maj["bad"]
    for r in result.rows:
        for field in ("score_good", "score_bad", "verdict"):
            out[column_name(r["method"], str(r.get("template", "-")), str(r.get("variant", "")), field)] = r[field]
    return out


def finish(steps):
    """Run a step generator to its end; return what it returns."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def score_frame(pairs: pd.DataFrame, model_id: str, methods: list[str], progress=None) -> pd.DataFrame:
    """One output row per input row: the input, an ``error`` column, and every method's scores."""
    return finish(score_steps(pairs, model_id, methods, progress))


def score_steps(pairs: pd.DataFrame, model_id: str, methods: list[str], progress=None):
    """score_frame, one batch a step: yields (rows done, rows) after each batch, returns the frame.

    The app's handlers are generators over these steps: Gradio can stop a generator between
    two steps (the Stop button, /cancel), where a plain function would run to its end. No
    model slot is held across a step, so a stopped run frees the model at once.
    """
    spec = get_spec(model_id)
    if not methods:
        raise UserError("Pick at least one method.")
    resolve(methods, spec.kind)
    if len(pairs) > MAX_ROWS:
        raise UserError(f"The file has {len(pairs):,} rows; this app scores at most {MAX_ROWS:,} at a time. "
                        "Split the file, or run `python -m accapp bench --benchmark FILE` on your own machine.")
    state = get_state()
    total = len(pairs)
    with state.model_slot(model_id):
        engine = state.engine(model_id)
    errors: dict[int, str] = {}
    valid: list[tuple[int, object]] = []
    for i, (good, bad) in enumerate(zip(pairs["good"], pairs["bad"])):
        try:
            with state.model_slot(model_id):
                valid.append((i, engine.check_pair(good, bad)))
        except UserError as exc:
            errors[i] = str(exc)
    results: dict[int, dict] = {}
    done = len(errors)
    if progress is not None:
        progress((done, total), desc="Scoring pairs", unit="pairs")
    for start in range(0, len(valid), BATCH):
        chunk = valid[start:start + BATCH]
        try:
            with state.model_slot(model_id):
                scored = state.compute(engine.score_pairs, [p for _, p in chunk], methods)
            for (i, _), res in zip(chunk, scored):
                results[i] = _result_columns(res)
        except Exception:  # noqa: BLE001 - redo the batch pair by pair to pin the failure on its row
            for i, p in chunk:
                try:
                    with state.model_slot(model_id):
                        results[i] = _result_columns(state.compute(engine.score_pairs, [p], methods)[0])
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


def write_csv_atomic(df: pd.DataFrame, path: Path) -> Path:
    """Write beside the target, then rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            df.to_csv(f, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _prune(folder: Path) -> None:
    now = time.time()
    for p in folder.glob("run-*"):
        try:
            if now - p.stat().st_mtime > KEEP_RESULTS_S:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


def _safe_stem(name: str) -> str:
    stem = Path(name).stem
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in stem)[:60]
    return stem or "pairs"


def score_upload(path, model_id, methods, progress=None) -> tuple[str, pd.DataFrame]:
    """Parse, score and write: returns the result CSV's path and the scored frame."""
    return finish(upload_steps(path, model_id, methods, progress))


def upload_steps(path, model_id, methods, progress=None):
    """score_upload one batch a step (see score_steps); the file is written after the last."""
    if not path:
        raise UserError("Upload a CSV or JSONL file of pairs first.")
    path = Path(path if isinstance(path, (str, os.PathLike)) else getattr(path, "name", ""))
    if not path.is_file():
        raise UserError("The uploaded file is gone from the server (uploads are removed after a while): upload it again.")
    name = path.name
    pairs = parse_pairs(path.read_bytes(), name)
    df = yield from score_steps(pairs, model_id, list(methods or []), progress)
    root = get_state().tmpdir() / "results"
    root.mkdir(parents=True, exist_ok=True)
    _prune(root)
    out_dir = Path(tempfile.mkdtemp(dir=root, prefix="run-"))
    out = write_csv_atomic(df, out_dir / f"{_safe_stem(name)}-scored-{model_id}.csv")
    return str(out), df


def _summary(df: pd.DataFrame, model_id: str) -> str:
    n, bad = len(df), int((df["error"] != "").sum())
    ok = df[df["error"] == ""]
    text = f"Scored <b>{n - bad}</b> of {n} rows with <b>{esc(get_spec(model_id).name)}</b>."
    if len(ok) and "majority_verdict" in ok:
        text += f" The majority of methods prefers the acceptable sentence in {int((ok.majority_verdict == 'good').sum())} of them."
    if bad:
        first = df[df["error"] != ""].head(3)
        items = "".join(f"<li>row {int(r)}: {esc(e)}</li>" for r, e in zip(first["row"], first["error"]))
        text += (f"<br><b>{bad} row{'s' if bad != 1 else ''} could not be scored</b> (see the <code>error</code> column):"
                 f"<ul style='margin:0.2rem 0 0 1.2rem'>{items}</ul>")
    return note(text, "warn" if bad else "good")


@friendly
def run_score(path, model_id, methods, progress=gr.Progress()):
    steps = upload_steps(path, model_id, methods, progress)
    while True:
        try:
            done, total = next(steps)
        except StopIteration as stop:
            out, df = stop.value
            break
        yield gr.skip(), note(f"Scoring… {done:,} of {total:,} rows done. <b>Stop</b> ends the run; "
                              "nothing is written then.", "info"), gr.skip()
    preview_cols = [c for c in ("row", "good", "bad", "error", "majority_verdict") if c in df] + [
        c for c in df.columns if c.endswith(": verdict")][:6]
    preview = df[preview_cols].head(50).copy()
    for c in ("good", "bad", "error"):  # the CSV has the full text; the preview stays narrow
        if c in preview:
            preview[c] = preview[c].map(lambda v: v if len(str(v)) <= 90 else str(v)[:88] + "…")
    yield (gr.update(value=out, visible=True), _summary(df, model_id),
           gr.update(value=preview, visible=True, column_widths=preview_widths(list(preview.columns))))


def preview_widths(columns: list[str]) -> list[str]:
    """Fixed shares, so one long unbroken string cannot push the other columns out of view."""
    fixed = {"row": 5, "good": 22, "bad": 22, "error": 18}
    rest = [c for c in columns if c not in fixed]
    left = 100 - sum(fixed[c] for c in columns if c in fixed)
    return [f"{fixed[c]}%" if c in fixed else f"{left / max(1, len(rest)):.1f}%" for c in columns]


@friendly
def api_score(file, model, methods, progress=gr.Progress()):
    steps = upload_steps(file, model, methods, progress)
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            yield stop.value[0]
            return
        yield gr.skip()  # a step: lets /cancel stop the run here


def example_file() -> str:
    folder = get_state().tmpdir() / "example"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "example-pairs.csv"
    if not path.exists():
        write_csv_atomic(pd.DataFrame(EXAMPLE_ROWS, columns=["good", "bad"]), path)
    return str(path)


def build() -> None:
    gr.HTML(intro(
        "Score a file of pairs",
        "Upload a CSV or JSONL file with a <b>good</b> and a <b>bad</b> column (optional: paradigm, phenomenon, "
        "pair_id). Every row gets every selected method's scores and verdict; rows that cannot be scored keep their "
        f"place with a message in the <b>error</b> column. Up to {MAX_ROWS:,} rows at a time."))
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            upload = gr.File(label="Your file (.csv, .tsv or .jsonl, UTF-8)", file_types=[".csv", ".tsv", ".jsonl", ".json", ".txt"],
                             type="filepath", elem_id="file-upload")
        with gr.Column(scale=2):
            gr.File(value=example_file(), label="Example file (three pairs)", interactive=False, elem_id="file-example")
    model = gr.Dropdown(model_choices(), value=DEFAULT_MODEL, label="Model", elem_id="file-model")
    methods = gr.CheckboxGroup(method_choices("causal"), value=DEFAULT_METHODS, label="Methods",
                               info="Fewer methods score faster; LP, MeanLP and PenLP need one pass per sentence.",
                               elem_id="file-methods")
    with gr.Row():
        run_btn = gr.Button("Score the file", variant="primary", elem_id="file-run", scale=4)
        stop_btn = gr.Button("Stop", variant="stop", elem_id="file-stop", scale=1)
    summary = gr.HTML("", elem_id="file-summary")
    result = gr.File(label="Result CSV (one row per input row): click to download", interactive=False,
                     elem_id="file-result", visible=False)
    preview = gr.Dataframe(elem_classes=["acc-table"], label="Preview (first 50 rows)", interactive=False, wrap=True,
                           max_height=500, elem_id="file-preview", visible=False)

    def on_model(model_id, current):
        kind = get_spec(model_id).kind
        ids = method_ids(kind)
        keep = [m for m in (current or []) if m in ids] or [m for m in DEFAULT_METHODS if m in ids] or ids
        return gr.update(choices=method_choices(kind), value=keep)

    model.input(friendly(on_model), [model, methods], [methods], api_visibility="undocumented")
    run_event = run_btn.click(run_score, [upload, model, methods], [result, summary, preview],
                              api_visibility="undocumented", concurrency_id="score")
    stop_btn.click(None, None, None, cancels=[run_event], api_visibility="undocumented")
    # The API endpoint: the same work, the result CSV alone as its output.
    api_out = gr.File(visible=False, label="result_csv")
    api_btn = gr.Button(visible=False)
    api_btn.click(api_score, [upload, model, methods], [api_out], api_name="score_file", concurrency_id="score",
                  api_description="Score a CSV/JSONL file of minimal pairs (columns good, bad); returns the result CSV.")
