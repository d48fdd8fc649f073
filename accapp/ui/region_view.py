"""The Probe tab's lines about a context and a critical region (accapp/service/context.py,
accapp/service/region.py): which methods read the context, and the region's and spill-over's
summed surprisal in each sentence, per model. HTML only; every user string through esc."""

from __future__ import annotations

import gradio as gr

from accapp.service.catalog import describe
from accapp.service.region import SPILLOVER_DEFINITION, SPILLOVER_TERM, SPILLOVER_WORDS, clicked
from accapp.ui import plot_click
from accapp.ui.common import esc
from accapp.ui.gradio_internals import event_value

REGION_HELP = ("Mark the critical region with double brackets, e.g. <code>These casseroles [[disgust]] Kayla.</code>: "
               "the probe sums its surprisal in each sentence, and the spill-over region's (the next "
               f"{'word' if SPILLOVER_WORDS == 1 else f'{SPILLOVER_WORDS} words'}). The brackets are not scored.")
CLICK_HELP = ("Or click a word's bar in the per-word figure: a click marks that word, a click on the word "
              "just before or after the region grows it, a click on the sole marked word removes the mark.")


def spillover_abbr(html: str) -> str:
    """Escaped text with each "spill-over" (any case) as an <abbr> whose tooltip is its one definition
    (service.region.SPILLOVER_DEFINITION)."""
    import re

    tip = esc(SPILLOVER_DEFINITION)
    return re.sub(re.escape(SPILLOVER_TERM), lambda m: f"<abbr class='acc-term' title='{tip}'>{m.group(0)}</abbr>", html,
                  flags=re.IGNORECASE)


def word_click_hook(figure_ids: list[str], elem_id: str = "probe-word-click") -> gr.HTML:
    """The hidden gr.HTML whose "click" event carries a clicked word's bar (evt.side, start, end: the bars'
    customdata in plots.surprisal_figure, item="word"; ui/plot_click.py)."""
    return plot_click.click_hook(figure_ids, ["side", "start", "end"], elem_id, "data-word-click")


def on_word_click(good, bad, evt: gr.EventData):
    """Both sentences' text after the click: the clicked side's region marked, extended or removed
    (service.region.clicked); an unusable click changes nothing."""
    side, start, end = (event_value(evt, k) for k in ("side", "start", "end"))
    if side == "good":
        return clicked(good, (start, end)), bad
    if side == "bad":
        return good, clicked(bad, (start, end))
    return good, bad


def _name(method_id: str) -> str:
    try:
        return describe(method_id).name
    except KeyError:
        return method_id


def context_html(ctx: dict | None) -> str:
    """What the context did: the methods that conditioned on it, and those that did not, and why."""
    if not ctx:
        return ""
    used = ", ".join(esc(_name(m)) for m in ctx["conditioned"]) or "none of the methods chosen"
    off = ", ".join(esc(_name(m)) for m in ctx["not_applied"])
    line = (f"<b>Context</b> ({len(ctx['text'])} characters, not scored): “{esc(ctx['text'][:120])}"
            f"{'…' if len(ctx['text']) > 120 else ''}”. Scored after it: {used}.")
    if off:
        line += f" Not applied to {off}: each {esc(ctx['note'])}."
    return f"<p class='acc-small' data-testid='probe-context-note'>{line}</p>"


def _cell(part: dict | None, unit: str) -> str:
    if not part:
        return "<td>—</td><td>—</td>"
    value = part["surprisal_bits" if unit == "bits" else "surprisal_nats"]
    return f"<td>{esc(' '.join(part['words']))}</td><td class='acc-num'>{value:.2f} {unit}</td>"


def _diff(d: dict | None, unit: str) -> str:
    if not d:
        return "—"
    v = d["surprisal_bits" if unit == "bits" else "surprisal_nats"]
    return f"{v:+.2f} {unit}"


def region_table(region: dict | None, unit: str, model_name: str = "") -> str:
    """The region's and the spill-over's summed surprisal in each sentence, and bad − good."""
    if not region:
        return ""
    rows = []
    for side, label in (("good", "Acceptable"), ("bad", "Unacceptable")):
        r = region[side]
        rows.append(f"<tr data-side='{side}'><th scope='row'>{label}</th>{_cell(r['region'], unit)}"
                    f"{_cell(r['spillover'], unit)}</tr>")
    diff = region["difference"]
    rows.append(f"<tr data-side='difference'><th scope='row'>Unacceptable − acceptable</th><td></td>"
                f"<td class='acc-num'>{_diff(diff['region'], unit)}</td><td></td>"
                f"<td class='acc-num'>{_diff(diff['spillover'], unit)}</td></tr>")
    n = region.get("spillover_words", SPILLOVER_WORDS)
    who = f" ({esc(model_name)})" if model_name else ""
    return (f"<table class='acc-region' data-testid='probe-region-table'><caption>Critical region{who}: summed "
            f"word surprisal, {unit} (the word view's own values)</caption><thead><tr><th></th><th>Region</th>"
            f"<th>Surprisal</th><th>{spillover_abbr('Spill-over')} (next {n} word{'s' if n != 1 else ''})</th>"
            "<th>Surprisal</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def extras_html(saved: dict | None, unit: str) -> str:
    """The context line and each model's region table for a probe's saved reports ('' when neither)."""
    reports = [r for r in ((saved or {}).get("reports") or []) if r]
    if not reports:
        return ""
    parts = [context_html(reports[0].get("context"))]
    two = len(reports) > 1
    parts += [region_table(r.get("region"), unit, r.get("model_name", "") if two else "") for r in reports]
    return "".join(p for p in parts if p)
