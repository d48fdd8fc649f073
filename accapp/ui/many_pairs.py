"""The Probe tab's box of many pairs: one pair a line (acceptable, a tab, unacceptable), probed one
after another with the tab's model, methods and context, each with its headline, as a table that
exports as CSV. The logic is accapp.service.many_pairs; this file is its layout and wiring."""

from __future__ import annotations

import logging

import gradio as gr
import pandas as pd

from accapp import logs
from accapp.errors import UserError
from accapp.service import export
from accapp.service import many_pairs as svc
from accapp.service.catalog import DEFAULT_MODEL
from accapp.service.host import get_state
from accapp.service.messages import message_of
from accapp.service.probe import probe_api
from accapp.ui.common import note
from accapp.ui.probe_view import error_html
from accapp.ui.queues import PROBE_QUEUE

log = logging.getLogger("accapp.ui")
SHOWN = {"line": "Line", "acceptable": "Acceptable", "unacceptable": "Unacceptable", "headline": "Headline",
         "verdict": "Verdict", "judgments_for_good": "Judgments for acceptable", "judgments": "Judgments",
         "error": "Error"}
HIDDEN = gr.update(visible=False, value=None)


def shown_frame(rows: list[dict], unit: str) -> pd.DataFrame:
    """The page's table: the line, the sentences, the headline in words, its margin in `unit`, the
    majority, the region's difference where a region is marked, and any error."""
    margin = f"Margin good − bad ({unit})"
    region = f"Region: bad − good surprisal ({unit})"
    out = []
    for r in rows:
        out.append({SHOWN["line"]: r["line"], SHOWN["acceptable"]: r["acceptable"], SHOWN["unacceptable"]: r["unacceptable"],
                    SHOWN["headline"]: r["headline"] or "", margin: _round(r[f"margin_{unit}"]),
                    SHOWN["verdict"]: r["verdict"] or "",
                    "Judgments for acceptable / all": "" if r["judgments"] is None else f"{r['judgments_for_good']} / {r['judgments']}",
                    region: _round(r[f"region_difference_{unit}"]), SHOWN["error"]: r["error"] or ""})
    frame = pd.DataFrame(out)
    if not any(r["region_difference_bits"] is not None for r in rows) and region in frame:
        frame = frame.drop(columns=[region])
    return frame


def _round(v):
    return "" if v is None else round(float(v), 2)


def run_many(text, model_id, methods, unit, context, progress=gr.Progress()):
    """Parse the box, probe each line (service.probe.probe_api), show the table as it grows, then the CSV."""
    try:
        lines = svc.parse_lines(text)
        methods = svc.check_methods(methods)
    except UserError as exc:
        yield error_html(str(exc)), None, HIDDEN
        return
    model_id = model_id or DEFAULT_MODEL
    unit = unit if unit in ("bits", "nats") else "bits"

    def probe(good, bad):
        return probe_api(model_id, good, bad, methods, context)

    rows: list[dict] = []
    try:
        for done, total, rows in svc.probe_lines(lines, probe, unit, progress):
            yield note(f"Probed {done} of {total} pairs…", "info"), shown_frame(rows, unit), HIDDEN
        path = export.write_table_csv(rows, svc.COLUMNS, get_state().tmpdir() / "exports", "many-pairs")
    except Exception as exc:  # noqa: BLE001 - a message, the traceback in the log
        if not isinstance(exc, UserError):
            logs.failed(log, "many pairs", exc)
        yield error_html(message_of(exc)), shown_frame(rows, unit) if rows else None, HIDDEN
        return
    failed = sum(1 for r in rows if r["error"])
    said = f"Probed {len(rows)} pairs" + (f"; {failed} could not be probed (see the Error column)." if failed else ".")
    yield note(said + " The CSV has margins in bits and nats.", "warn" if failed else "info"), \
        shown_frame(rows, unit), gr.update(value=str(path), visible=True)


def build(model, methods, unit, context) -> None:
    """The accordion with the box, its button, the status line, the table and the CSV download."""
    limit = svc.max_lines()
    with gr.Accordion(f"Probe many pairs (one pair a line, a tab between; at most {limit})", open=False,
                      elem_id="probe-many-accordion"):
        box = gr.Textbox(label="Pairs: acceptable sentence, a tab, unacceptable sentence (one pair a line)", lines=5,
                         max_lines=20, elem_id="probe-many",
                         placeholder="These casseroles disgust Kayla.\tThese casseroles disgusts Kayla.")
        with gr.Row():
            go = gr.Button("Probe every pair", elem_id="probe-many-run", scale=0, min_width=180)
            download = gr.DownloadButton("⬇ Download CSV", visible=False, size="sm", elem_id="probe-many-csv",
                                         scale=0, min_width=150)
        status = gr.HTML("", elem_id="probe-many-status")
        table = gr.Dataframe(interactive=False, wrap=True, max_height=480, elem_id="probe-many-table",
                             elem_classes=["acc-table"], buttons=["copy", "fullscreen"])
    go.click(run_many, [box, model, methods, unit, context], [status, table, download], api_visibility="undocumented",
             concurrency_id=PROBE_QUEUE, show_progress_on=[status])
