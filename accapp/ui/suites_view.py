"""Explore's "SyntaxGym test suites" section: accuracy per circuit and per suite for each model with suite
results (95 % bootstrap intervals over items) beside the published pretrained models' (Hu et al. 2020);
a click on a suite lists its items with the regions' surprisals, and a click on an item opens it in the
Design tab and runs it. The numbers are :mod:`accapp.service.suites`'; this module lays out and wires."""

from __future__ import annotations

import gradio as gr
import plotly.graph_objects as go

from accapp.errors import UserError
from accapp.service import suites as svc
from accapp.service.design import item_text
from accapp.service.messages import message_of
from accapp.ui import plots
from accapp.ui.common import esc, friendly, note
from accapp.ui.gradio_internals import event_value

HIDDEN = dict(api_visibility="undocumented")
ITEMS_HELP = "Click a suite's row to list its items; then click an item's row to open it in the Design tab and run it."


def circuit_figure(data) -> go.Figure:
    """Accuracy (%) per circuit: a bar per model of this project with its 95 % interval, a marker per
    published model (Hu et al. 2020)."""
    if data is None or data.empty:
        return plots.empty_figure("No suite results yet.")
    fig = go.Figure()
    ours = data[data["source"] != svc.SOURCE]
    for k, (model, g) in enumerate(ours.groupby("model", sort=False)):
        err = dict(type="data", symmetric=False, array=(g["ci_high_pct"] - g["accuracy_pct"]).tolist(),
                   arrayminus=(g["accuracy_pct"] - g["ci_low_pct"]).tolist())
        fig.add_trace(go.Bar(x=g["circuit"], y=g["accuracy_pct"], name=esc(model), error_y=err,
                             marker_color=plots.PALETTE[k % len(plots.PALETTE)],
                             hovertemplate="%{x}: %{y:.1f} %<extra>" + esc(model) + "</extra>"))
    symbols = ["diamond", "circle", "square", "triangle-up", "x", "star"]
    for k, (label, g) in enumerate(data[data["source"] == svc.SOURCE].groupby("label", sort=False)):
        fig.add_trace(go.Scatter(x=g["circuit"], y=g["accuracy_pct"], mode="markers", name=esc(label),
                                 marker=dict(symbol=symbols[k % len(symbols)], size=11, color=plots.PUBLISHED,
                                             line=dict(width=1, color=plots.HUMAN)),
                                 hovertemplate="%{x}: %{y:.1f} %<extra>" + esc(label) + "</extra>"))
    fig.update_layout(barmode="group", height=460, font=plots.FONT, template="plotly_white",
                      title=dict(text="SyntaxGym accuracy by circuit: this project (bars, 95 % CI) and published "
                                      f"models (markers, {svc.SOURCE})", x=0.01),
                      yaxis=dict(title="accuracy (%)", range=[0, 105]), margin=dict(l=60, r=20, t=60, b=80),
                      legend=dict(orientation="h", y=-0.25))
    return fig


@friendly
def render():
    """(status, circuit table, figure, suites table, model choices) of the section."""
    models = svc.models()
    circuits, data = svc.circuit_frame()
    suites, _ = svc.suite_frame()
    if models:
        status = note(f"{len(suites)} suites, {esc(', '.join(models))}. {esc(svc.CI_NOTE)} Published numbers: "
                      f"{esc(svc.SOURCE)} (pretrained models, marked *). {ITEMS_HELP}", "info")
    else:
        status = note("No suite results of this project yet (run <code>accapp bench --suite all --model M</code>); "
                      f"the published numbers ({esc(svc.SOURCE)}) are shown alone.", "warn")
    return (status, circuits, circuit_figure(data), suites,
            gr.update(choices=models, value=models[0] if models else None))


@friendly
def list_items(suite_id, model):
    """(note, items table, suite) of one suite for a model."""
    if not suite_id:
        return note(esc(ITEMS_HELP), "info"), None, suite_id
    if not model:
        return note("No model has suite results yet, so there are no surprisals to list.", "warn"), None, suite_id
    try:
        df = svc.suite_items(suite_id, model)
    except UserError as exc:
        return note(esc(exc), "bad"), None, suite_id
    items = df["Item"].nunique()
    passed = df.drop_duplicates("Item")["Passed"].str.startswith("✓").sum()
    return (note(f"<b>{esc(suite_id)}</b> with {esc(model)}: {items} items, {passed} pass every prediction. Each "
                 "region's surprisal in bits. Click an item's row to open it in the Design tab.", "info"),
            df, suite_id)


def on_suite_click(model, evt: gr.SelectData):
    row = event_value(evt, "row_value")
    suite_id = str(row[1]) if isinstance(row, (list, tuple)) and len(row) > 1 else ""
    if suite_id not in svc.suite_ids():
        return gr.update(), gr.update(), gr.update()
    return list_items(suite_id, model)


def open_in_design(suite_id, model, evt: gr.SelectData):
    """The clicked item's conditions, region names and prediction into the Design tab, the tab selected."""
    row = event_value(evt, "row_value")
    keep = (gr.update(),) * 7
    try:
        item = int(row[0]) if isinstance(row, (list, tuple)) and row else None
    except (TypeError, ValueError):
        item = None
    if item is None or suite_id not in svc.suite_ids():
        return (*keep, False)
    try:
        t = item_text(suite_id, item)
    except Exception as exc:  # noqa: BLE001 - a suite too big for the view: said in the section
        return (*keep[:6], note(esc(message_of(exc)), "bad"), False)
    return (t["conditions"], t["regions"], t["formula"], {"suite": suite_id, "item": item},
            gr.update(value=model) if model else gr.update(), gr.Tabs(selected="design"), gr.update(), True)


def build(tabs, design) -> None:
    """The section, inside Explore's views; `design` (ui/design_view.DesignTab) receives a clicked item."""
    status = gr.HTML("", elem_id="explore-suites-status")
    circuits = gr.Dataframe(elem_classes=["acc-table"], interactive=False, wrap=True, elem_id="explore-suites-circuits",
                            label="Accuracy per circuit (%, 95 % bootstrap interval over items), ours and published")
    fig = gr.Plot(label="Accuracy per circuit", elem_id="explore-suites-figure")
    suites = gr.Dataframe(elem_classes=["acc-table"], interactive=False, wrap=True, max_height=600,
                          elem_id="explore-suites-table",
                          label="Accuracy per suite (%, 95 % bootstrap interval over items), ours and published; "
                                "click a row for its items")
    with gr.Row():
        model = gr.Radio([], value=None, label="Items' surprisals by", elem_id="explore-suites-model")
    items_note = gr.HTML(note(esc(ITEMS_HELP), "info"), elem_id="explore-suite-items-note")
    items = gr.Dataframe(elem_classes=["acc-table"], interactive=False, wrap=True, max_height=600,
                         elem_id="explore-suite-items", label="The suite's items: each region's surprisal (bits)")
    chosen = gr.State("")
    go = gr.State(False)
    section = dict(fn=render, inputs=None, outputs=[status, circuits, fig, suites, model], **HIDDEN)
    suites.select(on_suite_click, [model], [items_note, items, chosen], **HIDDEN)
    model.input(list_items, [chosen, model], [items_note, items, chosen], **HIDDEN)
    if design is not None:
        items.select(open_in_design, [chosen, model],
                     [design.conditions, design.regions, design.formula, design.source, design.model, tabs, items_note,
                      go], **HIDDEN).then(**dict(design.run_event, fn=_run_if(design.run_event),
                                                 inputs=[go, *design.run_event["inputs"]]))
    return section


def _run_if(event: dict):
    """The Design tab's run, when the click opened an item (go_on); else nothing changes."""
    run, n = event["fn"], len(event["outputs"])

    def run_if(go_on, *inputs):
        if not go_on:
            return (gr.update(),) * n
        return run(*inputs)

    return run_if
