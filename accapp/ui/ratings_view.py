"""Human ratings beside the model (Hu et al. 2025's prediction 2), drawn: r with its interval
per method, a scatter of the pairs (hover: both sentences), r by bins of meaning distance, and the
pairs as a table whose rows open in the probe. The numbers come from :mod:`accapp.service.ratings`;
every string through esc. Used by Score a file (a file with ratings) and Explore ("Human ratings")."""

from __future__ import annotations

import math

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from accapp.benchmarks import label_of
from accapp.methods import display_name
from accapp.service import ratings as svc
from accapp.service import units
from accapp.ui import plot_click
from accapp.ui.common import esc, note, pair_label
from accapp.ui.gradio_internals import event_value

POINT_TABLE = ["Pair", "Acceptable sentence", "Unacceptable sentence", "Model difference", "Human difference",
               "Meaning distance"]
TABLE_WIDTHS = ["14%", "29%", "29%", "9%", "9%", "10%"]  # the sentences wide, so the header stays one line
MAX_TABLE_ROWS = 200  # pairs listed under the scatter (the CSV has them all)
EMBEDDING_NOTE = ("Meaning distance: 1 - cosine similarity of the two sentences' embeddings, each the mean of the "
                  "model's own hidden states at its middle layer over the sentence's tokens (Hu et al. 2025 used a "
                  "sentence-embedding model, all-mpnet-base-v2, which does not reach this machine).")


def _num(v, fmt="{:.2f}") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def _label(row) -> str:
    tag = [t for t in (row["template"] if row["template"] not in ("-", "") else "", row["variant"]) if t]
    return display_name(row["method"]) + (f" [{', '.join(tag)}]" if tag else "")


def summary_html(summary: pd.DataFrame | None, published: list[dict] | None = None, title: str = "") -> str:
    """r (Pearson, Spearman) with 95 % intervals per method, accuracy against the labels and against the
    human majority; the paper's findings beneath, each with its source."""
    if summary is None or summary.empty:
        return ""
    head = ["Method", "Pairs", "Pearson r [95 % CI]", "Spearman r [95 % CI]", "Accuracy vs labels (%)",
            "Accuracy vs human majority (%)"]
    rows = []
    for _, r in summary.iterrows():
        rows.append([esc(_label(r)), str(int(r["pairs"])),
                     f"{_num(r['pearson_r'])} [{_num(r['pearson_low'])}, {_num(r['pearson_high'])}]",
                     f"{_num(r['spearman_r'])} [{_num(r['spearman_low'])}, {_num(r['spearman_high'])}]",
                     _num(r["accuracy_labels"], "{:.1f}"),
                     f"{_num(r['accuracy_humans'], '{:.1f}')} <span class='acc-small'>({int(r['human_pairs'])} pairs, "
                     f"from {esc(r['human_majority_from'])})</span>"])
    th = "".join(f"<th style='text-align:left;padding:0.3rem'>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td style='padding:0.3rem'>{c}</td>" for c in row) + "</tr>" for row in rows)
    first = summary.iloc[0]
    text = (f"<div class='ratings-summary'>{f'<b>{esc(title)}</b>' if title else ''}"
            f"<table class='ratings-table' style='width:100%;border-collapse:collapse'><thead><tr>{th}</tr></thead>"
            f"<tbody>{body}</tbody></table><div class='acc-small'>Model difference: score(acceptable) - "
            f"score(unacceptable); human difference: {esc(first['human_source'])}. {esc(first['source'])}.</div>")
    if published:
        items = "".join(f"<li>{esc(p['finding'])} <span class='acc-small'>({esc(p['models'])}; source: "
                        f"{esc(p['source'])})</span></li>" for p in published)
        text += ("<div class='acc-small' style='margin-top:0.4rem'><b>Published (Hu et al. 2025; their r values are "
                 f"given in a figure only, so none is copied here):</b><ul>{items}</ul></div>")
    return text + "</div>"


def scatter_frame(points: pd.DataFrame, method: str, template: str = "-", variant: str = "") -> pd.DataFrame:
    """One method's points as the scatter plots them (hover: both sentences; the raw sentences travel
    in ``good``/``bad`` for a click that opens the pair); the model's difference in the page's unit
    (model_unit: bits for a log-probability, as the probe shows it)."""
    g = points[(points["method"] == method) & (points["template"] == template) & (points["variant"] == variant)]
    model = [units.in_unit(float(v), method) if pd.notna(v) else v for v in g["model_delta"]]
    return pd.DataFrame({"human difference": g["human_delta"], "model difference": model,
                         "acceptable": g["good"].map(esc), "unacceptable": g["bad"].map(esc),
                         "pair": g["pair_id"].astype(str), "good": g["good"].astype(str),
                         "bad": g["bad"].astype(str)}).dropna(subset=["human difference", "model difference"])


def model_unit(method: str) -> str:
    """The unit of a method's difference on the page ("bits", "bits/token", "P(Yes)")."""
    return units.unit_label(method)


def span(values, pad: float = 0.05) -> list[float]:
    """An axis range from the smallest to the largest value, with ``pad`` of their spread each side (a
    unit each side when they are all one value)."""
    v = pd.to_numeric(pd.Series(list(values)), errors="coerce").dropna()
    if v.empty:
        return [0.0, 1.0]
    lo, hi = float(v.min()), float(v.max())
    d = (hi - lo) * pad or 1.0
    return [lo - d, hi + d]


HUMAN_AXIS = "human difference (mean z-score within participants, acceptable − unacceptable)"


def scatter_figure(frame: pd.DataFrame | None, title: str = "", unit: str = "",
                   human_axis: str = HUMAN_AXIS) -> go.Figure | None:
    """The pairs as a plotly scatter, each point a pair: hover with both sentences; its ``customdata``
    ([pair id, good, bad]) is what a click sends (click_hook) to open the pair in the probe. ``unit``: the
    model difference's (model_unit); both axes span the data."""
    if frame is None or len(frame) == 0:
        return None
    hover = [f"<b>pair {esc(p)}</b><br>✓ {a}<br>✗ {u}<br>human difference {h:+.2f} · model difference {m:+.2f}"
             f"{' ' + esc(unit) if unit else ''}<br><i>click to open it in the probe</i>"
             for p, a, u, h, m in zip(frame["pair"], frame["acceptable"], frame["unacceptable"],
                                      frame["human difference"], frame["model difference"])]
    fig = go.Figure(go.Scatter(
        x=frame["human difference"].astype(float).tolist(), y=frame["model difference"].astype(float).tolist(),
        mode="markers",  # plain lists: plotly would send numpy arrays base64-encoded
        marker=dict(size=9, color="#1c7ed6", opacity=0.7, line=dict(width=0.5, color="white")),
        customdata=list(zip(frame["pair"], frame["good"], frame["bad"])), hovertext=hover, hoverinfo="text"))
    fig.update_layout(title=dict(text=esc(title), x=0.01, xanchor="left", font=dict(size=15)) if title else None,
                      template="plotly_white", height=400, margin=dict(l=60, r=20, t=50 if title else 20, b=50),
                      showlegend=False, hovermode="closest", clickmode="event", dragmode="pan",
                      xaxis_title=human_axis,
                      yaxis_title=f"model difference ({unit or 'score'}, acceptable − unacceptable)")
    fig.update_xaxes(range=span(frame["human difference"]), zeroline=True)
    fig.update_yaxes(range=span(frame["model difference"]), zeroline=True)
    return fig


def bins_figure(bins: pd.DataFrame | None, title: str = "r by meaning distance (10 equal bins)") -> go.Figure | None:
    """r between the model's and the humans' differences in each bin of meaning distance, with its 95 %
    interval, the bins' median distance on x; both axes span the data. None without bins."""
    if bins is None or bins.empty:
        return None
    b = bins.dropna(subset=["pearson_r"])
    if b.empty:
        return None
    lo, hi = b["pearson_low"], b["pearson_high"]
    fig = go.Figure(go.Scatter(
        x=b["distance_mid"].astype(float).tolist(), y=b["pearson_r"].astype(float).tolist(), mode="lines+markers",
        marker=dict(size=8, color="#1c7ed6"), line=dict(color="#1c7ed6"),
        error_y=dict(type="data", symmetric=False, array=(hi - b["pearson_r"]).tolist(),
                     arrayminus=(b["pearson_r"] - lo).tolist(), color="#495057", thickness=1.2, width=3),
        hovertext=[f"distance {m:.3f} (bin {d0:.3f}–{d1:.3f})<br>Pearson r {r:+.2f} [{a:+.2f}, {z:+.2f}]<br>{int(n)} pairs"
                   for m, d0, d1, r, a, z, n in zip(b["distance_mid"], b["distance_low"], b["distance_high"],
                                                     b["pearson_r"], lo, hi, b["pairs"])], hoverinfo="text"))
    fig.update_layout(title=dict(text=esc(title), x=0.01, xanchor="left", font=dict(size=15)), template="plotly_white",
                      height=400, margin=dict(l=60, r=20, t=50, b=50), showlegend=False,
                      xaxis_title="meaning distance (1 − cosine similarity, bin median)",
                      yaxis_title="Pearson r (model vs human difference), 95 % CI")
    fig.update_xaxes(range=span(pd.concat([b["distance_low"], b["distance_high"]])))
    fig.update_yaxes(range=span(pd.concat([lo.dropna(), hi.dropna(), b["pearson_r"]])))
    return fig


def click_hook(scatter_id: str, elem_id: str) -> gr.HTML:
    """The hidden gr.HTML that turns a click on a point of the scatter `scatter_id` into its "click" event
    (evt.pair, evt.good, evt.bad: ui/plot_click.py); it shows nothing."""
    return plot_click.click_hook([scatter_id], ["pair", "good", "bad"], elem_id, "data-click-hook")


def point_row(points: pd.DataFrame | None, source: str, evt: gr.EventData) -> pd.Series | None:
    """The clicked point's pair as a row of the pairs' table (Pair, sentences, human difference); the
    sentences of a built-in set's pair come from the set, never from the page. None for no usable click."""
    pid, good, bad = (event_value(evt, k) for k in ("pair", "good", "bad"))  # the click's data (gr.EventData)
    if not isinstance(pid, str) or not pid or len(pid) > 200:
        return None
    if source in svc.SETS:
        rated = svc.rated_set(source).set_index("pair_id")
        if pid not in rated.index:
            return None
        r = rated.loc[pid]
        return pd.Series({"Pair": pid, "Acceptable sentence": r["good"], "Unacceptable sentence": r["bad"],
                          "Human difference": r["human_delta"]})
    if not isinstance(good, str) or not isinstance(bad, str):
        return None
    human = None
    if points is not None and len(points):
        hit = points[points["pair"].astype(str) == pid]
        if len(hit):
            good, bad, human = str(hit.iloc[0]["good"]), str(hit.iloc[0]["bad"]), float(hit.iloc[0]["human difference"])
    return pd.Series({"Pair": pid, "Acceptable sentence": good, "Unacceptable sentence": bad, "Human difference": human})


def point_table(points: pd.DataFrame, method: str, template: str = "-", variant: str = "") -> pd.DataFrame:
    """The pairs under the scatter, those where model and humans disagree most first (their differences
    as z-scores over the pairs)."""
    g = points[(points["method"] == method) & (points["template"] == template) & (points["variant"] == variant)].copy()
    if g.empty:
        return pd.DataFrame(columns=POINT_TABLE)
    z = lambda s: (s - s.mean()) / (s.std() or 1.0)  # noqa: E731
    g["gap"] = (z(g["model_delta"]) - z(g["human_delta"])).abs()
    g = g.sort_values("gap", ascending=False).head(MAX_TABLE_ROWS)
    return pd.DataFrame({"Pair": g["pair_id"].astype(str), "Acceptable sentence": g["good"], "Unacceptable sentence": g["bad"],
                         "Model difference": g["model_delta"].round(3), "Human difference": g["human_delta"].round(3),
                         "Meaning distance": g["meaning_distance"].round(4)})[POINT_TABLE]


def scatter_plot(elem_id: str, visible: bool = True) -> gr.Plot:
    """The scatter's component: a plotly figure (scatter_figure), whose points click_hook makes clickable."""
    return gr.Plot(None, show_label=False, elem_id=elem_id, visible=visible, elem_classes=["ratings-scatter"])


def method_keys(points: pd.DataFrame) -> list[tuple[str, str]]:
    """(label, "method|template|variant") for each method in the points, in their order."""
    keys = points[svc.KEY].drop_duplicates()
    return [(_label(r), f"{r['method']}|{r['template']}|{r['variant']}") for _, r in keys.iterrows()]


def split_key(key: str | None) -> tuple[str, str, str]:
    method, template, variant = (str(key or "lp|-|").split("|") + ["", ""])[:3]
    return method, template or "-", variant


def humans_text(source: str, row) -> str:
    """The humans' judgment of a pair beside the probe's verdict: each sentence's mean z-score and the
    forced choice for a built-in rated set; the difference for a file's pair."""
    if source in svc.SETS:
        rated = svc.rated_set(source).set_index("pair_id")
        if str(row["Pair"]) in rated.index:
            r = rated.loc[str(row["Pair"])]
            return (f" · humans: acceptable z = {r['rating_good']:+.2f}, unacceptable z = {r['rating_bad']:+.2f} "
                    f"(difference {r['human_delta']:+.2f}); {100 * r['fc_good']:.0f} % chose the acceptable one")
    value = row.get("Human difference") if hasattr(row, "get") else None
    return f" · humans: difference {float(value):+.2f}" if value is not None and value == value else ""


def open_pair(table: pd.DataFrame, source: str, model: str, evt: gr.SelectData):
    """A row of the pairs' table, as the probe's pair: (good, bad, meta, label, model update). A pair of a
    built-in rated set goes with its meta, whose ``humans`` line (the z-scores, the forced choice) the
    probe's label shows beside the verdict; a file's pair goes as typed sentences (meta None)."""
    if table is None or len(table) == 0 or evt is None or evt.index is None:
        return [gr.update()] * 5
    i = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    return open_row(table.iloc[int(i)], source, model)


def open_row(row, source: str, model: str):
    """One pair (a row of the pairs' table: Pair, Acceptable/Unacceptable sentence, Human difference) as
    the probe's pair: (good, bad, meta, label, model update); see open_pair."""
    if row is None:
        return [gr.update()] * 5
    good, bad = str(row["Acceptable sentence"]), str(row["Unacceptable sentence"])
    pid, humans = str(row["Pair"]), humans_text(source, row).removeprefix(" · ")
    # a file's pair has a meta too (no phenomenon, no paradigm): the probe that runs next keeps its line
    meta = {"benchmark": source, "paradigm": "", "phenomenon": "", "pair_id": pid, "good": good, "bad": bad, "humans": humans}
    if source in svc.SETS:
        rated = svc.rated_set(source).set_index("pair_id")
        if pid in rated.index:
            meta.update(paradigm=str(rated.loc[pid, "paradigm"]), phenomenon=str(rated.loc[pid, "phenomenon"]))
    label = pair_label(meta)
    return good, bad, meta, label, gr.update(value=model) if model else gr.update()


def opener(probe_tab_id: str):
    """open_pair and the probe's tab selected in the same update (no step where the sentences are in the
    probe but its tab is not yet shown)."""
    def handler(table: pd.DataFrame, source: str, model: str, evt: gr.SelectData):
        out = open_pair(table, source, model, evt)
        return (*out, gr.update() if out[0] == gr.update() else gr.Tabs(selected=probe_tab_id))

    return handler


def point_opener(probe_tab_id: str):
    """A click on a point of the scatter (click_hook's event): the pair into the probe, its tab shown."""
    def handler(points: pd.DataFrame | None, source: str, model: str, evt: gr.EventData):
        out = open_row(point_row(points, source, evt), source, model)
        return (*out, gr.update() if out[0] == gr.update() else gr.Tabs(selected=probe_tab_id))

    return handler


# ------------------------------------------------------------------------------------ Explore's view
def explore_view(name: str, model: str | None, key: str | None, matched: bool, note_html: str = ""):
    """The built-in rated set's view for a model and method: (summary HTML, scatter, bins figure, table,
    method choices update). ``note_html`` goes above the summary (why this set or model is shown)."""
    models = svc.rated_models(name)
    if not models:
        empty = note("No precomputed results on this rated set yet.", "warn")
        return empty, None, None, pd.DataFrame(columns=POINT_TABLE), gr.update(choices=[], value=None)
    model = model if model in models else models[0]
    points = svc.builtin_points(model, name, meaning_matched_only=bool(matched))
    choices = method_keys(points)
    values = [v for _, v in choices]
    key = key if key in values else ("lp|-|" if "lp|-|" in values else values[0])
    method, template, variant = split_key(key)
    which = " (meaning-matched pairs: edit distance below its 75th percentile)" if matched else ""
    html = note_html + summary_html(svc.builtin_summary(model, name, bool(matched)),
                                    [p for p in svc.published() if p["set"] == name], f"{svc.SETS[name]}: {model}{which}")
    bins = svc.distance_bins(points, method, template, variant)
    html += f"<div class='acc-small'>{esc(EMBEDDING_NOTE)}</div>"
    label = _label(pd.Series(dict(method=method, template=template, variant=variant)))
    title = f"{label}: model difference against human difference"
    return (html, scatter_figure(scatter_frame(points, method, template, variant), title, model_unit(method)),
            bins_figure(bins, f"{label}: r by meaning distance (10 equal bins)"),
            point_table(points, method, template, variant), gr.update(choices=choices, value=key))


def follow_explore(bench: str | None, explore_model: str | None, name: str, model: str | None, key: str | None,
                   matched: bool):
    """The view as Explore's pickers have it: the rated set Explore shows (when it shows one), the model
    Explore has picked where it has a run on the set (else the view's own, and it says so). Returns
    explore_view's values, then the set's and the model's updates."""
    name = bench if bench in svc.SETS else (name if name in svc.SETS else next(iter(svc.SETS)))
    models = svc.rated_models(name)
    words = []
    if bench and bench not in svc.SETS:
        words.append(f"{label_of(bench)} has no human ratings of its sentences one by one; this view shows "
                     f"{svc.SHORT.get(name, name)}, the rated set.")
    if explore_model in models:
        model = explore_model
    elif explore_model:
        model = model if model in models else (models[0] if models else None)
        if model:
            words.append(f"{explore_model} has no run on {svc.SHORT.get(name, name)}; shown: {model}.")
    note_html = note(esc(" ".join(words)), "info") if words else ""
    out = explore_view(name, model, key, matched, note_html)
    return (*out, gr.update(value=name), gr.update(choices=models, value=model if model in models else None))


def build_explore(probe, tabs, probe_tab_id: str) -> None:
    """The "Human ratings" view inside Explore: its own set, model and method (the rated sets are not
    benchmarks of the store), set from Explore's pickers when the view opens (follow_explore); a row of the
    pairs' table opens it in the probe. Returns (inputs, outputs) of its events."""
    names = list(svc.SETS)
    gr.HTML(note("Within minimal pairs, does the model's difference follow the humans' difference in acceptability "
                 "(Hu et al. 2025, prediction 2)? Each point is a pair; hover for its sentences, click a point to open "
                 "it in the probe, or click a pair in the table (those where model and humans disagree most come "
                 "first).", "info"))
    with gr.Row():
        rated = gr.Dropdown([(svc.SETS[n], n) for n in names], value=names[0], label="Rated set", elem_id="ratings-set")
        models = svc.rated_models(names[0])
        model = gr.Dropdown(models, value=models[0] if models else None, label="Model", elem_id="ratings-model")
        method = gr.Dropdown([], value=None, label="Method (scatter, bins, table)", elem_id="ratings-method")
        matched = gr.Checkbox(False, label="Meaning-matched pairs only (Hu et al.'s filter)", elem_id="ratings-matched")
    summary = gr.HTML("", elem_id="ratings-summary")
    with gr.Row():
        scatter = scatter_plot("ratings-scatter")
        bins = gr.Plot(None, show_label=False, elem_id="ratings-bins")
    table = gr.Dataframe(elem_classes=["acc-table"], label="Pairs (click one to open it in the probe)", interactive=False,
                         wrap=True, max_height=400, elem_id="ratings-pairs", column_widths=TABLE_WIDTHS)
    hidden = dict(api_visibility="undocumented")
    inputs, outputs = [rated, model, method, matched], [summary, scatter, bins, table, method]
    for comp in (rated, model, method, matched):
        comp.input(explore_view, inputs, outputs, **hidden)
    to_probe = [probe.good, probe.bad, probe.meta, probe.pair_label, probe.model, tabs]
    table.select(opener(probe_tab_id), [table, rated, model], to_probe, **hidden).then(**probe.run_event)
    hook = click_hook("ratings-scatter", "ratings-scatter-click")
    hook.click(point_opener(probe_tab_id), [gr.State(None), rated, model], to_probe, **hidden).then(**probe.run_event)
    return inputs, outputs


# ------------------------------------------------------------------------------------ Score a file
def file_view(files):
    """After a file is scored: the scatter, the pairs' table and the scatter's points (for a click on
    one) from its ratings points CSV (hidden, None when the file had no ratings); the method is LP
    where it was scored, else the first."""
    path = next((str(f) for f in (files or []) if str(f).endswith("-ratings-points.csv")), None)
    if path is None:
        return gr.update(visible=False), gr.update(visible=False), None
    points = pd.read_csv(path, keep_default_na=False, na_values=[""],
                         dtype={"method": str, "template": str, "variant": str, "good": str, "bad": str, "pair_id": str})
    for c in ("template", "variant"):
        points[c] = points[c].fillna("")
    values = [v for _, v in method_keys(points)]
    method, template, variant = split_key("lp|-|" if "lp|-|" in values else values[0])
    title = f"{display_name(method)}: model difference against human difference"
    frame = scatter_frame(points, method, template, variant)
    figure = scatter_figure(frame, title, model_unit(method), "human difference (the file's ratings, acceptable − unacceptable)")
    return (gr.update(value=figure, visible=True),
            gr.update(value=point_table(points, method, template, variant), visible=True), frame)
