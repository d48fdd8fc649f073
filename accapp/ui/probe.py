"""Probe tab: one minimal pair, every method's verdict, per-token surprisal, and the benchmark beside it.

Layout and wiring only: the logic is :mod:`accapp.service.probe` (shared with the ``/probe`` API
endpoint, :func:`probe_api`, so the page and the API always agree), the HTML is
:mod:`accapp.ui.probe_view`, the model comes from :meth:`AppState.with_engine`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

import gradio as gr
import plotly.graph_objects as go

from accapp import logs
from accapp.benchmarks import label_of, language_name
from accapp.errors import MAX_SENTENCE_CHARS, UserError
from accapp.files import safe_name
from accapp.methods import method_ids
from accapp.segment import characters, joined_note, segmented_note
from accapp.service import export, verdicts
from accapp.service import overlay as overlays
from accapp.service import probe as svc
from accapp.service import region as regions
from accapp.service.catalog import DEFAULT_MODEL, allow_any_model, get_spec, headline, preset
from accapp.service.host import ANY, BENCHMARKS, get_state, paradigms, phenomena, random_pair
from accapp.service.messages import message_of
from accapp.service.probe import DEFAULT_BENCH_METHOD, method_choices
from accapp.ui import links, many_pairs, plots, region_view
from accapp.ui.common import (
    HEADING_VALUE,
    esc,
    friendly,
    intro,
    model_picker_choices,
    note,
    pair_label,
    unavailable_reason,
)
from accapp.ui.expected_view import TOKEN_LEGEND, expected_html, overlay_html, token_columns, token_frame
from accapp.ui.method_inputs import MethodBoxes, MethodPick
from accapp.ui.probe_view import (
    busy_html,
    context_html,
    error_html,
    headline_html,
    judgment_widths,
    pending_html,
    styled,
    table_columns,
    verdict_frame,
    votes_html,
)
from accapp.ui.queues import PROBE_QUEUE

log = logging.getLogger("accapp.ui")
EXAMPLE = ("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")


@dataclass
class ProbeTab:
    good: gr.Textbox
    bad: gr.Textbox
    meta: gr.State
    model: gr.Dropdown
    methods: gr.CheckboxGroup
    pair_label: gr.HTML
    run_event: dict  # the Compare button's event (fn, inputs, outputs, ...), for other tabs to chain
    link_load: dict | None = None  # the page load that reads a shared link (wire_links)


def _context(model_id, method, meta, good, bad) -> str:
    good, bad, _ = regions.split_pair(good, bad)  # the pair as scored: a region's brackets stripped
    ctx = svc.method_context(get_state().store(), model_id, method, meta, good, bad)
    return context_html(ctx, get_spec(model_id).name, svc.method_name(method))


# ------------------------------------------------------------------------------------------ handlers
NO_SECOND = ""  # the second-model dropdown's "none"
VIEWS = ["words", "words: sum of tokens", "characters", "tokens"]  # characters: Chinese one character a word


class Latest:
    """Per visitor (Gradio session), the number of their newest probe and whether they pressed Stop:
    a probe stops at its next stage when a newer one has started or Stop was pressed. Bounded: the
    MAX_SESSIONS most recent sessions."""

    MAX_SESSIONS = 4096

    def __init__(self) -> None:
        self._n: OrderedDict = OrderedDict()  # session -> (newest probe's number, Stop pressed)
        self._lock = threading.Lock()

    def start(self, session) -> int:
        with self._lock:
            n = self._n.pop(session, (0, False))[0] + 1
            self._n[session] = (n, False)
            while len(self._n) > self.MAX_SESSIONS:
                self._n.popitem(last=False)
            return n

    def stop(self, session) -> None:
        """The visitor pressed Stop: their newest probe ends at its next stage and says so (was_stopped)."""
        with self._lock:
            if session is not None and session in self._n:
                self._n[session] = (self._n[session][0], True)

    def is_latest(self, session, n: int) -> bool:
        with self._lock:
            return self._n.get(session, (n, False)) == (n, False)

    def was_stopped(self, session, n: int) -> bool:
        with self._lock:
            return self._n.get(session) == (n, True)


LATEST = Latest()


def _models(model_id: str, model2: str | None) -> list[str]:
    """The models to run: the picker's group heading stands for no model (the default first, none second)."""
    model_id = DEFAULT_MODEL if model_id == HEADING_VALUE else model_id
    return [model_id] + ([model2] if model2 and model2 not in (NO_SECOND, HEADING_VALUE, model_id) else [])


def _word_figure(report: dict, unit: str, view: str):
    if view == "tokens" or not report.get("words"):
        return plots.surprisal_figure(report["tokens"], unit)
    words = report["words"]
    if view == "characters":
        words = char_words(report)
    if view == "words: sum of tokens":
        words = {k: [dict(w, logprob=w["logprob_sum"]) for w in ws] for k, ws in words.items()}
    items = {k: plots.word_items(words[k], report["tokens"][k]) for k in ("good", "bad")}
    return plots.surprisal_figure(items, unit, item="word")


def char_words(report: dict) -> dict:
    """The character view's units of both sentences: one character a unit, save where one token
    covers several (they stay one unit, as in the words view)."""
    spans = {k: [(t["start"], t["end"]) for t in (report.get("tokens") or {}).get(k) or []] for k in ("good", "bad")}
    return {k: characters(ws, spans.get(k)) for k, ws in report["words"].items()}


class PngFigure(go.Figure):
    """A plotly figure that carries its own plotly config to the page (Gradio's Plot passes a
    "config" key of the figure's JSON to Plotly.react): the modebar's "Download plot as a PNG"
    button names the file after the figure instead of plotly's "newplot.png"."""

    def to_json(self, *args, **kwargs):
        out = json.loads(super().to_json(*args, **kwargs))
        out["config"] = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": self._png_name, "scale": 2}}
        return json.dumps(out)


def png_name(kind: str, report: dict, unit: str, view: str) -> str:
    """'surprisal_smollm2-135m-instruct_These-casseroles-disgust_bits_words': what, model, pair, unit, view."""
    words = "-".join((report.get("good") or "").split()[:3])[:40]
    return safe_name(f"{kind}_{report.get('model', '')}_{words}_{unit}_{view.replace(': ', '-')}")


def with_png_name(fig, name: str):
    """The figure itself as a PngFigure (no copy: PngFigure adds a method, no state; a copy revalidates the figure)."""
    if fig is None:
        return None
    fig.__class__ = PngFigure
    fig._png_name = name
    return fig


def render_report(report: dict | None, unit: str, view: str, figures: bool = True, narrow: bool = False):
    """(headline, surprisal figure, difference figure, votes table) of one model's report
    (figures=False: the figures left as they are, gr.update())."""
    if report is None:
        return "", None, None, ""
    head = report.get("headline")
    if head:
        report = dict(report, headline=dict(head, text=verdicts.headline_text(head, unit)))
    if not figures:
        return headline_html(report), gr.update(), gr.update(), votes_html(report, unit, narrow)
    strip = report.get("difference")
    if strip and view == "characters" and report.get("words"):  # the strip over characters, as the figure
        strip = verdicts.difference_strip(*(char_words(report)[k] for k in ("good", "bad")))
    diff = plots.difference_figure(strip, unit) if strip and view != "tokens" else None
    diff = with_png_name(diff, png_name("surprisal-difference", report, unit, view))
    fig = with_png_name(_word_figure(report, unit, view), png_name("surprisal", report, unit, view))
    return (headline_html(report), fig, gr.update(value=diff, visible=diff is not None),
            votes_html(report, unit, narrow))


def view_note(report: dict | None, view: str) -> str:
    """Which word probability the figure shows, in a line."""
    if report is None:
        return ""
    if view == "tokens":
        return "Surprisal of each token, as the model's tokenizer cuts the sentence (1 bit = ln 2 nats)."
    rule = report.get("word_rule") or ""
    zh = segmented_note(report.get("words"), view)
    words = char_words(report) if view == "characters" and report.get("words") else report.get("words")
    zh += joined_note(words)
    if view == "characters":
        return "Surprisal of each character (Chinese one character a word; other words as in the words view)." + zh
    if view == "words: sum of tokens":
        return "Surprisal of each word as the plain sum of its tokens' surprisals." + zh
    return (f"Surprisal of each word: {rule}" if rule else "Surprisal of each word.") + zh


class Saved(Mapping):
    """A probe's results as the `saved` State holds them: read-only, shared by every visitor of a kept
    gallery answer. Gradio hashes a State that has change listeners before and after every step
    (utils.deep_hash, a sha256 for each of its ~10,000 numbers, tens of ms on a busy Space); a
    mapping that is not a dict is hashed by its identity, and each step's results are a new object."""

    def __init__(self, results: Mapping) -> None:
        self._results = results

    def __getitem__(self, key):
        return self._results[key]

    def __iter__(self):
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)


def _outputs(saved: dict | None, unit: str, view: str, status: str = "", figures: bool = True, waiting: str = ""):
    """Every output of a probe, rendered from `saved` ({"reports": [a, b or None], ...});
    figures=False keeps the figures (a later stage: words and tokens are the first stage's).
    waiting: the note in the column of a model whose first stage has not come yet (side by side,
    the other model's stages show meanwhile)."""
    reports = (saved or {}).get("reports") or [None, None]
    a, b = reports[0], reports[1] if len(reports) > 1 else None
    two = len((saved or {}).get("models") or []) > 1  # side by side: each model's table as cards
    ra, rb = render_report(a, unit, view, figures, two), render_report(b, unit, view, figures, two)
    if waiting:
        ra = (waiting, *ra[1:]) if a is None else ra
        rb = (waiting, *rb[1:]) if b is None and two else rb
    table = None
    if a is not None:
        frame = verdict_frame(a.get("verdicts_run") or a["verdicts"], bool(a.get("has_run")), a.get("phenomenon"), unit)
        table = gr.update(value=styled(frame), column_widths=judgment_widths(list(frame.columns)))  # fits its panel
    pll = a.get("pll") if a else None
    return (status, view_note(a, view), *ra, gr.update(visible=b is not None or two), *rb,
            gr.update(value=plots.pll_figure(pll, unit) if pll else None, visible=bool(pll)),
            table, saved if saved is None or isinstance(saved, Saved) else Saved(saved))


def _stop_outputs(message: str):
    """A failed request: the message, and every old result cleared."""
    return _outputs(None, "bits", "words", error_html(message))


# The class of the status line's first note of a probe: the page scrolls to the answer when it
# appears (SCROLL_JS), whichever tab or button started the probe.
STARTED = "acc-probe-started"


def _loading_text(names: list[str]) -> str:
    return ("Loading " + " and ".join(names) + " (first use: this takes a little while)…") if names else "Scoring…"


def run_probe(good, bad, model_id, model2, methods, unit, view, bench_method, meta, request: gr.Request = None,
              context=None):
    """The probe in stages (a generator, service.probe.staged_probe): surprisal and the sentence-probability
    methods first, then the in-template and prompting methods as they finish, for one model or two (each
    model's stages as they come); once every stage is in, the benchmark box (context_after)."""
    session = getattr(request, "session_hash", None)
    me = LATEST.start(session)
    try:
        models = _models(model_id or DEFAULT_MODEL, model2)
        for stage in svc.staged_probe(good, bad, models, methods, unit, meta, lambda: LATEST.is_latest(session, me),
                                      context):
            meta = stage.meta
            if stage.saved is None:
                notice = note(esc(stage.notice), "warn") if stage.notice else ""  # known before any method runs
                first = f"<div class='{STARTED}'>{notice}{busy_html(_loading_text(stage.loading))}</div>"
                yield (*_outputs(None, unit, view, first), meta, pair_label(meta), "")  # the old pair's box goes
            else:
                done = not stage.pending
                box = context_after(models[0], bench_method, meta, good, bad, stage.saved) if done else gr.update()
                status = pending_html(stage.pending)
                if stage.first:  # marked again: a known answer comes ms after the first note, which the page may miss
                    status = f"<div class='{STARTED}'></div>{status}"
                stopped = LATEST.was_stopped(session, me)  # Stop came while this stage was drawn: it is the last
                yield (*_outputs(stage.saved, unit, view, stopped_note() if stopped else status, figures=stage.first,
                                 waiting=busy_html(_loading_text(stage.loading))),
                       meta, pair_label(meta), box)
                if stopped:
                    return
        if LATEST.was_stopped(session, me):  # the last word, whatever stage had reached the page before the Stop
            yield (stopped_note(), *(gr.update(),) * 16)
    except Exception as exc:  # noqa: BLE001 - the message replaces every old result; the log keeps the traceback
        if not isinstance(exc, UserError):
            logs.failed(log, "probe", exc)
        yield (*_stop_outputs(message_of(exc)), meta, pair_label(meta), "")


def expected_outputs(saved, unit):
    """What the first model expected instead, and every token of the models shown."""
    reports = (saved or {}).get("reports") or []
    if not reports or reports[0] is None:
        return "", gr.update(value=None)
    return expected_html(reports[0]), token_frame(reports, unit)


def overlay_output(saved, unit):
    """The first model's sentences coloured token by token (rank or surprisal), once its probe has finished:
    the ranks take one more pass of the model over the two sentences (service.overlay.pair_ranks)."""
    reports = (saved or {}).get("reports") or []
    a = reports[0] if reports else None
    if a is None:
        return ""
    if a.get("kind") != "causal":
        return overlay_html(a, None, unit)
    if a.get("pending"):
        return overlay_html(a, None, unit, "The colours by rank come once every method has finished.")
    try:
        ranks = overlays.pair_ranks(a["model"], a["kind"], a["good"], a["bad"], (a.get("context") or {}).get("text", ""))
    except Exception as exc:  # noqa: BLE001 - the colours by surprisal stand without the ranks
        if not isinstance(exc, UserError):
            logs.failed(log, "overlay", exc)
        return overlay_html(a, None, unit, "The ranks could not be computed: " + message_of(exc))
    return overlay_html(a, ranks, unit)


def stopped_note() -> str:
    return note("Stopped: the results that had finished are shown; the rest were not computed.", "warn")


def stop_probe(request: gr.Request = None):
    """Stop: the visitor's probe ends at its next stage (LATEST). Gradio's cancel alone left a race: a stage
    that reached the page after this note overwrote it, and the page said "Still computing" for good."""
    LATEST.stop(getattr(request, "session_hash", None))
    return stopped_note()


@friendly
def context_after(model_id, bench_method, meta, good, bad, saved):
    """The benchmark context under the table, once the probe has finished."""
    if not saved or not saved.get("reports") or saved["reports"][0] is None:
        return gr.update()
    spec = get_spec(model_id)
    if bench_method not in method_ids(spec.kind):
        bench_method = DEFAULT_BENCH_METHOD[spec.kind]
    try:
        return _context(model_id, bench_method, meta, good, bad)
    except Exception as exc:  # noqa: BLE001 - the probe stands without its context
        return note(f"The benchmark results could not be read: {esc(exc)}", "warn")


@friendly
def replot(saved, unit, view):
    if not saved:
        return (gr.update(),) * 12
    return _outputs(saved, unit, view, gr.update())[1:-1]


@friendly
def update_context(model_id, method, meta, good, bad, saved):
    if not saved or not (good or "").strip() or not (bad or "").strip():
        return gr.update()
    return _context(model_id, method, meta, good, bad)


@friendly
def on_model_change(model_id, methods):
    """The method lists for the picked model (the picker's group heading, picked with the keyboard, goes back
    to the default model)."""
    picked = gr.update()
    if model_id == HEADING_VALUE:
        model_id = picked = DEFAULT_MODEL
    kind = get_spec(model_id).kind
    choices = method_choices(kind)
    ids = [i for _, i in choices]
    keep = [m for m in (methods or []) if m in ids] or ids
    bench = DEFAULT_BENCH_METHOD[kind]
    why = unavailable_reason(model_id)  # said at the pick, not after a Compare that cannot run
    said = note(f"<b>{esc(get_spec(model_id).name)}</b> cannot run on this server ({esc(why)}): pick one of the "
                "models at the top of the list.", "warn") if why else gr.update()
    return gr.update(choices=choices, value=keep), gr.update(choices=choices, value=bench), gr.update(
        choices=choices, value=keep[0]), picked, said


@friendly
def pick_random(bench, phen, para):
    meta = random_pair(bench, phen, para)
    return meta["good"], meta["bad"], meta, pair_label(meta)


@friendly
def on_bench_change(bench):
    return (gr.update(choices=[ANY] + phenomena(bench), value=ANY),
            gr.update(choices=[ANY] + paradigms(bench), value=ANY))


@friendly
def on_phen_change(bench, phen):
    return gr.update(choices=[ANY] + paradigms(bench, phen), value=ANY)


def _prompts(engine, method, good, bad, context=None) -> list[dict]:
    return engine.prompts_for(svc.checked_pair(engine, good, bad, context), method)


@friendly
def show_prompts(model_id, method, good, bad, context=None):
    if not method:
        raise UserError("Pick the method whose prompts to show.")
    svc.ids_for(get_spec(model_id).kind, [method])
    good, bad, _ = regions.split_pair(good, bad)  # the model never sees a region's brackets
    shown = get_state().with_engine(model_id, _prompts, method, good, bad, context)
    blocks = [f"── {i + 1}. {p['kind']} ──\n{p['text']}" for i, p in enumerate(shown)]
    return "\n\n".join(blocks) if blocks else "(this method feeds the model no extra strings)"


# ------------------------------------------------------------------------------------------ links
def _query_of(request) -> object:
    """The page URL's query (Gradio's client sends it with each event) as a string or a mapping."""
    qp = getattr(request, "query_params", None)
    if qp is None:
        return ""
    return str(qp) if hasattr(qp, "multi_items") else dict(qp)  # starlette's QueryParams prints as its query


def link_values(request) -> dict | None:
    """A shared link's checked probe values, None when the page URL names no probe; UserError otherwise."""
    params = links.parse_query(_query_of(request))
    return links.probe_values(params) if links.is_probe_link(params) else None


def load_link(request: gr.Request = None):
    """On page load: a shared probe link fills the inputs (good, bad, model, model2, methods, unit, view,
    bench method, prompt method; after the status line, the context), says what it does in the status line,
    and sets the flag that runs it."""
    keep = (gr.update(),) * 9
    try:
        values = link_values(request)
    except Exception as exc:  # noqa: BLE001 - a hostile link gets a message, never a traceback
        if not isinstance(exc, UserError):
            logs.failed(log, "link", exc)
        return (*keep, error_html("This link cannot be opened: " + message_of(exc)), gr.update(), False)
    if values is None:
        return (*keep, gr.update(), gr.update(), False)
    kind = get_spec(values["model"]).kind
    choices = method_choices(kind)
    chosen = [m for m in (values["methods"] or method_ids(kind)) if m in method_ids(kind)] or method_ids(kind)
    bench = DEFAULT_BENCH_METHOD[kind]
    return (values["good"], values["bad"], values["model"], values["model2"] or NO_SECOND,
            gr.update(choices=choices, value=chosen), values["unit"], values["view"],
            gr.update(choices=choices, value=bench), gr.update(choices=choices, value=chosen[0]),
            busy_html("Opening the shared link…"), values["context"], True)


def run_linked(go_on, good, bad, model_id, model2, methods, unit, view, bench_method, meta, request: gr.Request = None,
               context=None):
    """The probe of a shared link (load_link set go_on), else nothing changes."""
    if not go_on:
        yield (gr.update(),) * 17
        return
    yield from run_probe(good, bad, model_id, model2, methods, unit, view, bench_method, meta, request, context)


# ------------------------------------------------------------------------------------------ export
EXPORT_HIDDEN = gr.update(visible=False, value=None)


def prepare_export(saved, model, model2, methods, unit, view):
    """The shown probe as JSON and CSV files (accapp.service.export): (note, JSON button, CSV button)."""
    reports = [r for r in ((saved or {}).get("reports") or []) if r]
    if not reports:
        return note("Compare two sentences first: the export is of the result shown.", "warn"), EXPORT_HIDDEN, EXPORT_HIDDEN
    if any(r.get("pending") for r in reports):
        return note("The probe is still running: export once every method has finished.", "warn"), EXPORT_HIDDEN, EXPORT_HIDDEN
    try:
        state = get_state()
        context = (reports[0].get("context") or {}).get("text", "")
        extras = [state.with_engine(r["model"], export.engine_extras, r["good"], r["bad"], export.report_methods(r),
                                    context) for r in reports]
        models = (saved or {}).get("models") or [r["model"] for r in reports]
        good, bad = regions.marked_pair(reports[0])  # the region back in brackets: the link keeps it
        link = links.probe_query({"good": good, "bad": bad, "model": models[0],
                                  "model2": models[1] if len(models) > 1 else "", "methods": methods,
                                  "unit": unit, "view": view, "context": context})
        record = export.export_record(reports, extras, link)
        js, cs = export.write_exports(record, state.tmpdir() / "exports")
    except Exception as exc:  # noqa: BLE001 - a message, the traceback in the log
        if not isinstance(exc, UserError):
            logs.failed(log, "export", exc)
        return error_html(message_of(exc)), EXPORT_HIDDEN, EXPORT_HIDDEN
    return (note("Ready: the JSON holds everything (provenance included); the CSV is one long table, a "
                 "<code>record</code> column says what each row is.", "info"),
            gr.update(value=str(js), visible=True), gr.update(value=str(cs), visible=True))


def clear_export():
    return "", EXPORT_HIDDEN, EXPORT_HIDDEN


# ------------------------------------------------------------------------------------------ API
def probe_api(good: str, bad: str, model: str = DEFAULT_MODEL, methods: list[str] | None = None,
              context: str | None = None) -> dict:
    """Score one minimal pair with every selected method.

    ``context``: text both sentences follow (a discourse, a question), conditioned on and never scored
    (the LP family and PLL read it; in-template and prompting methods do not: ``context`` in the answer
    says which). A critical region marked ``[[...]]`` in the sentences is stripped before scoring; the
    answer's ``region`` gives its summed surprisal and the spill-over's (the next word) in each sentence.

    Returns {model, good, bad, headline: {method, name, verdict, margin (nats, good − bad), margin_in_unit
    (bits), text, where}, words: {good, bad: [{word, start, end, surprisal_bits, surprisal_nats, logprob,
    logprob_sum, tokens}]}, word_rule, warnings: [...], methods: [one vote per method: {method, name, family,
    vote, rule, reliable, unreliable_reason, ...}], families: [{family, good, bad, none, not_voting}],
    agreement, reliability: {method: {accuracy, ci_low, ci_high, top_answer, top_answer_share, reliable,
    reason}}, majority (every judgment counted, as before), verdicts: [{method, name, family, template,
    variant, score_good, score_bad, difference, verdict, agrees_with_majority, prediction, votes}],
    tokens: {good, bad: [{token, start, end, logprob}]}, expected: what the model expected instead (a causal LM;
    ACCAPP_TOP_K candidates a position): {applies, k, note, differing: [{good, bad: word record}] where the
    sentences differ, good, bad: {words: [{index, word, context, p_word, p_first_token, p_first_token_begins,
    p_word_before_goes_on, expected: [{rank, id, token, p, logprob, p_next_word_begins}], text}], tokens:
    [{index, context, token, p, expected: [{rank, id, token, p, logprob}], text}]}} (probabilities 0 to 1,
    log-probs in nats)}.
    ``methods``: method ids (None or ["all"] = every method the model can run).
    """
    return _probe_api(good, bad, model, methods, context)


@friendly
def _probe_api(good, bad, model, methods, context=None):
    return svc.probe_api(model, good, bad, methods, context)


# ------------------------------------------------------------------------------------------ layout
COUNTER_JS = f"""(g, b) => {{
  const n = (s) => [...(s || "").trim()].length, lim = {MAX_SENTENCE_CHARS};
  const part = (label, s) => `${{label}}: ${{n(s)}} / ${{lim}} characters` + (n(s) > lim ? " (too long: shorten it)" : "");
  const over = n(g) > lim || n(b) > lim;
  return `<div class="acc-counter${{over ? " acc-over" : ""}}">${{part("acceptable", g)}} · ${{part("unacceptable", b)}}</div>`;
}}"""


SCROLL_JS = f"""(s) => {{
  if (!(s || "").includes("{STARTED}")) return;
  const go = () => {{ const e = document.querySelector("#probe-status");
    if (!e || e.offsetParent === null) return;  // the Probe tab is not the one shown
    const top = e.getBoundingClientRect().top;  // already in the window's upper part: the answer shows below it
    if (top < 0 || top > 0.4 * window.innerHeight) e.scrollIntoView({{block: "start"}}); }};
  requestAnimationFrame(() => setTimeout(go, 0));
}}"""


def build() -> ProbeTab:
    gr.HTML(intro(
        "Probe a minimal pair",
        "Type an acceptable sentence and a minimally different unacceptable one, or pick a pair from one of "
        "the benchmarks (English and Chinese). The answer comes first: LP, the benchmark standard, then one vote per "
        "method by family. Below, how surprised the model is by each word, and every method's verdict."))
    meta = gr.State(None)
    saved = gr.State(None)
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            discourse = gr.Textbox(label="Context before both sentences (optional, not scored)", value="", lines=1,
                                 max_lines=6, elem_id="probe-discourse",
                                 placeholder="A discourse or a question both sentences follow, e.g. Who ate the cake?")
            good = gr.Textbox(label="Acceptable sentence", value=EXAMPLE[0], elem_id="probe-good",
                              info="Mark a critical region with [[...]] to sum its surprisal, or click a word in the per-word figure.")
            bad = gr.Textbox(label="Unacceptable sentence", value=EXAMPLE[1], elem_id="probe-bad")
            counter = gr.HTML(f"<div class='acc-counter'>acceptable: {len(EXAMPLE[0])} / {MAX_SENTENCE_CHARS} characters · "
                              f"unacceptable: {len(EXAMPLE[1])} / {MAX_SENTENCE_CHARS} characters</div>",
                              elem_id="probe-counter")
            with gr.Row():
                run_btn = gr.Button("Compare the two sentences", variant="primary", elem_id="probe-run", scale=3)
                swap_btn = gr.Button("⇅ Swap", elem_id="probe-swap", scale=1, min_width=80)
                stop_btn = gr.Button("Stop", variant="stop", elem_id="probe-stop", scale=1, min_width=80)
            # folded under the buttons, so that Compare stays on the first screen
            gr.HTML(f"<details class='acc-counter'><summary>How to mark a critical region (brackets, or a click on a "
                    f"word)</summary>{region_view.REGION_HELP} {region_view.CLICK_HELP}</details>",
                    elem_id="probe-region-help")
        with gr.Column(scale=2):
            with gr.Group():
                bench = gr.Radio([(label_of(b), b) for b in BENCHMARKS], value=BENCHMARKS[0],
                                 label="Or pick a pair from a benchmark", elem_id="probe-bench",
                                 info=" · ".join(f"{label_of(b)}: {language_name(b)}" for b in BENCHMARKS))
                phen = gr.Dropdown([ANY] + phenomena(BENCHMARKS[0]), value=ANY, label="Phenomenon", elem_id="probe-phen")
                para = gr.Dropdown([ANY] + paradigms(BENCHMARKS[0]), value=ANY, label="Paradigm", elem_id="probe-para")
                rand_btn = gr.Button("🎲 Random pair", elem_id="probe-random")
            pair_label = gr.HTML("", elem_id="probe-pair-label")
    with gr.Row():
        # ACCAPP_ALLOW_ANY_MODEL=1 (a local run): the field also takes any hub id, folder or .gguf file, typed in.
        any_model = allow_any_model()
        model = gr.Dropdown(model_picker_choices(), value=DEFAULT_MODEL, label="Model", scale=3, elem_id="probe-model",
                            allow_custom_value=any_model, filterable=True,
                            info=("Pick one, or type a hub id (org/name), a folder or a .gguf file." if any_model else
                                  "Type to filter. Offline models work without a network."))
        model2 = gr.Dropdown([("none", NO_SECOND)] + model_picker_choices(), value=NO_SECOND, label="Compare with a second model",
                             scale=3, elem_id="probe-model2", info="Shown side by side: surprisal and verdicts.",
                             allow_custom_value=any_model, filterable=True)
        unit = gr.Radio(["bits", "nats"], value="bits", label="Surprisal in", scale=1, min_width=150,
                        info="1 bit = ln 2 nats", elem_id="probe-unit")
        view = gr.Radio(VIEWS, value="words", label="Surprisal by", scale=2, min_width=200, elem_id="probe-view",
                        info="words: each word's probability; tokens: the model's own pieces")
    with gr.Accordion("Choose the judgment methods (all are selected at first)", open=False):
        methods = MethodBoxes(method_choices("causal"), value=method_ids("causal"), label="Judgment methods",
                                   elem_id="probe-methods")
        with gr.Row():
            all_btn = gr.Button("Select all", size="sm")
            quick_btn = gr.Button("Only LP, MeanLP, PenLP (fast)", size="sm")
    status = gr.HTML(note("Press <b>Compare the two sentences</b>. The first comparison loads the model.", "info"),
                     elem_id="probe-status")
    with gr.Row(elem_id="probe-share"):
        copy_btn = gr.Button("🔗 Copy link", size="sm", elem_id="probe-copy-link", scale=0, min_width=130)
        export_btn = gr.Button("⬇ Export this result (JSON, CSV)", size="sm", elem_id="probe-export", scale=0, min_width=240)
        dl_json = gr.DownloadButton("⬇ Download JSON", visible=False, size="sm", elem_id="probe-download-json", scale=0, min_width=150)
        dl_csv = gr.DownloadButton("⬇ Download CSV", visible=False, size="sm", elem_id="probe-download-csv", scale=0, min_width=150)
        copy_note = gr.HTML("", elem_id="probe-copy-note")
    export_note = gr.HTML("", elem_id="probe-export-note")
    view_line = gr.HTML("", elem_id="probe-view-note", elem_classes=["acc-small"])
    extras = gr.HTML("", elem_id="probe-region")  # the context's note and the critical region (ui/region_view.py)
    with gr.Row(equal_height=False, elem_classes=["acc-models"]):
        with gr.Column(min_width=300):
            head_a = gr.HTML("", elem_id="probe-summary")
            fig_a = gr.Plot(label="Surprisal", elem_id="probe-surprisal", show_label=False)
            diff_a = gr.Plot(label="Bad − good surprisal per word", elem_id="probe-diff", visible=False, show_label=False)
            overlay_box = gr.HTML("", elem_id="probe-overlay")  # each token coloured by rank or surprisal
            expected_box = gr.HTML("", elem_id="probe-expected")  # what the model expected where the sentences differ
            votes_a = gr.HTML("", elem_id="probe-votes")
        with gr.Column(min_width=300, visible=False, elem_id="probe-second") as col_b:
            head_b = gr.HTML("", elem_id="probe-summary-2")
            fig_b = gr.Plot(label="Surprisal (second model)", elem_id="probe-surprisal-2", show_label=False)
            diff_b = gr.Plot(label="Bad − good (second model)", elem_id="probe-diff-2", visible=False, show_label=False)
            votes_b = gr.HTML("", elem_id="probe-votes-2")
    pll = gr.Plot(label="Masked LM: per-token PLL under each variant (multi-token words with an inflated "
                  "PLL-original are marked)", visible=False, elem_id="probe-pll")
    with gr.Accordion("Every token: surprisal, probability and what the model expected there", open=False):
        gr.HTML(f"<div class='acc-small'>{TOKEN_LEGEND}</div>", elem_id="probe-tokens-legend")
        tokens_table = gr.Dataframe(headers=token_columns("bits"), interactive=False, wrap=True, max_height=620,
                                    elem_id="probe-tokens", elem_classes=["acc-table"], buttons=["copy", "fullscreen"],
                                    column_widths=["11%", "10%", "10%", "5%", "9%", "8%", "10%", "37%"])
    with gr.Accordion("Every judgment: each template and answer order (first model)", open=False):
        table = gr.Dataframe(headers=table_columns("bits"), interactive=False, wrap=True, max_height=620,
                             elem_id="probe-table", elem_classes=["acc-table"], buttons=["copy", "fullscreen"])
    with gr.Row():
        bench_method = MethodPick(method_choices("causal"), value=headline("causal"), label="Benchmark comparison uses",
                                   elem_id="probe-bench-method", info="Whose benchmark accuracy to show below.")
    context = gr.HTML("", elem_id="probe-context")
    with gr.Accordion("Prompts exactly as the model saw them", open=False):
        with gr.Row():
            prompt_method = MethodPick(method_choices("causal"), value=preset("prompt", "causal")[0], label="Method", scale=3)
            prompt_btn = gr.Button("Show prompts", scale=1)
        prompts = gr.Textbox(label="Input strings (start token included)", lines=12, max_lines=40, interactive=False,
                             buttons=["copy"], elem_id="probe-prompts", elem_classes=["acc-prompts"])

    many_pairs.build(model, methods, unit, discourse)  # the box of many pairs (ui/many_pairs.py)

    run_inputs = [good, bad, model, model2, methods, unit, view, bench_method, meta, discourse]
    shown = [view_line, head_a, fig_a, diff_a, votes_a, col_b, head_b, fig_b, diff_b, votes_b, pll, table]
    run_outputs = [status, *shown, saved, meta, pair_label, context]  # context: the benchmark box, once all is in
    # One progress indicator, in the status line: a loading overlay on every output costs the
    # browser enough CPU to slow the model on a small machine. "multiple": a new request starts at
    # once, and the one before stops at its next stage (LATEST).
    ev = dict(fn=run_probe, inputs=run_inputs, outputs=run_outputs, api_visibility="undocumented",
              concurrency_id=PROBE_QUEUE, scroll_to_output=False, show_progress_on=[status], trigger_mode="multiple")
    # A click on a word's bar marks it as the critical region (ui/region_view.py), then the probe runs again.
    word_click = region_view.word_click_hook(["probe-surprisal", "probe-surprisal-2"])
    clicked = word_click.click(region_view.on_word_click, [good, bad], [good, bad], api_visibility="undocumented",
                               queue=False).then(**ev)
    events = [run_btn.click(**ev), good.submit(**ev), bad.submit(**ev), clicked]
    # The page URL follows each run (at the click, and again once it has finished, from the inputs it
    # ran with) and each change of unit or view: a link that reproduces what is shown.
    url_inputs = [good, bad, model, model2, methods, unit, view, discourse]
    url = dict(fn=None, inputs=url_inputs, outputs=None, js=links.PROBE_URL_JS, api_visibility="undocumented", queue=False)
    for e in events:
        e.then(**url)
    # The answer in view as the probe starts, whichever button or tab started it: the
    # status line's first note of a probe (STARTED) scrolls the page to it; the first stage fills in below.
    status.change(None, [status], None, js=SCROLL_JS, api_visibility="undocumented", queue=False)
    stop_btn.click(stop_probe, None, [status], cancels=events, api_visibility="undocumented", queue=False)
    for trigger in (run_btn.click, good.submit, bad.submit, unit.input, view.input):
        trigger(**url)
    saved.change(**url)  # a probe started from another tab (the gallery's Try it, Explore's one click) too
    copy_btn.click(None, url_inputs, [copy_note], js=links.PROBE_COPY_JS, api_visibility="undocumented", queue=False)
    export_btn.click(prepare_export, [saved, model, model2, methods, unit, view], [export_note, dl_json, dl_csv],
                     api_visibility="undocumented", concurrency_id=PROBE_QUEUE)
    saved.change(clear_export, None, [export_note, dl_json, dl_csv], api_visibility="undocumented", queue=False)
    for trigger in (saved.change, unit.input):  # drawn from what the probe returned (any stage, any tab that started it)
        trigger(expected_outputs, [saved, unit], [expected_box, tokens_table], api_visibility="undocumented", queue=False)
    for trigger in (saved.change, unit.input):  # queued: the ranks take a pass of the model
        trigger(overlay_output, [saved, unit], [overlay_box], api_visibility="undocumented", concurrency_id=PROBE_QUEUE,
                show_progress="hidden")
    for box in (good, bad):
        box.change(None, [good, bad], [counter], js=COUNTER_JS, api_visibility="undocumented", queue=False)
    unit.input(replot, [saved, unit, view], shown, api_visibility="undocumented", queue=False)
    for trigger in (saved.change, unit.input):
        trigger(region_view.extras_html, [saved, unit], [extras], api_visibility="undocumented", queue=False)
    swap_btn.click(None, [good, bad], [good, bad], js="(g, b) => [b, g]", api_visibility="undocumented", queue=False)
    view.input(replot, [saved, unit, view], shown, api_visibility="undocumented", queue=False)
    bench_method.input(update_context, [model, bench_method, meta, good, bad, saved], [context],
                       api_visibility="undocumented")
    # A pick fires this twice, the second with the method lists from before the first answer: MethodBoxes
    # and MethodPick leave out the ids that are no longer among the choices instead of refusing the request.
    model.input(on_model_change, [model, methods], [methods, bench_method, prompt_method, model, status],
                api_visibility="undocumented")
    model2.input(lambda m: NO_SECOND if m == HEADING_VALUE else gr.update(), [model2], [model2],
                 api_visibility="undocumented", queue=False)
    bench.input(on_bench_change, [bench], [phen, para], api_visibility="undocumented")
    phen.input(on_phen_change, [bench, phen], [para], api_visibility="undocumented")
    rand_btn.click(pick_random, [bench, phen, para], [good, bad, meta, pair_label], api_visibility="undocumented")
    all_btn.click(lambda m: gr.update(value=method_ids(get_spec(m).kind)), [model], [methods],
                  api_visibility="undocumented")
    quick_btn.click(lambda m: gr.update(value=preset("quick", get_spec(m).kind) or method_ids(get_spec(m).kind)[:1]), [model], [methods],
                    api_visibility="undocumented")
    prompt_btn.click(show_prompts, [model, prompt_method, good, bad, discourse], [prompts], api_visibility="undocumented",
                     concurrency_id=PROBE_QUEUE)
    go_on = gr.State(False)
    link_load = dict(fn=load_link, inputs=None,
                     outputs=[good, bad, model, model2, methods, unit, view, bench_method, prompt_method, status, discourse,
                              go_on],
                     api_visibility="undocumented", queue=False)
    linked = dict(ev, fn=run_linked, inputs=[go_on, *run_inputs])
    tab = ProbeTab(good, bad, meta, model, methods, pair_label, dict(ev, outputs=run_outputs))
    tab.link_load = {"load": link_load, "run": linked}
    return tab


def wire_links(demo: gr.Blocks, tab: ProbeTab) -> None:
    """Opening a shared probe link fills the Probe tab and runs it (its benchmark context included)."""
    demo.load(**tab.link_load["load"]).then(**tab.link_load["run"])
