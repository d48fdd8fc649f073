"""Explore's figures for Hu et al. 2025's predictions across datasets: the separation AUC of one run per
measure (Prediction 3), and every dataset side by side, within-pair accuracy beside separation AUC. The
paper's stated numbers are drawn as dashed lines, each labelled with its source."""

from __future__ import annotations

import math
import textwrap

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from accapp.ui.common import esc
from accapp.ui.plots import LEGEND_ROW_PX, PALETTE, _base_layout, empty_figure, error_bars

CHANCE = "#868e96"  # chance: no preference, no separation
PAPER = "#c92a2a"  # a number the paper states
PLOT_PX = 380  # the plots' own height in the figure across datasets
WORDS_ROW_PX = 18  # one line of the reference lines' words (font 12)


def reference(ref: dict) -> str:
    """A stated number of the paper as its line's label: "Hu et al. 2025, §6.4, Fig. 4b: at most 0.75 (GPT-2,
    Llama-3-70B; the English datasets pooled)"."""
    value = ref["value"]
    shown = f"{value:g}{' %' if ref.get('unit') == '%' else ''}"
    return f"{ref['source']}: {ref['relation']} {shown} ({ref['models']}; {ref['datasets']})"


def _range(values, floor: float, ceiling: float, pad: float) -> list[float]:
    """A y range that holds the values (and their whiskers) and the reference lines."""
    v = [float(x) for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    lo = min(v + [floor]) - pad
    hi = max(v + [ceiling]) + pad
    return [lo, hi]


def separation_figure(df: pd.DataFrame, refs: list[dict], title: str = "") -> go.Figure:
    """One run's separation AUC per measure, with its 95 % interval; 0.5 (no separation) and the paper's
    stated bound as dashed lines."""
    if df is None or df.empty:
        return empty_figure("No separation AUC for this selection.")
    fig = go.Figure(go.Bar(
        x=[esc(m) for m in df.measure], y=df.auc.tolist(), marker_color=PALETTE[0],
        error_y=error_bars(df.auc, df.auc_ci_low.tolist(), df.auc_ci_high.tolist(), thickness=1.3),
        text=[f"{a:.3f}" for a in df.auc], textposition="outside",
        hovertext=[f"{esc(m)}: AUC {a:.3f}<br>95 % CI {lo:.3f}–{hi:.3f}<br>{int(n):,} sentences pooled "
                   f"({int(g):,} acceptable, {int(b):,} not)"
                   for m, a, lo, hi, n, g, b in zip(df.measure, df.auc, df.auc_ci_low, df.auc_ci_high, df.strings,
                                                    df.n_good, df.n_bad)], hoverinfo="text", showlegend=False))
    fig.add_hline(y=0.5, line=dict(color=CHANCE, dash="dot"), annotation_text="0.5: no separation",
                  annotation_position="bottom left", annotation_font=dict(size=12))
    for ref in refs:
        fig.add_hline(y=float(ref["value"]), line=dict(color=PAPER, dash="dash"),
                      annotation_text=esc(reference(ref)), annotation_position="top left", annotation_font=dict(size=12))
    _base_layout(fig, title, height=440)
    fig.update_layout(showlegend=False, bargap=0.35)
    fig.update_yaxes(title_text="separation AUC, 95 % CI", range=_range(
        list(df.auc_ci_low) + list(df.auc_ci_high) + list(df.auc), 0.5, max([r["value"] for r in refs] or [0.5]), 0.05))
    return fig


def _tick_text(dataset: str) -> str:
    """A dataset's tick: a part-way run's '(42 of 67 paradigms)' on a line of its own, so a slanted label fits."""
    return esc(dataset).replace(" (", "<br>(", 1)


def cross_dataset_figure(df: pd.DataFrame, refs: dict, title: str = "") -> go.Figure:
    """Every dataset of one model side by side: within-pair accuracy (Prediction 1, left) and separation AUC
    (Prediction 3, right), a bar per measure with its 95 % interval; chance and the paper's stated numbers
    (``refs``: {"accuracy": [...], "auc": [...]}) as dashed lines labelled with their sources. A dataset of
    single sentences has no accuracy, and says so in its place."""
    if df is None or df.empty:
        return empty_figure("No runs of this model yet.")
    datasets = list(dict.fromkeys(df.dataset))
    tick = {d: _tick_text(d) for d in datasets}
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08,
                        subplot_titles=("Within-pair accuracy (Prediction 1)", "Separation AUC (Prediction 3)"))
    for k, (measure, g) in enumerate(df.groupby("measure", sort=False)):
        color = PALETTE[k % len(PALETTE)]
        x = [tick[d] for d in g.dataset]
        acc = g.accuracy.astype(float)
        fig.add_trace(go.Bar(
            x=x, y=acc.tolist(), name=esc(measure), legendgroup=esc(measure), marker_color=color,
            error_y=error_bars(acc, g.accuracy_ci_low.astype(float).tolist(), g.accuracy_ci_high.astype(float).tolist(),
                               thickness=1.3),
            hovertext=[f"{esc(d)} · {esc(measure)}<br>accuracy {a:.1f} % (95 % CI {lo:.1f}–{hi:.1f}, {over})"
                       f"<br>{int(n):,} pairs" if pd.notna(a) else f"{esc(d)}: no pairs"
                       for d, a, lo, hi, n, over in zip(g.dataset, acc, g.accuracy_ci_low, g.accuracy_ci_high,
                                                        g.pairs.fillna(0), g.accuracy_over)],
            hoverinfo="text"), row=1, col=1)
        fig.add_trace(go.Bar(
            x=x, y=g.auc.astype(float).tolist(), name=esc(measure), legendgroup=esc(measure), marker_color=color,
            showlegend=False,
            error_y=error_bars(g.auc, g.auc_ci_low.astype(float).tolist(), g.auc_ci_high.astype(float).tolist(), thickness=1.3),
            hovertext=[f"{esc(d)} · {esc(measure)}<br>AUC {a:.3f} (95 % CI {lo:.3f}–{hi:.3f})<br>{int(n):,} sentences"
                       for d, a, lo, hi, n in zip(g.dataset, g.auc, g.auc_ci_low, g.auc_ci_high, g.strings)],
            hoverinfo="text"), row=1, col=2)
    no_pairs = [d for d in datasets if df[df.dataset == d].accuracy.isna().all()]
    if no_pairs:
        fig.add_trace(go.Scatter(x=[tick[d] for d in no_pairs], y=[52] * len(no_pairs), mode="text",
                                 text=["single sentences:<br>no pairs"] * len(no_pairs), textfont=dict(size=11),
                                 showlegend=False, hoverinfo="skip"), row=1, col=1)
    lines = [(1, 50.0, "50 %: chance", CHANCE, "dot")] + [(1, float(r["value"]), reference(r), PAPER, "dash")
                                                          for r in refs.get("accuracy", [])]
    lines += [(2, 0.5, "0.5: no separation", CHANCE, "dot")] + [(2, float(r["value"]), reference(r), PAPER, "dash")
                                                                for r in refs.get("auc", [])]
    for col, y, label, color, dash in lines:
        fig.add_hline(y=y, line=dict(color=color, dash=dash, width=1.5), row=1, col=col)
    _base_layout(fig, title, height=520)
    fig.update_layout(barmode="group", bargap=0.25, bargroupgap=0.05)
    fig.update_yaxes(title_text="accuracy (%), 95 % CI", range=_range(
        list(df.accuracy_ci_low) + list(df.accuracy_ci_high), 50, max([r["value"] for r in refs.get("accuracy", [])]
                                                                       or [50]), 3), row=1, col=1)
    fig.update_yaxes(title_text="separation AUC, 95 % CI", range=_range(
        list(df.auc_ci_low) + list(df.auc_ci_high), 0.5, max([r["value"] for r in refs.get("auc", [])] or [0.5]), 0.03),
        row=1, col=2)
    fig.update_xaxes(tickangle=-30)
    # the legend, then the dashed and dotted lines' words (each with its source), under the plots
    words = [f"{'left' if col == 1 else 'right'}, {'dotted' if dash == 'dot' else 'dashed'} line: {esc(label)}"
             for col, y, label, color, dash in lines]
    # an annotation does not wrap: a line of its own for every 100 characters, so a laptop's narrower plot shows it all
    words = [row for line in words for row in textwrap.wrap(line, 100, subsequent_indent="    ",
                                                             break_long_words=False)]
    rows = math.ceil(df.measure.nunique() / 3)
    top, axis = 80, 100 + 40 * any("<br>" in t for t in tick.values())  # a two-line tick reaches lower
    bottom = axis + LEGEND_ROW_PX * rows + WORDS_ROW_PX * len(words) + 10
    height = PLOT_PX + top + bottom
    fig.update_layout(height=height, margin=dict(t=top, b=bottom),
                      legend=dict(orientation="h", x=0, xanchor="left", yanchor="top", y=-axis / PLOT_PX))
    fig.add_annotation(text="<br>".join(words), xref="paper", yref="paper", x=0, xanchor="left", yanchor="top",
                       y=-(axis + LEGEND_ROW_PX * rows) / PLOT_PX, showarrow=False, align="left",
                       font=dict(size=12, color="#495057"))
    return fig
