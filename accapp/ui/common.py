"""Shared bits of the tabs: turning errors into messages, escaping, small HTML pieces."""

from __future__ import annotations

import functools
import html
import inspect
import logging

import gradio as gr

from accapp import logs
from accapp.benchmarks import label_of
from accapp.errors import UserError
from accapp.service.catalog import get_spec, model_choices
from accapp.service.host import HANDLERS
from accapp.service.messages import DEVICE_MESSAGE, OOM_MESSAGE, is_device_error, is_oom, message_of  # noqa: F401 - the tabs' names for them

log = logging.getLogger("accapp.ui")


def _as_message(fn, exc: Exception) -> gr.Error:
    if isinstance(exc, UserError):  # the visitor's input: one line, never a traceback
        logs.refused(log, fn.__name__, str(exc))
    else:
        logs.failed(log, fn.__name__, exc)
    try:
        import torch

        if is_oom(exc) and torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass
    return gr.Error(message_of(exc), print_exception=False)


def friendly(fn):
    """Wrap an event handler (a function or a generator): UserError / out-of-memory / anything
    else -> gr.Error with a message. The traceback goes to the server log, never to the page.
    """
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def generator(*args, **kwargs):
            try:
                with HANDLERS.running():  # counted while it runs: SIGTERM waits for it (service.host)
                    yield from fn(*args, **kwargs)
            except gr.Error:
                raise
            except Exception as exc:  # noqa: BLE001 - shown as a message, logged in full
                raise _as_message(fn, exc) from None

        return generator

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with HANDLERS.running():
                return fn(*args, **kwargs)
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - shown as a message, logged in full
            raise _as_message(fn, exc) from None

    return wrapper


def esc(text) -> str:
    """Text safe inside HTML, and inside plotly labels and hovers (which read a few HTML-like tags):
    every special character an entity, so user text shows literally."""
    return html.escape("" if text is None else str(text), quote=True)


def intro(title: str, text: str) -> str:
    """The short heading and explanation on top of a tab (trusted text, written here)."""
    return f"<div class='acc-intro'><h2>{title}</h2><p>{text}</p></div>"


def pair_where(meta: dict) -> list[str]:
    """Where a pair comes from, as plain parts: its benchmark (or file), phenomenon, paradigm and pair id;
    a part the source has not (a file's pair has no phenomenon) is left out."""
    parts = [label_of(str(meta["benchmark"])), meta.get("phenomenon"), meta.get("paradigm")]
    return [str(p) for p in parts if p] + [f"pair {meta['pair_id']}"]


def pair_label(meta: dict | None) -> str:
    """The small line naming a benchmark pair (benchmark · phenomenon · paradigm · pair id), or a
    file's pair (file · pair id), with the humans' judgment of a rated pair."""
    if not meta:
        return ""
    humans = [meta["humans"]] if meta.get("humans") else []  # a rated pair: the humans' judgment
    return f"<div class='acc-small'>{' · '.join(esc(p) for p in pair_where(meta) + humans)}</div>"


# The model pickers: the models that run here first, then under one heading those that cannot (a GPU
# model on a CPU server, a gated or not yet downloaded one). Gradio's dropdown has no option groups, so the
# heading is a choice of its own, drawn as a heading (CSS above); picked with the keyboard, it means no model.
UNAVAILABLE_HEADING = "── needs a GPU or a download (cannot run on this server) ──"
HEADING_VALUE = "(heading: needs a GPU or a download)"


def model_picker_choices() -> list[tuple[str, str]]:
    """(label, id) for a model dropdown: the models that load here, as catalog.model_choices labels them,
    then UNAVAILABLE_HEADING and the others by name and kind only (the heading says why as a group)."""
    ready, others = [], []
    for label, mid in model_choices():
        if label.startswith("⛔"):
            spec = get_spec(mid)
            others.append((f"{spec.name} · {spec.kind} LM", mid))
        else:
            ready.append((label, mid))
    return ready + ([(UNAVAILABLE_HEADING, HEADING_VALUE)] + others if others else [])


def unavailable_reason(model_id: str) -> str | None:
    """Why a model of the picker cannot run on this server, in words (catalog.model_choices's own); None
    when it can (or is not the registry's)."""
    for label, mid in model_choices():
        if mid == model_id and label.startswith("⛔"):
            return label.rsplit(" · ", 1)[-1]
    return None


def note(text_html: str, kind: str = "info") -> str:
    """A coloured note box; ``text_html`` must already be escaped where it holds user text."""
    return f"<div class='acc-note acc-note-{kind}'>{text_html}</div>"


CSS = """
.acc-header h1 { font-size: 2.0rem; margin: 0.2rem 0 0.1rem 0; }
.acc-header p { font-size: 1.1rem; color: var(--body-text-color-subdued); margin: 0 0 0.4rem 0; }
.acc-intro h2 { font-size: 1.35rem; margin: 0.3rem 0 0.2rem 0; }
.acc-intro p { font-size: 1.02rem; margin: 0 0 0.5rem 0; color: var(--body-text-color-subdued); max-width: 70rem; }
.acc-note { border-radius: 8px; padding: 0.7rem 0.9rem; margin: 0.3rem 0; font-size: 1.02rem; line-height: 1.45; }
.acc-note-info { background: #e7f5ff; border: 1px solid #a5d8ff; color: #1864ab; }
.acc-note-good { background: #ebfbee; border: 1px solid #b2f2bb; color: #2b8a3e; }
.acc-note-bad { background: #fff4e6; border: 1px solid #ffd8a8; color: #d9480f; }
.acc-note-warn { background: #fff9db; border: 1px solid #ffec99; color: #e67700; }
.acc-note b, .acc-note strong { color: inherit; }
.acc-verdict { font-size: 1.25rem; font-weight: 600; }
.acc-pair { font-size: 1.05rem; }
.acc-pair .g { color: #1864ab; } .acc-pair .b { color: #d9480f; }
.acc-small { font-size: 0.92rem; color: var(--body-text-color-subdued); }
.acc-prompts textarea, .acc-prompts pre { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; font-size: 0.92rem; }
"""
CSS += """
.acc-table table, .acc-table td, .acc-table th, .acc-table span, .acc-table input { font-family: var(--font) !important; }
.acc-table td, .acc-table th { font-size: 0.95rem !important; overflow-wrap: anywhere; }
"""
# The probe's answer, its per-method table (cards on a phone), the counter and the pending state.
CSS += """
.acc-model-name { font-size: 0.9rem; text-transform: uppercase; letter-spacing: 0.04em; opacity: 0.8; }
.acc-ran-on { text-transform: none; letter-spacing: 0; }
.acc-agree { margin-top: 0.45rem; font-size: 1.02rem; }
.acc-families { margin: 0.2rem 0 0.2rem 1.1rem; padding: 0; font-size: 0.98rem; }
.acc-warning { margin-top: 0.4rem; padding: 0.35rem 0.6rem; border-radius: 6px; background: #fff3bf; color: #5c3c00; font-weight: 600; }
.acc-counter { font-size: 0.9rem; color: var(--body-text-color-subdued); }
.acc-counter.acc-over { color: #c92a2a; font-weight: 600; }
.acc-pending { font-size: 1.0rem; padding: 0.4rem 0.2rem; color: #1864ab; }
.acc-spinner { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.4em; vertical-align: -0.1em;
  border: 2px solid #a5d8ff; border-top-color: #1864ab; border-radius: 50%; animation: acc-spin 0.9s linear infinite; }
@keyframes acc-spin { to { transform: rotate(360deg); } }
/* A visitor who asks for less motion (the system's setting) gets no spinning, pulsing or sliding,
   the app's or Gradio's: the words "Scoring…" and "Still computing" say the same. */
@media (prefers-reduced-motion: reduce) {
  *, *::before, *::after { animation-duration: 0s !important; animation-iteration-count: 1 !important;
    transition-duration: 0s !important; scroll-behavior: auto !important; }
}
.acc-family { margin: 0.4rem 0; border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 0.3rem 0.6rem; }
.acc-family summary { cursor: pointer; font-size: 1.02rem; padding: 0.2rem 0; }
table.acc-votes { width: 100%; border-collapse: collapse; font-size: 0.95rem; margin: 0.3rem 0; }
table.acc-votes th { text-align: left; font-weight: 600; border-bottom: 2px solid var(--border-color-primary); padding: 0.3rem; }
table.acc-votes td { vertical-align: top; border-bottom: 1px solid var(--border-color-primary); padding: 0.3rem; }
/* a number with its unit never wraps mid-number, and digits line up in a column */
.acc-num, table.acc-region td, .acc-ran-on { white-space: nowrap; font-variant-numeric: tabular-nums; }
abbr.acc-term { text-decoration: underline dotted; cursor: help; }
.acc-split { margin: 0.4rem 0; }
.acc-method { font-weight: 600; text-decoration: underline dotted; cursor: help; }
.acc-plain { font-size: 0.86rem; color: var(--body-text-color-subdued); max-width: 28rem; }
.acc-vote-good .acc-vote { color: #1864ab; font-weight: 600; }
.acc-vote-bad .acc-vote { color: #d9480f; font-weight: 600; }
.acc-vote-none .acc-vote, .acc-vote-unreliable .acc-vote { color: #868e96; }
.acc-vote-unreliable { background: #f8f9fa; }
.acc-unreliable { color: #e67700; font-size: 0.9rem; }
/* Cards wherever the table is narrow: one of two models side by side (.acc-narrow), or a phone. */
.acc-narrow table.acc-votes thead { display: none; }
.acc-narrow table.acc-votes, .acc-narrow table.acc-votes tbody, .acc-narrow table.acc-votes tr,
.acc-narrow table.acc-votes td { display: block; width: 100%; }
.acc-narrow table.acc-votes tr { border: 1px solid var(--border-color-primary); border-radius: 8px;
  margin: 0.4rem 0; padding: 0.3rem 0.5rem; }
.acc-narrow table.acc-votes td { border: none; padding: 0.15rem 0; }
.acc-narrow table.acc-votes td::before { content: attr(data-label) ": "; font-weight: 600; color: var(--body-text-color-subdued); }
.acc-narrow table.acc-votes td[data-label='Method']::before { content: ""; }
@media (max-width: 640px) {
  table.acc-votes thead { display: none; }
  table.acc-votes, table.acc-votes tbody, table.acc-votes tr, table.acc-votes td { display: block; width: 100%; }
  table.acc-votes tr { border: 1px solid var(--border-color-primary); border-radius: 8px; margin: 0.4rem 0; padding: 0.3rem 0.5rem; }
  table.acc-votes td { border: none; padding: 0.15rem 0; }
  table.acc-votes td::before { content: attr(data-label) ": "; font-weight: 600; color: var(--body-text-color-subdued); }
  table.acc-votes td[data-label='Method']::before { content: ""; }
}
@media (max-width: 640px) {
  .acc-verdict { font-size: 1.1rem; }
  .tab-wrapper button, [role='tab'] { font-size: 0.95rem; }
}
"""
# On a phone: a table of six or more columns keeps readable columns (its share
# widths taken of a wider table) and scrolls sideways inside its box, saying so under it; words
# break only between letters when a single word is wider than its column.
CSS += """
@media (max-width: 640px) {
  .acc-table:has(th:nth-child(6)) .table-container { overflow-x: auto !important; }
  .acc-table:has(th:nth-child(6)) .table-wrap { min-width: 980px; }
  .acc-table:has(th:nth-child(9)) .table-wrap { min-width: 1500px; }
  .acc-table:has(th:nth-child(6))::after { content: "⟷ Swipe the table sideways: more columns on the right";
    display: block; padding: 0.25rem 0.5rem; font-size: 0.85rem; color: var(--body-text-color-subdued); }
  .acc-table th, .acc-table th span { overflow-wrap: break-word !important; word-break: normal !important; hyphens: auto; }
}
"""
# The first screen: a probe's figure takes room only once it holds a figure (no empty plot and gap
# above the fold before a result exists); the model picker's group heading is a heading, not a choice.
CSS += """
#probe-surprisal:has(> .empty), #probe-surprisal-2:has(> .empty) { display: none !important; }  /* Gradio's empty plot */
#tab-probe .block:has(> .html-container > .prose:empty) { display: none !important; }
#probe-region-help summary { cursor: pointer; }
ul[role=listbox] li[aria-label^='── '] { pointer-events: none; cursor: default; font-weight: 600; font-size: 0.9rem;
  color: var(--body-text-color-subdued); background: var(--background-fill-secondary);
  border-top: 1px solid var(--border-color-primary); }
"""
# The token table: a number never wraps (no break inside "0.0000785"), and a word breaks only where it
# cannot fit on a line of its own (the tables' default breaks anywhere).
CSS += """
#probe-tokens [role=gridcell] *, #probe-tokens [role=columnheader] * { overflow-wrap: break-word !important;
  word-break: normal !important; hyphens: manual !important; }
#probe-tokens [role=gridcell]:is([data-col='3'], [data-col='5'], [data-col='6']) * {
  white-space: nowrap !important; font-variant-numeric: tabular-nums; }
@media (max-width: 640px) { #probe-tokens .table-wrap { min-width: 1250px !important; } }  /* a tenth: a whole word */
.acc-overlay-toggle input { appearance: auto; -webkit-appearance: radio; accent-color: #4c6ef5; }
"""
# The teacher's overlay: each token on a colour (GLTR's four), big enough for a projector; a radio toggle
# that the CSS reads (no round trip): the rank view or the surprisal view.
CSS += """
.acc-overlay { margin: 0.5rem 0; padding: 0.6rem 0.8rem; border: 1px solid var(--border-color-primary); border-radius: 8px; }
.acc-overlay-title { margin-bottom: 0.3rem; }
.acc-overlay-toggle { margin: 0.2rem 0 0.4rem 0; }
.acc-overlay-toggle label { margin-right: 1rem; cursor: pointer; white-space: nowrap; }
.acc-overlay:has(input[value='surprisal']:checked) .acc-overlay-rank { display: none; }
.acc-overlay:has(input[value='rank']:checked) .acc-overlay-surprisal { display: none; }
.acc-legend { display: flex; flex-wrap: wrap; gap: 0.2rem 1rem; font-size: 0.9rem; margin: 0.2rem 0 0.4rem 0; }
.acc-legend-item { white-space: nowrap; }
.acc-swatch { display: inline-block; width: 1.1em; height: 1.1em; border-radius: 3px; vertical-align: -0.2em;
  margin-right: 0.35em; border: 1px solid rgba(0, 0, 0, 0.2); }
.acc-overlay-line { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 0.8rem; margin: 0.25rem 0; }
.acc-overlay-side { font-size: 0.9rem; color: var(--body-text-color-subdued); min-width: 7.5rem; }
.acc-overlay-text { font-size: clamp(1.2rem, 3.4vw, 1.7rem); line-height: 1.7; overflow-wrap: break-word; min-width: 0; }
.acc-tok { color: #1a1a1a; border-radius: 3px; padding: 0.05em 0; }
"""
# The gallery's projection view: big type that wraps at word boundaries and fits any width.
CSS += """
.acc-proj { padding: 1rem 1.4rem; border-radius: 0.8rem; background: var(--block-background-fill);
  border: 1px solid var(--border-color-primary); }
.acc-proj-where { font-size: 1.2rem; color: var(--body-text-color-subdued); overflow-wrap: anywhere; }
.acc-proj-row { display: flex; flex-wrap: wrap; gap: 0.4rem 1rem; align-items: center; margin: 0.6rem 0; }
.acc-proj-letter { font-size: 2rem; font-weight: 700; min-width: 1.6em; }
.acc-proj-verdict { min-width: 15.5rem; }  /* the two sentences start in one column */
.acc-proj-sentence { flex: 1 1 18rem; min-width: 0; font-size: clamp(1.4rem, 4.6vw, 2.6rem); line-height: 1.25;
  overflow-wrap: break-word; }
.acc-proj-takeaway { font-size: clamp(1.15rem, 3.2vw, 1.7rem); margin-top: 1.2rem; padding-top: 0.8rem;
  border-top: 2px solid var(--border-color-primary); }
.acc-proj-ask { font-size: clamp(1.05rem, 2.8vw, 1.4rem); margin-top: 1.2rem; color: var(--body-text-color-subdued); }
@media (max-width: 640px) {
  .acc-proj { padding: 0.7rem 0.8rem; }
  .acc-proj-where { font-size: 1rem; }
  .acc-proj-row { margin: 0.7rem 0; }
  .acc-proj-letter { font-size: 1.5rem; min-width: 1.2em; }
  .acc-proj-verdict { min-width: 0; }
  .acc-proj-verdict span { font-size: 1.05rem !important; }
  .acc-proj-sentence { flex-basis: 100%; }
}
"""
