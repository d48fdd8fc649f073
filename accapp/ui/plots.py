"""Plotly figure builders for the app: plain data in, a figure out (no model, no store).

Every string that may come from a person (sentences, tokens, file names) goes through
:func:`accapp.ui.common.esc` before it reaches a figure: plotly reads a small set of HTML-like tags in text,
so ``<img src=x onerror=alert(1)>`` is escaped to entities and shown as the literal text.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from accapp.methods import display_name
from accapp.service.region import spillover_phrase
from accapp.ui.common import esc

LN2 = math.log(2.0)
UNITS = ("bits", "nats")

# Colours: one per role, readable on a projector and for the common colour-blindnesses.
GOOD = "#1c7ed6"  # blue
BAD = "#e8590c"  # orange
DIFF_BAND = "rgba(250, 176, 5, 0.22)"  # yellow band behind the tokens where the pair differs
HUMAN = "#212529"
PUBLISHED = "#868e96"
PALETTE = ["#1c7ed6", "#e8590c", "#2f9e44", "#9c36b5", "#f08c00", "#0c8599", "#c2255c", "#5c940d",
           "#364fc7", "#a61e4d", "#087f5b", "#d9480f"]
VARIANT_COLORS = {"original": "#adb5bd", "word_l2r": "#1c7ed6", "whole_word": "#2f9e44", "sentence_l2r": "#9c36b5"}
VARIANT_NAMES = {"original": "PLL-original", "word_l2r": "PLL-word-l2r", "whole_word": "PLL-whole-word",
                 "sentence_l2r": "PLL-sentence-l2r"}
FONT = dict(family="Inter, 'Noto Sans', 'Noto Sans CJK SC', Arial, sans-serif", size=15)


def token_label(token: str) -> str:
    """A token as shown under its bar: stripped, escaped, '␣' for a bare space, '…' for a
    byte piece that continues the previous token's character (an emoji's second byte)."""
    t = str(token)
    shown = t.strip()
    if not shown:
        shown = "␣" if t else "…"
    return esc(shown)


def to_unit(logprob: float, unit: str) -> float:
    """Surprisal of a log-prob (nats) in bits or nats."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}")
    s = -float(logprob)
    return s / LN2 if unit == "bits" else s


def wrap_label(text: str, width: int) -> str:
    """Break a label (already escaped) onto lines of at most ``width`` characters, between words
    (plotly's <br>): a figure's category labels, title and legend entries then fit a phone's width
    instead of taking most of it. A single word longer than ``width`` keeps its line."""
    words, lines, line = str(text).split(" "), [], ""
    for w in words:
        if line and len(line) + 1 + len(_visible(w)) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    lines.append(line)
    return "<br>".join(lines)


def _visible(word: str) -> str:
    """A word as it shows (an HTML entity such as &#x27; counts as one character)."""
    import re

    return re.sub(r"&[#\w]+;", "x", word)


LABEL_WIDTH = 15  # characters of a category label on one line (a phone: about a third of the figure)
TITLE_WIDTH = 38  # characters of a title or an axis title on one line (a phone's width at 18 px)
LEGEND_WIDTH = 34  # characters of a legend entry on one line


# Every figure of the app is plotly_white. As the default, a new figure takes it at no cost; named in
# each update_layout, plotly validated a copy of it every time (the same JSON; docs/performance.md).
pio.templates.default = "plotly_white"


def _base_layout(fig: go.Figure, title: str = "", height: int = 460) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0.01, xanchor="left", font=dict(size=18)) if title else None,
        font=FONT, height=height, margin=dict(l=70, r=30, t=70 if title else 30, b=60),
        hoverlabel=dict(font_size=14), showlegend=True, legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0, xanchor="left"),
    )
    return fig


def empty_figure(message: str, height: int = 320) -> go.Figure:
    """A blank figure carrying a message in its middle (no data yet, an error, ...)."""
    fig = go.Figure()
    fig.add_annotation(text=esc(message), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=17, color="#495057"))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _base_layout(fig, height=height)


# ---------------------------------------------------------------------------- token alignment
@dataclass(frozen=True)
class Column:
    """One aligned position: the token index in each sentence (None where it has none)."""

    good: int | None
    bad: int | None
    differs: bool


def align_tokens(good: list[str], bad: list[str]) -> list[Column]:
    """Align two token sequences (difflib over the stripped token strings).

    Equal runs share columns; a replaced run pairs its tokens position by position and pads
    the shorter side; inserted / deleted tokens get a column with one side empty. Every
    column outside an equal run is marked ``differs``.
    """
    a = [t.strip() for t in good]
    b = [t.strip() for t in bad]
    cols: list[Column] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            cols += [Column(i1 + k, j1 + k, False) for k in range(i2 - i1)]
        else:
            n = max(i2 - i1, j2 - j1)
            for k in range(n):
                gi = i1 + k if i1 + k < i2 else None
                bj = j1 + k if j1 + k < j2 else None
                cols.append(Column(gi, bj, True))
    return cols


def _hover_token(tok: dict, index: int, unit: str, item: str = "token") -> str:
    lp = float(tok["logprob"])
    extra = ""
    if "logprob_sum" in tok and abs(float(tok["logprob_sum"]) - lp) > 1e-9:
        extra = f"<br>sum of its tokens: {to_unit(tok['logprob_sum'], unit):.2f} {unit}"
    if tok.get("pieces"):
        extra += f"<br>tokens: {' · '.join(token_label(p) for p in tok['pieces'])}"
    return (f"<b>{token_label(tok['token'])}</b> ({item} {index + 1}, characters {tok.get('start', '?')}–{tok.get('end', '?')})"
            f"<br>surprisal {to_unit(lp, unit):.2f} {unit}<br>p = {math.exp(lp):.3g}{extra}")


def word_items(words: list[dict], tokens: list[dict] | None = None) -> list[dict]:
    """Word records (service: {word, start, end, logprob, logprob_sum, tokens}) as the figure's items."""
    out = []
    for w in words:
        pieces = [tokens[i]["token"] for i in w.get("tokens", [])] if tokens else []
        out.append({"token": w["word"], "start": w["start"], "end": w["end"], "logprob": w["logprob"],
                    "logprob_sum": w.get("logprob_sum", w["logprob"]), "pieces": pieces})
    return out


def surprisal_figure(tokens: dict, unit: str = "bits", labels: tuple[str, str] = ("Good sentence", "Bad sentence"),
                     height: int = 520, item: str = "token") -> go.Figure:
    """Per-token (or per-word: item="word", see word_items) surprisal of both sentences, one row
    each, on a shared aligned axis.

    ``tokens``: {"good": [...], "bad": [...]}, each a list of {token, start, end, logprob
    (nats)} as in ``PairResult.tokens``. Items where the pair differs get a yellow band across
    both rows and full colour; items the two share are drawn paler.
    """
    good, bad = list(tokens.get("good") or []), list(tokens.get("bad") or [])
    if not good and not bad:
        return empty_figure("No tokens to show.")
    cols = align_tokens([t["token"] for t in good], [t["token"] for t in bad])
    tot = {k: sum(to_unit(t["logprob"], unit) for t in v) for k, v in (("good", good), ("bad", bad))}
    fig = make_subplots(rows=2, cols=1, shared_xaxes=False, vertical_spacing=0.2, subplot_titles=(
        f"{esc(labels[0])}: {tot['good']:.1f} {unit} in all",
        f"{esc(labels[1])}: {tot['bad']:.1f} {unit} in all",
    ))
    ymax = 0.0
    for row, (key, toks, color) in enumerate((("good", good, GOOD), ("bad", bad, BAD)), start=1):
        xs, ys, hover, opac, ticks, texts, spans = [], [], [], [], [], [], []
        for c, col in enumerate(cols):
            i = col.good if key == "good" else col.bad
            if i is None:
                continue
            t = toks[i]
            s = to_unit(t["logprob"], unit)
            ymax = max(ymax, s)
            xs.append(c)
            ys.append(s)
            hover.append(_hover_token(t, i, unit, item) + ("<br><i>differs from the other sentence</i>" if col.differs else ""))
            opac.append(1.0 if col.differs else 0.45)
            ticks.append(c)
            label = token_label(t["token"])
            texts.append(f"<b>{label}</b>" if col.differs else label)
            if item == "word":  # the word's side and character span in the scored sentence (customdata below)
                spans.append([key, int(t["start"]), int(t["end"])])
        fig.add_trace(go.Bar(
            x=xs, y=ys, name=esc(labels[row - 1]), marker=dict(color=color, opacity=opac, line=dict(width=0)),
            hovertext=hover, hoverinfo="text", showlegend=False,
            customdata=spans or None,  # a click on a word's bar marks it as the region (ui/probe.py)
        ), row=row, col=1)
        # Few labels: plotly's own angle (it tilts them only where they would overlap, as on a phone).
        fig.update_xaxes(tickmode="array", tickvals=ticks, ticktext=texts, range=[-0.6, len(cols) - 0.4],
                         tickangle=-35 if len(cols) > 14 else None, automargin=True, row=row, col=1)
    for row in (1, 2):
        fig.update_yaxes(title_text=f"surprisal ({unit})", range=[0, ymax * 1.12 + 0.5], row=row, col=1)
    bands = [band(lo, hi, axis) for lo, hi in differing_runs([c.differs for c in cols]) for axis in ("", "2")]
    _base_layout(fig, height=height)
    fig.update_layout(bargap=0.25, margin=dict(t=50, b=70), shapes=bands)
    return fig


def signed(x: float, digits: int = 1) -> str:
    """'+2.8', '-1.0'; a value that rounds to zero is '+0.0', never '-0.0'."""
    return f"{(round(x, digits) or 0.0):+.{digits}f}"


def differing_runs(differs: list[bool]) -> list[tuple[int, int]]:
    """(first, last) column of each run of columns where the pair differs."""
    runs: list[tuple[int, int]] = []
    for c, d in enumerate(differs):
        if d and runs and runs[-1][1] == c - 1:
            runs[-1] = (runs[-1][0], c)
        elif d:
            runs.append((c, c))
    return runs


def band(lo: int, hi: int, axis: str = "") -> dict:
    """The yellow band behind columns lo..hi, the plot's full height (axis "2": the second row). One
    shape of a list set at once: plotly's add_vrect validates the figure once a band."""
    return dict(type="rect", xref=f"x{axis}", yref=f"y{axis} domain", x0=lo - 0.5, x1=hi + 0.5, y0=0, y1=1,
                fillcolor=DIFF_BAND, line_width=0, layer="below")


def difference_figure(strip: dict, unit: str = "bits", height: int = 300) -> go.Figure:
    """Bad minus good surprisal per aligned word (service.verdicts.difference_strip): above zero,
    the unacceptable sentence's word is more surprising. The region where the pair differs is
    banded; its sum and the sum over the words after it are in the title."""
    cols = strip.get("columns") or []
    if not cols:
        return empty_figure("No words to compare.", height=height)
    k = 1 / LN2 if unit == "bits" else 1.0
    ys = [c["delta"] * k for c in cols]
    labels = [esc(c["good"] if c["good"] == c["bad"] else f"{c['good'] or '∅'}→{c['bad'] or '∅'}") for c in cols]
    colors = [BAD if y > 0 else GOOD for y in ys]
    fig = go.Figure(go.Bar(x=list(range(len(cols))), y=ys, marker=dict(color=colors, opacity=[
        1.0 if c["differs"] else 0.55 for c in cols]), hovertext=[
        f"<b>{lab}</b><br>bad − good: {y:+.2f} {unit}" for lab, y in zip(labels, ys)], hoverinfo="text", showlegend=False))
    title = "Bad − good surprisal per word"
    zero = dict(type="line", xref="x domain", yref="y", x0=0, x1=1, y0=0, y1=0, line=dict(color="#868e96", width=1))
    shapes = [zero]
    if strip.get("region") is not None:
        shapes.insert(0, band(*strip["region"]))
        title += f"<br><sup>where they differ: {signed(strip['region_delta'] * k)} {unit}"
        if strip.get("after", True):  # the region ends the sentence: no spill-over
            title += f" · {spillover_phrase()}: {signed(strip['after_delta'] * k)} {unit}"
        title += "</sup>"
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(cols))), ticktext=labels,
                     tickangle=-35 if len(cols) > 10 else None, automargin=True)
    fig.update_yaxes(title_text=f"bad − good ({unit})")
    _base_layout(fig, title=title, height=height)
    fig.update_layout(showlegend=False, margin=dict(t=70, b=60), title_font_size=15, shapes=shapes)
    return fig


# ---------------------------------------------------------------------------- masked LMs: PLL per token
def _detail_dict(detail) -> dict:
    return detail.to_dict() if hasattr(detail, "to_dict") else dict(detail)


def pll_figure(details: dict, unit: str = "bits", labels: tuple[str, str] = ("Good sentence", "Bad sentence"),
               height: int = 600) -> go.Figure:
    """Per-token PLL surprisal under each variant, one row per sentence (Kauf & Ivanova Fig. 1-2).

    ``details``: {"good": SentencePLL or its ``to_dict()``, "bad": ...}. Bars: one per variant
    computed, per token. A multi-token word whose PLL-original is inflated (``inflated``)
    gets a red band and a label with its inflation (PLL-original − PLL-word-l2r).
    """
    keys = [k for k in ("good", "bad") if details.get(k) is not None]
    if not keys:
        return empty_figure("No masked-LM detail to show.")
    data = {k: _detail_dict(details[k]) for k in keys}
    titles = []
    for k in keys:
        d = data[k]
        n_infl = sum(1 for w in d.get("words", []) if w.get("inflated"))
        label = labels[0] if k == "good" else labels[1]
        titles.append(f"{esc(label)}" + (f": {n_infl} inflated multi-token word{'s' if n_infl != 1 else ''}" if n_infl else ""))
    fig = make_subplots(rows=len(keys), cols=1, vertical_spacing=0.22, subplot_titles=titles)
    shown = set()
    ymax = 0.0
    for row, k in enumerate(keys, start=1):
        d = data[k]
        toks = d.get("tokens", [])
        variants = [v for v in ("original", "word_l2r", "whole_word", "sentence_l2r") if v in d.get("variants", ())]
        for v in variants:
            ys = [to_unit(t["logprob"][v], unit) for t in toks]
            ymax = max([ymax] + ys)
            hover = [f"<b>{token_label(t['token'])}</b> in word “{esc(t['word'])}”<br>{VARIANT_NAMES[v]}: "
                     f"{y:.2f} {unit}<br>masked tokens: {', '.join(str(m + 1) for m in t['masked'].get(v, []))}"
                     for t, y in zip(toks, ys)]
            fig.add_trace(go.Bar(x=list(range(len(toks))), y=ys, name=VARIANT_NAMES[v], legendgroup=v,
                                 showlegend=v not in shown, marker_color=VARIANT_COLORS[v], hovertext=hover,
                                 hoverinfo="text"), row=row, col=1)
            shown.add(v)
        fig.update_xaxes(tickmode="array", tickvals=list(range(len(toks))),
                         ticktext=[token_label(t["token"]) for t in toks], tickangle=-35 if len(toks) > 12 else 0,
                         row=row, col=1)
        fig.update_yaxes(title_text=f"surprisal ({unit})", row=row, col=1)
        row_max = max([0.0] + [to_unit(t["logprob"][v], unit) for t in toks for v in variants])
        fig.update_yaxes(range=[0, row_max * 1.3 + 0.5], row=row, col=1)
        for w in d.get("words", []):
            if not w.get("inflated"):
                continue
            idx = list(w.get("tokens", []))
            if not idx:
                continue
            infl = w.get("inflation") or 0.0
            infl_u = infl / LN2 if unit == "bits" else infl
            fig.add_vrect(x0=min(idx) - 0.5, x1=max(idx) + 0.5, fillcolor="rgba(224, 49, 49, 0.13)", line_width=0,
                          layer="below", row=row, col=1)
            fig.add_annotation(x=(min(idx) + max(idx)) / 2, y=0.99, yref=f"y{'' if row == 1 else row} domain",
                               xref=f"x{'' if row == 1 else row}",
                               text=f"“{esc(w['text'])}”<br>inflated by {infl_u:.1f} {unit}",
                               showarrow=False, font=dict(size=12, color="#c92a2a"), yanchor="top")
    _base_layout(fig, height=height)
    fig.update_layout(barmode="group", bargap=0.2, legend=dict(y=1.08))
    return fig


# ---------------------------------------------------------------------------- explorer figures
LEGEND_ROW_PX = 26  # one legend entry (font 15) in a vertical legend
AXIS_TITLE_PX = 78  # tick labels and the x-axis title under the plot, kept clear of the legend


def legend_below(fig: go.Figure, entries: int | None = None, lines: int | None = None,
                 axis_px: int = AXIS_TITLE_PX) -> go.Figure:
    """Put the legend under the plot, one entry a row, and grow the figure to hold it: nothing is
    ever drawn above the plot but its title, so a legend can never cover a title. ``lines``: the
    legend's text lines where entries wrap (wrap_label)."""
    n = entries if entries is not None else sum(1 for t in fig.data if t.showlegend is not False)
    n = max(n, lines or 0)
    if not n:
        fig.update_layout(showlegend=False)
        return fig
    top = fig.layout.margin.t if fig.layout.margin.t is not None else 70
    height = int(fig.layout.height or 460) + LEGEND_ROW_PX * n
    bottom = axis_px + LEGEND_ROW_PX * n + 10
    plot_px = max(80, height - top - bottom)
    fig.update_layout(height=height, margin=dict(b=bottom),
                      legend=dict(orientation="v", x=0, xanchor="left", yanchor="top", y=-axis_px / plot_px))
    return fig


def error_bars(acc, lo, hi, thickness: float = 1.5) -> dict | None:
    """Asymmetric error bars (plotly error_x / error_y) from intervals, or None without them."""
    if lo is None or hi is None:
        return None
    plus = [h - a if pd.notna(h) and pd.notna(a) else None for a, h in zip(acc, hi)]
    minus = [a - low if pd.notna(low) and pd.notna(a) else None for a, low in zip(acc, lo)]
    return dict(type="data", symmetric=False, array=plus, arrayminus=minus, color="#343a40", thickness=thickness, width=3)


def ci_text(lo, hi, n=None) -> str:
    """'<br>95 % CI 61.2–65.8 % · 800 pairs' (each part only when known)."""
    out = f"<br>95 % CI {lo:.1f}–{hi:.1f} % (bootstrap over pairs)" if pd.notna(lo) and pd.notna(hi) else ""
    if n is not None and pd.notna(n) and int(n) > 0:
        out += f"<br>{int(n):,} pairs"
    return out


def _col(g: pd.DataFrame, name: str):
    return g[name].tolist() if name in g else None


def _method_label(row) -> str:
    t = str(row.get("template", "-"))
    return esc(display_name(row["method"])) + ("" if t in ("-", "", "None") else f" [{esc(t)}]")


def phenomenon_figure(ours: pd.DataFrame, published: pd.DataFrame | None = None, title: str = "") -> go.Figure:
    """Accuracy (%) by phenomenon: bars for this project's runs, markers for published numbers.

    ``ours``: columns phenomenon, accuracy, method, template, (model); one bar trace per
    method x template (x model). ``published``: LONG_COLUMNS (model, method, phenomenon,
    accuracy, source); humans as black diamonds, other published rows as grey symbols,
    every one named with its source.
    """
    ours = ours if ours is not None else pd.DataFrame()
    published = published if published is not None else pd.DataFrame()
    if ours.empty and published.empty:
        return empty_figure("No results for this selection yet.")
    phen = sorted(set(ours.get("phenomenon", pd.Series(dtype=str)).dropna()) | set(
        published.get("phenomenon", pd.Series(dtype=str)).dropna()) - {"overall"})
    fig = go.Figure()
    if not ours.empty:
        many_models = "model" in ours and ours["model"].nunique() > 1
        for k, ((model, method, template), g) in enumerate(ours.groupby(["model", "method", "template"], sort=False)):
            g = g.set_index("phenomenon").reindex(phen)
            name = _method_label({"method": method, "template": template}) + (f" · {esc(model)}" if many_models else "")
            pairs = g["pairs"].fillna(0).astype(int).tolist() if "pairs" in g else [None] * len(g)
            lo, hi = _col(g, "ci_low"), _col(g, "ci_high")
            fig.add_trace(go.Bar(
                y=[esc(p) for p in phen], x=g["accuracy"].tolist(), orientation="h", name=name,
                marker_color=PALETTE[k % len(PALETTE)], error_x=error_bars(g["accuracy"], lo, hi),
                hovertext=[f"{name}<br>{esc(p)}: {a:.1f} %" + ci_text(lo[i] if lo else None, hi[i] if hi else None, n)
                           + "<br>source: this project"
                           if pd.notna(a) else f"{name}<br>{esc(p)}: no pairs"
                           for i, (p, a, n) in enumerate(zip(phen, g["accuracy"], pairs))],
                hoverinfo="text"))
    symbols = ["line-ns", "x-thin", "cross-thin", "star", "triangle-up", "square"]
    if not published.empty:
        pub = published[published.phenomenon.isin(phen)]
        for k, ((model, method), g) in enumerate(pub.groupby(["model", "method"], sort=False)):
            g = g.set_index("phenomenon").reindex(phen)
            src = esc(str(g["source"].dropna().iloc[0]) if g["source"].notna().any() else "published")
            human = model == "human"
            name = ("Humans" if human else f"{esc(model)} {esc(method)}") + f" (published: {esc(short_source(src))})"
            fig.add_trace(go.Scatter(
                y=[esc(p) for p in phen], x=g["accuracy"].tolist(), mode="markers", name=name,
                marker=dict(symbol="diamond" if human else symbols[k % len(symbols)], size=13 if human else 10,
                            color=HUMAN if human else PUBLISHED, line=dict(width=2, color=HUMAN if human else PUBLISHED)),
                hovertext=[f"{name}<br>{esc(p)}: {a:.1f} %<br>source: {src}" if pd.notna(a) else "" for p, a in zip(phen, g["accuracy"])],
                hoverinfo="text"))
    fig.add_vline(x=50, line=dict(color="#adb5bd", dash="dot"))
    title = wrap_label(title, TITLE_WIDTH)
    # 46 px a phenomenon: room for its label on two lines
    _base_layout(fig, title, height=max(420, 150 + 46 * len(phen) * max(1, min(3, len(fig.data) // 2 or 1))))
    fig.update_layout(barmode="group", bargap=0.25, margin=dict(t=30 + 24 * (title.count("<br>") + 1), l=10, r=10))
    fig.update_xaxes(title_text="accuracy (%)<br>whiskers: 95 % CI", range=[0, 102])
    # the phenomena's words on at most two short lines each: labels take a third of a phone's width, not 60 %
    labels = {esc(p): wrap_label(esc(p), LABEL_WIDTH) for p in phen}
    fig.update_yaxes(autorange="reversed", automargin=True, tickmode="array", tickvals=list(labels),
                     ticktext=list(labels.values()), tickfont=dict(size=13))
    for t in fig.data:
        t.name = wrap_label(t.name, LEGEND_WIDTH)
    return legend_below(fig, lines=sum(t.name.count("<br>") + 1 for t in fig.data if t.showlegend is not False),
                        axis_px=AXIS_TITLE_PX + 22)  # the axis title on two lines


def short_source(source: str) -> str:
    """'Warstadt et al. 2020, BLiMP repo ...' -> 'Warstadt et al. 2020'."""
    s = str(source)
    for sep in (", ", "; ", " ("):
        if sep in s:
            s = s.split(sep)[0]
    return s


def length_figure(by_length: pd.DataFrame, bias: pd.DataFrame | None = None, published_bias: pd.DataFrame | None = None,
                  title: str = "") -> go.Figure:
    """Accuracy (%) by token-length difference (|good| − |bad|), one line per method, with r.

    ``by_length``: method, template, len_diff, label, n, accuracy. ``bias``: method, template,
    r, p_value. ``published_bias``: method, point_biserial_r, source (Ide et al. Table 4).
    """
    if by_length is None or by_length.empty:
        return empty_figure("No results for this selection yet.")
    fig = go.Figure()
    bias = bias if bias is not None else pd.DataFrame(columns=["method", "template", "r"])
    pub = published_bias if published_bias is not None else pd.DataFrame(columns=["method", "point_biserial_r", "source"])
    for k, ((method, template), g) in enumerate(by_length.groupby(["method", "template"], sort=False)):
        b = bias[(bias.method == method) & (bias.template == template)]
        r = float(b.r.iloc[0]) if len(b) else float("nan")
        name = _method_label({"method": method, "template": template}) + (f"  (r = {r:+.3f})" if not math.isnan(r) else "  (r undefined)")
        p = pub[pub.method == method]
        if len(p):
            name += (f"; published r = {float(p.point_biserial_r.iloc[0]):+.3f} "
                     f"({esc(p.source.iloc[0])}, mean over models)")
        lo, hi = _col(g, "ci_low"), _col(g, "ci_high")
        pairs = _col(g, "pairs") or [None] * len(g)
        fig.add_trace(go.Scatter(
            x=g["len_diff"].tolist(), y=g["accuracy"].tolist(), mode="lines+markers", name=name,
            line=dict(color=PALETTE[k % len(PALETTE)], width=3), marker=dict(size=[6 + min(14, math.sqrt(n)) for n in g["n"]]),
            error_y=error_bars(g["accuracy"], lo, hi),
            hovertext=[f"{name}<br>|good| − |bad| = {esc(lab)} tokens<br>accuracy {a:.1f} % over {n} judgments"
                       + ci_text(lo[i] if lo else None, hi[i] if hi else None, pairs[i])
                       for i, (lab, a, n) in enumerate(zip(g["label"], g["accuracy"], g["n"]))], hoverinfo="text"))
    ticks = by_length.drop_duplicates("len_diff").sort_values("len_diff")
    fig.add_hline(y=50, line=dict(color="#adb5bd", dash="dot"))
    _base_layout(fig, title, height=420)
    legend_below(fig)
    fig.update_xaxes(title_text="token-length difference: |good| − |bad| (model tokens)", tickmode="array",
                     tickvals=ticks["len_diff"].tolist(), ticktext=[esc(t) for t in ticks["label"]])
    fig.update_yaxes(title_text="accuracy (%), 95 % CI", range=[0, 102])
    return fig


def paradigm_figure(ours: pd.DataFrame, human: pd.DataFrame | None = None, title: str = "") -> go.Figure:
    """Accuracy (%) per paradigm for each method (bars), humans as diamonds; sorted by the first method."""
    if ours is None or ours.empty:
        return empty_figure("No results for this selection yet.")
    first = ours.groupby(["method", "template"], sort=False).ngroups and ours.iloc[0]
    order = (ours[(ours.method == first["method"]) & (ours.template == first["template"])]
             .sort_values("accuracy")["paradigm"].tolist())
    order += sorted(set(ours.paradigm) - set(order))
    fig = go.Figure()
    for k, ((method, template), g) in enumerate(ours.groupby(["method", "template"], sort=False)):
        g = g.set_index("paradigm").reindex(order)
        name = _method_label({"method": method, "template": template})
        lo, hi = _col(g, "ci_low"), _col(g, "ci_high")
        fig.add_trace(go.Bar(y=[esc(p) for p in order], x=g["accuracy"].tolist(), orientation="h", name=name,
                             marker_color=PALETTE[k % len(PALETTE)], error_x=error_bars(g["accuracy"], lo, hi),
                             hovertext=[f"{name}<br>{esc(p)} ({esc(ph)})<br>{a:.1f} % over {int(n) if pd.notna(n) else 0} pairs"
                                        + ci_text(lo[i] if lo else None, hi[i] if hi else None)
                                        for i, (p, ph, a, n) in enumerate(zip(order, g["phenomenon"], g["accuracy"],
                                                                              g["pairs"]))],
                             hoverinfo="text"))
    if human is not None and not human.empty:
        h = human.set_index("paradigm").reindex(order)
        src = esc(short_source(human["source"].iloc[0])) if "source" in human else "published"
        fig.add_trace(go.Scatter(y=[esc(p) for p in order], x=h["accuracy"].tolist(), mode="markers",
                                 name=f"Humans (published: {src})",
                                 marker=dict(symbol="diamond", size=11, color=HUMAN),
                                 hovertext=[f"Humans: {a:.1f} % ({src})" if pd.notna(a) else "" for a in h["accuracy"]],
                                 hoverinfo="text"))
    fig.add_vline(x=50, line=dict(color="#adb5bd", dash="dot"))
    n_methods = max(1, ours.groupby(["method", "template"]).ngroups)
    _base_layout(fig, title, height=min(4000, max(420, 140 + len(order) * (16 + 10 * n_methods))))
    fig.update_layout(barmode="group", bargap=0.2)
    fig.update_xaxes(title_text="accuracy (%); whiskers: 95 % bootstrap interval", range=[0, 102])
    fig.update_yaxes(automargin=True)
    return legend_below(fig)


def grouped_bar_figure(df: pd.DataFrame, x: str, y: str, group: str, title: str = "", y_title: str = "accuracy (%)",
                       reference: dict | None = None, y_range=(0, 102)) -> go.Figure:
    """A small grouped bar chart (ensembles, A-share, word shuffling, attractors).

    ``reference``: {label: value} drawn as dashed horizontal lines (published numbers, their
    label naming the source).
    """
    if df is None or df.empty:
        return empty_figure("No results for this selection yet.")
    fig = go.Figure()
    for k, (g_name, g) in enumerate(df.groupby(group, sort=False)):
        color = HUMAN if str(g_name).startswith("Humans") else PALETTE[k % len(PALETTE)]
        lo, hi = _col(g, "ci_low"), _col(g, "ci_high")
        pairs = _col(g, "pairs") or [None] * len(g)
        fig.add_trace(go.Bar(x=[esc(v) for v in g[x]], y=g[y].tolist(), name=esc(g_name), marker_color=color,
                             error_y=error_bars(g[y], lo, hi),
                             hovertext=[f"{esc(g_name)}<br>{esc(a)}: {b:.1f}"
                                        + ci_text(lo[i] if lo else None, hi[i] if hi else None, pairs[i])
                                        for i, (a, b) in enumerate(zip(g[x], g[y]))], hoverinfo="text",
                             text=[f"{b:.1f}" for b in g[y]], textposition="outside"))
    for k, (label, value) in enumerate((reference or {}).items()):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        fig.add_hline(y=float(value), line=dict(color=HUMAN if k == 0 else PUBLISHED, dash="dash"),
                      annotation_text=esc(label), annotation_position="bottom left" if k % 2 == 0 else "top right",
                      annotation_font=dict(size=13))
    _base_layout(fig, title, height=440)
    fig.update_layout(barmode="group", bargap=0.3)
    whiskers = "ci_low" in df and df["ci_low"].notna().any()
    fig.update_yaxes(title_text=y_title + (", 95 % CI" if whiskers else ""), range=list(y_range) if y_range else None)
    return legend_below(fig)
