"""Score-a-file tab: a CSV or JSONL of minimal pairs in, a CSV with one row per input row out
(or, on request, one row per pair and judgment: the long layout), with each sentence's tokens and
words on request, a summary by phenomenon when the file has a ``phenomenon`` column, and a
metadata sidecar (``<result>.meta.json``: provenance, the input's SHA-256, methods, layout).

The scoring is :mod:`accapp.service.score_file` (per-row checks, short steps, an ``error``
column); this tab writes every file to a temporary name renamed into place (the sidecar last), so
a download never sees half a file. The same work is the ``/score_file`` API endpoint (the result
CSV) and ``/score_file_all`` (every file of the run).

File jobs wait in their own queue (:mod:`accapp.service.file_jobs`): before one is sent, a check
refuses a second job of the same visitor, a full queue, a file over the size limit and a bad list
of methods. A job that must wait shows its place ("Waiting: number 2 in the queue…") until its
turn; while it runs it takes the model one short step at a time, after any probe. When it ends
(done, failed or stopped) it leaves the queue, the next one starts, and an API call's upload is removed
unless another job in the queue was sent the same file (the tab keeps its upload in the box, to score
again; Gradio removes uploads after an hour); the result stays for download for an
hour. A full disk is a message.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import time
from functools import partial
from pathlib import Path

import gradio as gr
import pandas as pd

from accapp.errors import UserError
from accapp.files import DISK_FULL_MESSAGE, is_disk_full, safe_name, write_csv_atomic, write_json_atomic
from accapp.methods import display_name, method_ids
from accapp.service import ratings as ratings_svc
from accapp.service import score_file as svc
from accapp.service.catalog import DEFAULT_MODEL, get_spec, preset
from accapp.service.file_jobs import FileJob, file_queue
from accapp.service.host import get_state
from accapp.service.probe import method_choices
from accapp.ui import ratings_view
from accapp.ui.common import HEADING_VALUE, esc, friendly, intro, model_picker_choices, note
from accapp.ui.queues import FILE_EVENTS, FILE_QUEUE

MAX_ROWS = svc.MAX_ROWS
DEFAULT_METHODS = preset("file", "causal")  # the first selection (accapp/methods/data/methods.json)
KEEP_RESULTS_S = 3600
EXAMPLE_ROWS = [
    ("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
    ("The dogs bark.", "The dogs barks."),
    ("Who should Derek hug after shocking Richard?", "Who should Derek hug Richard after shocking?"),
]


def write_csv(df: pd.DataFrame, path: Path) -> Path:
    return write_csv_atomic(df, path)


def _prune(folder: Path) -> None:
    now = time.time()
    for p in folder.glob("run-*"):
        try:
            if now - p.stat().st_mtime > KEEP_RESULTS_S:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


def _stem(name: str) -> str:
    # no leading dot: the result file must not look hidden (or like a temporary file)
    return safe_name(Path(name).stem).lstrip(".")[:60] or "pairs"


def score_steps(pairs: pd.DataFrame, model_id: str, methods: list[str], progress=None):
    """The service's steps on the app's engine for this model, each a low-priority turn on the
    model (AppState.background; see service.score_file.score_steps)."""
    scored = yield from scored_steps(pairs, model_id, methods, progress)
    return scored.wide()


def scored_steps(pairs: pd.DataFrame, model_id: str, methods: list[str], progress=None, words: bool = False):
    state = get_state()
    return svc.scored_steps(pairs, model_id, methods, run=partial(state.background, model_id), progress=progress,
                            target=state.step_target, words=words)


def score_frame(pairs: pd.DataFrame, model_id: str, methods: list[str], progress=None) -> pd.DataFrame:
    return svc.finish(score_steps(pairs, model_id, methods, progress))


@dataclasses.dataclass
class Written:
    """What one file job wrote: the result CSV first in ``files``, then the tokens, the summary by
    phenomenon and the sidecar, as they apply."""

    results: str
    files: list[str]
    wide: pd.DataFrame
    frame: pd.DataFrame  # the result in the layout asked for (what the result CSV holds)
    summary: pd.DataFrame | None  # accuracy by phenomenon (a file with a phenomenon column)
    meta: dict
    ratings: pd.DataFrame | None = None  # r with the humans per method (a file with ratings: service.ratings)


def upload_steps(path, model_id, methods, progress=None, layout="wide", tokens=False):
    """Parse and score one batch a step, then write the files; returns (the result CSV's path,
    the result frame) (score_upload_all: every file)."""
    written = yield from upload_all_steps(path, model_id, methods, progress, layout, tokens)
    return written.results, written.frame


def upload_all_steps(path, model_id, methods, progress=None, layout="wide", tokens=False):
    """upload_steps returning a :class:`Written`. Nothing is written before the scoring ends, so a
    malformed file, a refusal or Stop leaves no file; each file is written to a temporary name and
    renamed, the sidecar last."""
    layout = svc.check_layout(layout)
    up = svc.read_upload_info(path)
    scored = yield from scored_steps(up.pairs, model_id, list(methods or []), progress, words=bool(tokens))
    wide = scored.wide()
    frame = wide if layout == "wide" else svc.long_frame(scored)
    long = svc.long_frame(scored) if layout == "wide" else frame
    summary = svc.phenomenon_summary(long, scored.methods) if up.has_phenomenon else None
    rated = ratings_svc.file_summary(long, scored.base)  # (summary, points), or None without ratings
    root = get_state().tmpdir() / "results"
    _prune(root)
    out_dir = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        out_dir = Path(tempfile.mkdtemp(dir=root, prefix="run-"))
        stem = f"{_stem(up.name)}-scored-{safe_name(model_id)}{'' if layout == 'wide' else '-long'}"
        files = {"results": write_csv(frame, out_dir / f"{stem}.csv")}
        if tokens:
            files["tokens"] = write_csv(svc.token_frame(scored), out_dir / f"{stem}-tokens.csv")
        if summary is not None:
            files["phenomena"] = write_csv(summary, out_dir / f"{stem}-phenomena.csv")
        if rated is not None:
            files["ratings"] = write_csv(rated[0], out_dir / f"{stem}-ratings.csv")
            files["ratings_points"] = write_csv(rated[1], out_dir / f"{stem}-ratings-points.csv")
        names = {k: p.name for k, p in files.items()}
        meta_path = out_dir / f"{stem}.meta.json"
        meta = svc.metadata(scored, up, layout, bool(tokens), {**names, "metadata": meta_path.name})
        files["metadata"] = write_json_atomic(meta, meta_path)
    except OSError as exc:
        if out_dir is not None:
            shutil.rmtree(out_dir, ignore_errors=True)
        if is_disk_full(exc):
            raise UserError(DISK_FULL_MESSAGE) from exc
        raise
    return Written(str(files["results"]), [str(p) for p in files.values()], wide, frame, summary, meta,
                   rated[0] if rated is not None else None)


def score_upload(path, model_id, methods, progress=None, layout="wide", tokens=False) -> tuple[str, pd.DataFrame]:
    """Parse, score and write: returns the result CSV's path and the result frame."""
    return svc.finish(upload_steps(path, model_id, methods, progress, layout, tokens))


def score_upload_all(path, model_id, methods, progress=None, layout="wide", tokens=False) -> Written:
    """Parse, score and write: every file written (see upload_all_steps)."""
    return svc.finish(upload_all_steps(path, model_id, methods, progress, layout, tokens))


def phenomenon_table(summary: pd.DataFrame | None) -> pd.DataFrame | None:
    """The summary by phenomenon as the tab shows it: one row per phenomenon with its pairs, one
    column per method with its accuracy (%) by the papers' rule, and the project's (ties wrong) beside
    it where it differs (the CSV also counts the ties and the pairs left out)."""
    if summary is None or summary.empty:
        return None
    table = summary.pivot(index="phenomenon", columns="method", values="accuracy_percent")
    methods = list(dict.fromkeys(summary["method"]))
    phenomena = list(dict.fromkeys(summary["phenomenon"]))
    table = table.reindex(index=phenomena, columns=methods)  # rounded by the summary to what it supports
    pairs = summary.groupby("phenomenon", sort=False)["pairs"].max().reindex(phenomena)
    table.columns = [f"{display_name(m)} (%)" for m in methods]
    table = _with_tie_aware(table, summary, phenomena, methods)
    table.insert(0, "Pairs", pairs.astype(int).values)
    table.insert(0, "Phenomenon", [p or "(empty)" for p in phenomena])
    return table.reset_index(drop=True)


def _with_tie_aware(table: pd.DataFrame, summary: pd.DataFrame, phenomena: list, methods: list) -> pd.DataFrame:
    """Beside each method's accuracy (the papers' rule: right when score(good) > score(bad)), the
    project's with ties within the method's tolerance wrong, where the two differ."""
    if "accuracy_ties_wrong_percent" not in summary:
        return table
    ties = summary.pivot(index="phenomenon", columns="method", values="accuracy_ties_wrong_percent").reindex(
        index=phenomena, columns=methods)
    for m in methods:
        plain = f"{display_name(m)} (%)"
        if not ties[m].equals(table[plain]):
            table.insert(list(table.columns).index(plain) + 1, f"{display_name(m)}, ties wrong (%)", ties[m].values)
    return table


def _summary(df: pd.DataFrame, model_id: str) -> str:
    n, bad = len(df), int((df["error"] != "").sum())
    ok = df[df["error"] == ""]
    text = f"Scored <b>{n - bad}</b> of {n} rows with <b>{esc(get_spec(model_id).name)}</b>."
    where = get_state().ran_on(model_id)
    if where:
        text += f" Ran on {esc(where['text'])}."
    if len(ok) and "majority_verdict" in ok:
        text += f" The majority of methods prefers the acceptable sentence in {int((ok.majority_verdict == 'good').sum())} of them."
    if bad:
        first = df[df["error"] != ""].head(3)
        items = "".join(f"<li>row {int(r)}: {esc(e)}</li>" for r, e in zip(first["row"], first["error"]))
        text += (f"<br><b>{bad} row{'s' if bad != 1 else ''} could not be scored</b> (see the <code>error</code> column):"
                 f"<ul style='margin:0.2rem 0 0 1.2rem'>{items}</ul>")
    flagged = svc.flag_notes(df) if "flag" in df else []  # identical sentences, repeated pairs
    flagged += svc.language_notes(df, get_spec(model_id).languages)  # e.g. Chinese rows, an English model
    text += "".join(f"<br>{esc(line)}" for line in flagged)
    return note(text, "warn" if bad or flagged else "good")


def _upload_dir() -> Path:
    from gradio.utils import get_upload_folder

    return Path(get_upload_folder()).resolve()


def remove_upload(path) -> bool:
    """Remove a job's uploaded file (and its folder, once empty) from Gradio's upload folder; never a
    file elsewhere (a test's, the example's), nor one a job in the file queue was sent with."""
    if not path or not isinstance(path, (str, os.PathLike)):
        return False
    try:
        real = Path(path).resolve()
        uploads, ours = _upload_dir(), get_state().tmpdir().resolve()
        if not real.is_relative_to(uploads) or real.is_relative_to(ours) or real == uploads:
            return False
    except OSError:
        return False

    def remove(_) -> bool:
        try:
            real.unlink(missing_ok=True)
        except OSError:
            return False
        with contextlib.suppress(OSError):
            if real.parent != uploads:
                real.parent.rmdir()  # Gradio keeps each upload in a folder of its own (its hash)
        return True

    return file_queue().remove_unless_in_use(real, remove)


@contextlib.contextmanager
def file_job(path, request: gr.Request | None, keep_upload: bool = False):
    """One file job of a visitor in the file queue (a refusal is a UserError): it leaves the queue
    when it ends (done, failed or stopped), then its upload is removed (keep_upload: the page's own run
    keeps it, so the same file can be scored again with another model or methods; Gradio removes
    uploads after an hour); a full disk is a message."""
    session = getattr(request, "session_hash", None)
    job = file_queue().admit(session, [path])
    try:
        yield job
    except OSError as exc:
        if is_disk_full(exc):
            raise UserError(DISK_FULL_MESSAGE) from exc
        raise
    finally:
        job.leave()
        if request is not None and not keep_upload:  # a Gradio event, not a direct call (tests, scripts)
            remove_upload(path)


def waiting(job: FileJob, progress=None):
    """While the job waits for its turn, its place (1 = next) every FileJob.wait_turn, also shown as
    the progress text; each yield is a point where Stop ends the job. Returns once it may run."""
    while not job.wait_turn():
        place = job.position
        if place:
            if progress is not None:
                progress(0, desc=waiting_text(place))
            yield place


def waiting_text(place: int) -> str:
    return f"Waiting: number {place} in the queue…"


def check_stopped(job: FileJob) -> None:
    """Between steps: a job taken out of the queue (its cancel event set) stops here."""
    if job.cancelled:
        raise UserError("The file job was stopped.")


def validate_job(path, model_id, methods, layout="wide", tokens=False, request: gr.Request = None):
    """Checked before a file job joins the queue (Gradio's validator, so a refusal is immediate and
    takes no place in the queue): one job per visitor, the queue's length, the file's size, the
    model, the methods and the layout. One gr.validate per input: file, model, methods, layout, tokens."""
    file_msg = file_queue().refusal(getattr(request, "session_hash", None)) or ""
    if not file_msg and not path:
        file_msg = "Upload a CSV or JSONL file of pairs first."
    elif not file_msg:
        with contextlib.suppress(OSError, TypeError, ValueError):  # else the job itself says what is wrong
            try:
                svc.check_upload_size(os.path.getsize(str(path)))
            except UserError as exc:
                file_msg = str(exc)
    model_msg = methods_msg = layout_msg = ""
    try:
        if model_id == HEADING_VALUE:
            raise TypeError(model_id)
        get_spec(model_id)
    except (UserError, TypeError) as exc:
        model_msg = str(exc) if isinstance(exc, UserError) else "Pick a model from the list."
    else:
        try:
            svc.check_methods(model_id, methods)
        except UserError as exc:
            methods_msg = str(exc)
    try:
        svc.check_layout(layout)
    except UserError as exc:
        layout_msg = str(exc)
    return [gr.validate(not m, m) for m in (file_msg, model_msg, methods_msg, layout_msg, "")]


@friendly
def run_score(path, model_id, methods, layout="wide", tokens=False, request: gr.Request = None, progress=gr.Progress()):
    with file_job(path, request, keep_upload=True) as job:
        shown = None
        for place in waiting(job, progress):
            if place == shown:  # nothing new to show
                yield gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
                continue
            shown = place
            yield gr.skip(), note(f"{waiting_text(place)} <b>Stop</b> takes your file out of the queue.",
                                  "info"), gr.skip(), gr.skip(), gr.skip()
        steps = upload_all_steps(path, model_id, methods, progress, layout, tokens)
        shown = None
        while True:
            check_stopped(job)
            try:
                done, total = next(steps)
            except StopIteration as stop:
                written = stop.value
                break
            if (done, total) == shown:  # waiting for the model: nothing new to show
                yield gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
                continue
            shown = done, total
            yield gr.skip(), note(f"Scoring… {done:,} of {total:,} rows done. <b>Stop</b> ends the run; "
                                  "nothing is written then.", "info"), gr.skip(), gr.skip(), gr.skip()
    df = written.frame
    keep = ("row", "good", "bad", "error", "majority_verdict", "method", "template", "variant", "verdict")
    preview_cols = [c for c in keep if c in df] + [c for c in df.columns if c.endswith(": verdict")][:6]
    preview = df[preview_cols].head(50).copy()
    for c in ("good", "bad", "error"):  # the CSV has the full text; the preview stays narrow
        if c in preview:
            preview[c] = preview[c].map(lambda v: v if len(str(v)) <= 90 else str(v)[:88] + "…")
    table = phenomenon_table(written.summary)
    # the upload stays in its box: the same file can be scored again with another model or methods
    yield (gr.update(value=written.files, visible=True),
           _summary(written.wide, model_id) + ratings_view.summary_html(written.ratings, title="Beside the human ratings"),
           gr.update(value=preview, visible=True, column_widths=preview_widths(list(preview.columns))), gr.skip(),
           gr.update(value=table, visible=table is not None))


def failed_html(message: str) -> str:
    """A refused or failed file job's message, kept on the page (a toast disappears)."""
    return note(f"<b>The file was not scored.</b> {esc(message)}", "bad")


def run_score_in_page(path, model_id, methods, layout="wide", tokens=False, request: gr.Request = None,
                      progress=gr.Progress()):
    """The tab's handler: run_score, with a refusal (a malformed file, a stopped job) shown in the
    summary box, where it stays until the next run, and the old results cleared."""
    try:
        yield from run_score(path, model_id, methods, layout, tokens, request, progress)
    except gr.Error as exc:
        yield (gr.update(value=None, visible=False), failed_html(str(exc.message)), gr.update(visible=False),
               gr.skip(), gr.update(value=None, visible=False))


def preview_widths(columns: list[str]) -> list[str]:
    """Fixed shares, so one long unbroken string cannot push the other columns out of view."""
    fixed = {"row": 5, "good": 22, "bad": 22, "error": 18}
    rest = [c for c in columns if c not in fixed]
    left = 100 - sum(fixed[c] for c in columns if c in fixed)
    return [f"{fixed[c]}%" if c in fixed else f"{left / max(1, len(rest)):.1f}%" for c in columns]


def _api_steps(file, model, methods, layout, tokens, request, progress, everything: bool):
    with file_job(file, request) as job:
        for _ in waiting(job, progress):
            yield gr.skip()  # its place is the progress text; a point where /cancel ends the wait
        steps = upload_all_steps(file, model, methods, progress, layout, tokens)
        while True:
            check_stopped(job)
            try:
                next(steps)
            except StopIteration as stop:
                yield stop.value.files if everything else stop.value.results
                return
            yield gr.skip()  # a step: lets /cancel stop the run here


@friendly
def api_score(file, model, methods, layout="wide", tokens=False, request: gr.Request = None, progress=gr.Progress()):
    yield from _api_steps(file, model, methods, layout, tokens, request, progress, False)


@friendly
def api_score_all(file, model, methods, layout="wide", tokens=False, request: gr.Request = None, progress=gr.Progress()):
    yield from _api_steps(file, model, methods, layout, tokens, request, progress, True)


def example_file() -> str:
    folder = get_state().tmpdir() / "example"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "example-pairs.csv"
    if not path.exists():
        write_csv(pd.DataFrame(EXAMPLE_ROWS, columns=["good", "bad"]), path)
    return str(path)


def build(probe=None, tabs=None, probe_tab_id: str | None = None) -> None:
    gr.HTML(intro(
        "Score a file of pairs",
        "Upload a CSV or JSONL file with a <b>good</b> and a <b>bad</b> column (optional: paradigm, phenomenon, "
        "pair_id). Every row gets every selected method's scores and verdict; rows that cannot be scored (or a line "
        f"that cannot be read) keep their place with a message in the <b>error</b> column. Up to {MAX_ROWS:,} rows "
        f"and {svc.MAX_UPLOAD_BYTES / 1e6:.0f} MB at a time, one file at a time per visitor; your file stays "
        "here for an hour, to score again with another model or methods, then it is removed. Choose the <b>long</b> "
        "layout for one row per pair and judgment "
        "(method, template, answer order), tick the box for each sentence's tokens and words with their surprisal; "
        "a file with a <b>phenomenon</b> column also gets accuracy by phenomenon, and a file with human ratings "
        "(<b>rating_good</b> and <b>rating_bad</b>, with a <b>participant</b> column to z-score within participants; "
        "or <b>human_delta</b>; or <b>fc_good</b>, a forced choice's share) gets the correlation of the model's "
        "difference with the humans' (Hu et al. 2025). Every run comes with a metadata "
        "file (<code>.meta.json</code>): the model and the SHA-256 of its weights, versions, your file's SHA-256."))
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            upload = gr.File(label="Your file (.csv, .tsv or .jsonl, UTF-8)", file_types=[".csv", ".tsv", ".jsonl", ".json", ".txt"],
                             type="filepath", elem_id="file-upload")
        with gr.Column(scale=2):
            gr.File(value=example_file(), label="Example file (three pairs)", interactive=False, elem_id="file-example")
    model = gr.Dropdown(model_picker_choices(), value=DEFAULT_MODEL, label="Model", elem_id="file-model",
                        filterable=True, info="Type to filter.")
    methods = gr.CheckboxGroup(method_choices("causal"), value=DEFAULT_METHODS, label="Methods",
                               info="Fewer methods score faster; LP, MeanLP and PenLP need one pass per sentence.",
                               elem_id="file-methods")
    with gr.Row():
        layout = gr.Radio([("Wide: one row per input row", "wide"),
                           ("Long: one row per pair and method, template and answer order", "long")],
                          value="wide", label="Layout of the result CSV", elem_id="file-layout", scale=3)
        tokens = gr.Checkbox(False, label="Also each sentence's tokens and words (surprisal in bits and nats), as a second CSV",
                             elem_id="file-tokens", scale=2)
    with gr.Row():
        run_btn = gr.Button("Score the file", variant="primary", elem_id="file-run", scale=4)
        stop_btn = gr.Button("Stop", variant="stop", elem_id="file-stop", scale=1)
    summary = gr.HTML("", elem_id="file-summary")
    # Several files in one list rather than a zip: each opens at a click (the CSVs in a spreadsheet,
    # the sidecar in the browser) with nothing to unpack, the result CSV stays first (the one most
    # people want), and the sidecar keeps its place beside the result's name.
    result = gr.File(label="Downloads: the result CSV first, then the tokens and the summary by phenomenon "
                           "(when asked for or present) and the metadata sidecar (.meta.json): click to download",
                     file_count="multiple", interactive=False, elem_id="file-result", visible=False)
    phenomena = gr.Dataframe(elem_classes=["acc-table"], label="Accuracy (%) by phenomenon and method (the papers' "
                                                               "rule: right when score(good) > score(bad); \"ties wrong\" "
                                                               "beside it where the method's tie tolerance changes it)",
                             interactive=False, wrap=True, elem_id="file-phenomena", visible=False)
    preview = gr.Dataframe(elem_classes=["acc-table"], label="Preview (first 50 rows)", interactive=False, wrap=True,
                           max_height=500, elem_id="file-preview", visible=False)
    # A file with ratings (rating_good/rating_bad, human_delta or fc_good): each pair a point; a row opens the probe
    rated_plot = ratings_view.scatter_plot("file-ratings-scatter", visible=False)
    rated_points = gr.State(None)  # the scatter's points: a click on one opens its pair in the probe
    rated_pairs = gr.Dataframe(elem_classes=["acc-table"], label="Pairs beside the human ratings (model and humans "
                               "furthest apart first)", interactive=False, wrap=True, max_height=400,
                               elem_id="file-ratings-pairs", visible=False, column_widths=ratings_view.TABLE_WIDTHS)

    def on_model(model_id, current):
        if model_id == HEADING_VALUE:  # the picker's group heading, picked with the keyboard: no model
            return gr.update()
        kind = get_spec(model_id).kind
        ids = method_ids(kind)
        keep = [m for m in (current or []) if m in ids] or preset("file", kind) or ids
        return gr.update(choices=method_choices(kind), value=keep)

    model.input(friendly(on_model), [model, methods], [methods], api_visibility="undocumented")
    inputs = [upload, model, methods, layout, tokens]
    run_event = run_btn.click(run_score_in_page, inputs, [result, summary, preview, upload, phenomena],
                              api_visibility="undocumented", concurrency_id=FILE_QUEUE,
                              concurrency_limit=FILE_EVENTS, validator=validate_job)
    run_event.then(ratings_view.file_view, [result], [rated_plot, rated_pairs, rated_points], api_visibility="undocumented")
    if probe is not None:  # a pair of the ratings' table, or a point of its scatter, opens in the probe
        to_probe = [probe.good, probe.bad, probe.meta, probe.pair_label, probe.model, tabs]
        rated_pairs.select(ratings_view.opener(probe_tab_id), [rated_pairs, gr.State("your file"), model],
                           to_probe, api_visibility="undocumented").then(**probe.run_event)
        hook = ratings_view.click_hook("file-ratings-scatter", "file-ratings-scatter-click")
        hook.click(ratings_view.point_opener(probe_tab_id), [rated_points, gr.State("your file"), model], to_probe,
                   api_visibility="undocumented").then(**probe.run_event)
    stop_btn.click(None, None, None, cancels=[run_event], api_visibility="undocumented")
    # The API endpoints: the same work. /score_file returns the result CSV alone (as before the
    # layout and tokens inputs came; both have defaults, so old clients get the same file),
    # /score_file_all every file of the run (result, tokens, phenomena, sidecar).
    api_out = gr.File(visible=False, label="result_csv")
    api_btn = gr.Button(visible=False)
    api_btn.click(api_score, inputs, [api_out], api_name="score_file", concurrency_id=FILE_QUEUE,
                  concurrency_limit=FILE_EVENTS, validator=validate_job,
                  api_description="Score a CSV/JSONL file of minimal pairs (columns good, bad); returns the result CSV "
                                  "(layout 'wide': one row per input row, or 'long': one row per judgment).")
    api_all_out = gr.File(visible=False, file_count="multiple", label="files")
    api_all_btn = gr.Button(visible=False)
    api_all_btn.click(api_score_all, inputs, [api_all_out], api_name="score_file_all", concurrency_id=FILE_QUEUE,
                      concurrency_limit=FILE_EVENTS, validator=validate_job,
                      api_description="As /score_file, returning every file written: the result CSV, the tokens CSV "
                                      "(tokens=True), the summary by phenomenon (a phenomenon column), r with the "
                                      "human ratings and its points (a file with ratings) and the metadata sidecar JSON.")
