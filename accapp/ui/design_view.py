"""Design tab: two to four conditions of one item (SyntaxGym's designs), their regions' surprisal in bits,
the predictions' verdicts with the numbers that decided them, and a 2x2 design's interaction in words.

Layout and wiring only: the parsing, scoring (through the model host) and the interaction are
:mod:`accapp.service.design`; every user string goes through esc.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr
import plotly.graph_objects as go

from accapp import logs
from accapp.errors import UserError
from accapp.service import design as svc
from accapp.service.catalog import DEFAULT_MODEL, model_choices, registry
from accapp.service.messages import message_of
from accapp.ui import links, plots
from accapp.ui.common import esc, friendly, intro, note
from accapp.ui.queues import PROBE_QUEUE

log = logging.getLogger("accapp.ui")
TAB_ID = "design"
HIDDEN = dict(api_visibility="undocumented")

EXAMPLE_CONDITIONS = (
    "what_gap: I know | what | the lion devoured | at sunrise.\n"
    "that_gap: I know | that | the lion devoured | at sunrise.\n"
    "what_nogap: I know | what | the lion devoured the gazelle | at sunrise.\n"
    "that_nogap: I know | that | the lion devoured the gazelle | at sunrise.")
EXAMPLE_REGIONS = "prefix | complementizer | clause | continuation"
EXAMPLE_FORMULA = "((4;%what_gap%) - (4;%that_gap%)) < ((4;%what_nogap%) - (4;%that_nogap%))"

MARKUP_HELP = (
    "<b>Conditions</b>: one a line, 2 to 4, each <code>name: sentence</code> (a line without a name is called "
    "a, b, c or d). <b>Regions</b>, the same way in every condition: split them with <code>|</code> as SyntaxGym "
    "numbers them (<code>I know | what | the lion devoured | at sunrise.</code>: regions 1 to 4; an empty region is "
    "<code>| |</code>), or mark one critical region with <code>[[ ]]</code> as in the probe "
    "(<code>I know what the lion devoured [[at sunrise]].</code>: regions 1 “before”, 2 “critical”, 3 “after”). "
    "<b>Predictions</b>: one a line, SyntaxGym's formulas: <code>(4;%what_gap%)</code> is region 4's surprisal in "
    "condition what_gap, <code>(*;%c%)</code> the whole sentence; <code>+ - * /</code>, <code>&lt; &gt; =</code>, "
    "<code>&amp;</code>, <code>|</code>, parentheses or brackets. A 2x2 design's interaction is (a − b) − (c − d) "
    "when the prediction compares such differences, or makes two opposite comparisons at one region.")


@dataclass
class DesignTab:
    conditions: gr.Textbox
    regions: gr.Textbox
    formula: gr.Textbox
    model: gr.Dropdown
    suite: gr.Dropdown
    item: gr.Dropdown
    source: gr.State  # {"suite", "item"} of a loaded shipped item, cleared when the conditions are edited
    run_event: dict  # the Run button's event, for other tabs to chain
    link_load: dict | None = None


def causal_choices() -> list[tuple[str, str]]:
    """The probe's model choices that can give a region's surprisal (causal LMs)."""
    reg = registry()
    return [(label, mid) for label, mid in model_choices() if mid in reg and reg[mid].kind == "causal"]


# ------------------------------------------------------------------------------------------ rendering
def table_html(result: dict) -> str:
    """Region x condition: each region's words and its surprisal in bits."""
    conds = result["conditions"]
    head = "".join(f"<th scope='col'>{esc(c)}</th>" for c in conds)
    rows = []
    for row in result["table"]:
        cells = []
        for cell in row["cells"]:
            bits = cell["surprisal_bits"]
            value = "—" if bits is None else f"{bits:.2f} bits"
            words = esc(cell["content"]) if cell["content"] else "<i>(empty)</i>"
            cells.append(f"<td data-condition='{esc(cell['condition'])}'><span class='acc-small'>{words}</span><br>"
                         f"<b class='acc-num'>{value}</b></td>")
        rows.append(f"<tr data-region='{row['region']}'><th scope='row'>{row['region']} · {esc(row['name'])}</th>"
                    f"{''.join(cells)}</tr>")
    where = f"item {result['item']} of {esc(result['suite'])}" if result.get("suite") else "the typed item"
    return (f"<div style='overflow-x:auto'><table class='acc-votes acc-design' data-testid='design-table'>"
            f"<caption style='text-align:left'>Surprisal of each region, in bits ({where}, {esc(result['model'])}; a "
            f"region's value is the sum of its words' surprisals, {esc(result.get('word_rule') or 'the probe’s words')})"
            f"</caption><thead><tr><th>Region</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def figure(result: dict):
    """Regions on x, one line per condition, surprisal in bits on y."""
    labels = [plots.wrap_label(f"{r['region']} {esc(r['name'])}", 14) for r in result["table"]]
    fig = go.Figure()
    for k, c in enumerate(result["conditions"]):
        ys = [r["cells"][k]["surprisal_bits"] for r in result["table"]]
        words = [esc(r["cells"][k]["content"]) or "(empty)" for r in result["table"]]
        fig.add_trace(go.Scatter(x=labels, y=ys, mode="lines+markers", name=esc(c),
                                 line=dict(color=plots.PALETTE[k % len(plots.PALETTE)], width=3), marker=dict(size=10),
                                 customdata=words,
                                 hovertemplate=f"{esc(c)}<br>%{{x}}: %{{customdata}}<br>%{{y:.2f}} bits<extra></extra>"))
    fig.update_layout(title=dict(text="Surprisal by region and condition", x=0.01), font=plots.FONT, height=420,
                      margin=dict(l=60, r=20, t=50, b=60), legend=dict(orientation="h", y=-0.2),
                      xaxis=dict(title="region"), yaxis=dict(title="surprisal (bits)", rangemode="tozero"),
                      template="plotly_white")
    return fig


def predictions_html(result: dict) -> str:
    if not result["predictions"]:
        return note("No prediction was written: the table and the figure show the surprisals alone. Write one "
                    "formula a line, e.g. <code>(4;%what_gap%) &lt; (4;%that_gap%)</code>.", "info")
    parts = []
    for p in result["predictions"]:
        verdict = "✓ passes" if p["passed"] else "✗ fails"
        values = "".join(f"<li><code>{esc(v['reference'])}</code> = <b>{v['bits']:.2f} bits</b> "
                         f"<span class='acc-small'>(region {esc(v.get('region_number') or '*')} "
                         f"“{esc(v.get('region_name', ''))}” in {esc(v.get('condition', ''))})</span></li>"
                         for v in p["values"])
        inter = p["interaction"]
        parts.append(
            f"<div class='acc-note acc-note-{'good' if p['passed'] else 'bad'}' data-testid='design-prediction'>"
            f"<span class='acc-verdict'>Prediction {p['index'] + 1} {verdict}</span>: <code>{esc(p['formula'])}</code>"
            f"<br>The numbers that decided it:<ul style='margin:0.2rem 0 0.2rem 1.2rem'>{values}</ul>"
            f"<span data-testid='design-interaction'>{esc(inter['text'])}</span></div>")
    return "".join(parts)


def error_outputs(message: str):
    return note(esc(message), "bad"), "", gr.update(value=None, visible=False), "", None, gr.update()


def query_of(result: dict) -> str:
    """The link query that reproduces a result (its inputs, model and shipped item)."""
    return svc.link_query({**result["inputs"], "model": result["model"], "suite": result.get("suite"),
                           "item": result.get("item")})


@friendly
def run_design(conditions, regions, formula, model, source):
    """(status, table, figure, predictions, saved result) of one design; a bad input is one sentence."""
    source = source or {}
    try:
        result = svc.run(model or DEFAULT_MODEL, conditions, regions, formula, source.get("suite") or "",
                         source.get("item") or svc.TYPED_ITEM)
    except Exception as exc:  # noqa: BLE001 - a message in the page, the traceback in the log
        if not isinstance(exc, UserError):
            logs.failed(log, "design", exc)
        return error_outputs(message_of(exc))
    passed = sum(p["passed"] for p in result["predictions"])
    n = len(result["predictions"])
    status = note(f"Scored with <b>{esc(result['model'])}</b>: {len(result['conditions'])} conditions, "
                  f"{len(result['region_names'])} regions" + (f"; {passed} of {n} predictions pass." if n else "."),
                  "info")
    return (status, table_html(result), gr.update(value=figure(result), visible=True), predictions_html(result), result,
            query_of(result))


@friendly
def on_suite(suite_id):
    numbers = svc.item_numbers(suite_id) if suite_id else []
    return gr.update(choices=numbers, value=numbers[0] if numbers else None)


@friendly
def load_item(suite_id, item):
    """A shipped item into the boxes (conditions, region names, predictions) and the source it came from."""
    try:
        t = svc.item_text(suite_id, item)
    except UserError as exc:
        return gr.update(), gr.update(), gr.update(), gr.update(), note(esc(exc), "bad")
    return (t["conditions"], t["regions"], t["formula"], {"suite": t["suite"], "item": t["item"]},
            note(f"Loaded item {t['item']} of <b>{esc(t['suite'])}</b> with the suite's region names and "
                 f"prediction ({esc(svc.SOURCE_NOTE)}). Press <b>Run the design</b>.", "info"))


def edited(source):
    """The conditions were typed in: the item is no longer the shipped one."""
    return None


# ------------------------------------------------------------------------------------------ links
_QUERY_JS = """(() => {
  const q = new URLSearchParams();
  q.set("tab", "design");
  const put = (k, v) => { if (v !== null && v !== undefined && String(v).trim()) q.set(k, String(v).trim()); };
  put("conditions", conditions); put("regions", regions); put("formula", formula); put("model", model);
  return q.toString().replace(/\\+/g, "%20");
})()"""
# The page URL follows each run: the query of what it shows (query_of, with a shipped item's suite and number).
URL_JS = f"""(query) => {{
  if (query && query.length <= {links.MAX_QUERY_CHARS})
    history.replaceState(history.state, "", location.pathname + "?" + query + location.hash);
}}"""
# "Copy link": the shown result's link, else one built from the inputs as they are.
_ARGS = "(conditions, regions, formula, model, query)"
COPY_JS = links.copy_link_js(_ARGS, f"""  const url = location.origin + location.pathname + "?" + (query || {_QUERY_JS});""")


def _query_of(request) -> object:
    qp = getattr(request, "query_params", None)
    if qp is None:
        return ""
    return str(qp) if hasattr(qp, "multi_items") else dict(qp)


def load_link(request: gr.Request = None):
    """On page load: a design link (?tab=design&conditions=...) selects the tab, fills it and sets the flag
    that runs it; any other page load changes nothing."""
    keep = (gr.update(),) * 7
    try:
        params = links.parse_query(_query_of(request))
        if not svc.is_design_link(params):
            return (*keep, gr.update(), False)
        v = svc.link_values(params)
    except Exception as exc:  # noqa: BLE001 - a hostile link gets a message, never a traceback
        if not isinstance(exc, UserError):
            logs.failed(log, "design link", exc)
        return (gr.Tabs(selected=TAB_ID), *keep[1:], note(esc("This link cannot be opened: " + message_of(exc)), "bad"),
                False)
    source = {"suite": v["suite"], "item": v["item"]} if v["suite"] else None
    return (gr.Tabs(selected=TAB_ID), v["conditions"], v["regions"], v["formula"], v["model"],
            gr.update(value=v["suite"]) if v["suite"] else gr.update(), source,
            note("Opening the shared link…", "info"), True)


def run_linked(go_on, conditions, regions, formula, model, source):
    if not go_on:
        return (gr.update(),) * 6
    return run_design(conditions, regions, formula, model, source)


# ------------------------------------------------------------------------------------------ export
EXPORT_HIDDEN = gr.update(visible=False, value=None)


def prepare_export(saved):
    if not saved:
        return note("Run the design first: the export is of the result shown.", "warn"), EXPORT_HIDDEN, EXPORT_HIDDEN
    try:
        js, cs = svc.export(saved, query_of(saved))
    except Exception as exc:  # noqa: BLE001 - a message, the traceback in the log
        if not isinstance(exc, UserError):
            logs.failed(log, "design export", exc)
        return note(esc(message_of(exc)), "bad"), EXPORT_HIDDEN, EXPORT_HIDDEN
    return (note("Ready: the JSON holds everything (the model's provenance included); the CSV is one long table, "
                 "its <code>record</code> column says what each row is (region, prediction, reference, interaction, "
                 "provenance).", "info"),
            gr.update(value=str(js), visible=True), gr.update(value=str(cs), visible=True))


def clear_export():
    return "", EXPORT_HIDDEN, EXPORT_HIDDEN


# ------------------------------------------------------------------------------------------ layout
def build() -> DesignTab:
    gr.HTML(intro(
        "Design: two to four conditions of one item",
        "Linguists test filler-gap dependencies, islands, NPI licensing and garden paths with designs of two to "
        "four conditions, as SyntaxGym's test suites do (Gauthier et al. 2020; Hu et al. 2020). Type the "
        "conditions with their regions, or load an item of a shipped suite; write a prediction or take the "
        "suite's. The model's surprisal of every region comes back in bits, with each prediction's verdict."))
    source = gr.State(None)
    saved = gr.State(None)
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            conditions = gr.Textbox(label="Conditions, one a line (2 to 4)", value=EXAMPLE_CONDITIONS, lines=4,
                                    max_lines=8, elem_id="design-conditions")
            regions = gr.Textbox(label="Region names, split by | (optional)", value=EXAMPLE_REGIONS, max_lines=1,
                                 elem_id="design-regions")
            formula = gr.Textbox(label="Predictions, one a line (SyntaxGym formulas)", value=EXAMPLE_FORMULA, lines=2,
                                 max_lines=4, elem_id="design-formula")
            gr.HTML(f"<div class='acc-counter'>{MARKUP_HELP}</div>", elem_id="design-help")
        with gr.Column(scale=2):
            with gr.Group():
                choices = svc.suite_choices()
                suite = gr.Dropdown(choices, value="fgd_object", label="Or load an item of a shipped suite (circuit · suite)",
                                    elem_id="design-suite")
                numbers = svc.item_numbers("fgd_object")
                item = gr.Dropdown(numbers, value=numbers[0], label="Item", elem_id="design-item")
                load_btn = gr.Button("Load this item", elem_id="design-load")
            loaded = gr.HTML("", elem_id="design-loaded")
            model = gr.Dropdown(causal_choices(), value=DEFAULT_MODEL, label="Model (causal LMs: a region's surprisal "
                                "is left to right)", elem_id="design-model")
    with gr.Row():
        run_btn = gr.Button("Run the design", variant="primary", elem_id="design-run", scale=3)
    status = gr.HTML(note("Press <b>Run the design</b>. The first run loads the model.", "info"), elem_id="design-status")
    with gr.Row(elem_id="design-share"):
        copy_btn = gr.Button("🔗 Copy link", size="sm", elem_id="design-copy-link", scale=0, min_width=130)
        export_btn = gr.Button("⬇ Export this result (JSON, CSV)", size="sm", elem_id="design-export", scale=0,
                               min_width=240)
        dl_json = gr.DownloadButton("⬇ Download JSON", visible=False, size="sm", elem_id="design-download-json", scale=0,
                                    min_width=150)
        dl_csv = gr.DownloadButton("⬇ Download CSV", visible=False, size="sm", elem_id="design-download-csv", scale=0,
                                   min_width=150)
        copy_note = gr.HTML("", elem_id="design-copy-note")
    export_note = gr.HTML("", elem_id="design-export-note")
    table = gr.HTML("", elem_id="design-table")
    plot = gr.Plot(label="Surprisal by region and condition", elem_id="design-plot", show_label=False, visible=False)
    verdicts = gr.HTML("", elem_id="design-predictions")
    query = gr.Textbox("", visible="hidden", elem_id="design-link")  # the shown result's link query

    run_inputs = [conditions, regions, formula, model, source]
    outputs = [status, table, plot, verdicts, saved, query]
    ev = dict(fn=run_design, inputs=run_inputs, outputs=outputs, concurrency_id=PROBE_QUEUE, show_progress_on=[status],
              trigger_mode="always_last", **HIDDEN)
    run_btn.click(**ev)
    # the URL follows each run, whichever tab or link started it
    query.change(None, [query], None, js=URL_JS, queue=False, **HIDDEN)
    saved.change(clear_export, None, [export_note, dl_json, dl_csv], queue=False, **HIDDEN)
    conditions.input(edited, [source], [source], queue=False, **HIDDEN)
    suite.input(on_suite, [suite], [item], queue=False, **HIDDEN)
    load_btn.click(load_item, [suite, item], [conditions, regions, formula, source, loaded], queue=False, **HIDDEN)
    copy_btn.click(None, [conditions, regions, formula, model, query], [copy_note], js=COPY_JS, queue=False, **HIDDEN)
    export_btn.click(prepare_export, [saved], [export_note, dl_json, dl_csv], concurrency_id=PROBE_QUEUE, **HIDDEN)
    go_on = gr.State(False)
    tab = DesignTab(conditions, regions, formula, model, suite, item, source, ev)
    tab.link_load = {"outputs": [conditions, regions, formula, model, suite, source, status, go_on],
                     "run": dict(ev, fn=run_linked, inputs=[go_on, *run_inputs])}
    return tab


def wire_links(demo: gr.Blocks, tab: DesignTab, tabs) -> None:
    """Opening a design link selects the Design tab, fills it and runs it."""
    demo.load(load_link, None, [tabs, *tab.link_load["outputs"]], queue=False, **HIDDEN).then(**tab.link_load["run"])
