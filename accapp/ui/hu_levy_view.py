"""Hu & Levy 2023's own measures of their metalinguistic prompts, as HTML: for one pair in the
probe (each sentence's Yes/No answer, each order's comparison answer) and for a whole run in
Explore (balanced accuracy, accuracy per order, beside this project's pairwise accuracy). The
numbers come from the service (the probe's report; :mod:`accapp.service.explore`'s measures);
every string through esc."""

from __future__ import annotations

import math

from accapp.ui.common import esc, note

_TH = "style='text-align:left;font-weight:600;border-bottom:2px solid var(--border-color-primary);padding:0.3rem;vertical-align:bottom'"
_TD = "style='border-bottom:1px solid var(--border-color-primary);padding:0.3rem;vertical-align:top'"
_RIGHT = {True: "<span style='color:#1864ab'>✓</span>", False: "<span style='color:#d9480f'>✗</span>", None: ""}


def _table(head: list[str], rows: list[list[str]], elem_class: str) -> str:
    th = "".join(f"<th {_TH}>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td {_TD}>{c}</td>" for c in r) + "</tr>" for r in rows)
    return (f"<div style='overflow-x:auto'><table class='{elem_class}' style='width:100%;border-collapse:collapse;"
            f"font-size:0.95rem;margin:0.3rem 0'><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>")


# ------------------------------------------------------------------------------------------ the probe
def _judged(answer: str | None, p_yes: float, right) -> str:
    if answer is None:
        return "<span class='acc-small'>not recorded</span>"
    return f"{esc(answer)} {_RIGHT[right]} <span class='acc-small'>· P(Yes) {100 * p_yes:.1f} %</span>"


def _chosen(answer: str | None, right) -> str:
    if answer is None:
        return "<span class='acc-small'>not recorded</span>"
    return f"answers {esc(answer)} {_RIGHT[right]}"


def probe_html(report: dict | None) -> str:
    """The probe's block "Hu & Levy's own measures": per metalinguistic prompt, each sentence's
    Yes/No answer with P(Yes), and the comparison prompt's answer in each order ('' when the
    report has no metalinguistic prompt)."""
    if not report:
        return ""
    answers = report.get("hu_levy")  # service.probe.probe_json_full: one entry per metalinguistic prompt
    if not answers:
        return ""
    sources = report.get("hu_levy_sources") or {}
    src_3a, src_3b = esc(sources.get("judgment", "")), esc(sources.get("comparison", ""))
    head = ["Prompt", f"Acceptable sentence judged alone<br><span class='acc-small'>{src_3a}</span>",
            f"Unacceptable sentence judged alone<br><span class='acc-small'>{src_3a}</span>",
            f"Comparison, acceptable as option 1<br><span class='acc-small'>{src_3b}</span>",
            f"Comparison, acceptable as option 2<br><span class='acc-small'>{src_3b}</span>"]
    rows = []
    for a in answers:
        j, c = a.get("judgment"), a.get("comparison")
        rows.append([
            f"<b>{esc(a['name'])}</b>",
            _judged(j["good"], j["p_yes_good"], j["right_good"]) if j else "",
            _judged(j["bad"], j["p_yes_bad"], j["right_bad"]) if j else "",
            _chosen(c["order1"], c["right_order1"]) if c else "",
            _chosen(c["order2"], c["right_order2"]) if c else "",
        ])
    text = ("How Hu &amp; Levy 2023 score these prompts: each sentence on its own (right: <b>Yes</b> for the "
            "acceptable sentence, <b>No</b> for the unacceptable one, whichever of P(Yes) and P(No) is higher), and "
            "the comparison prompt in each order separately (right: the acceptable sentence's number). The votes "
            "above use the same prompts pairwise: P(Yes) of the two sentences compared, and the two orders averaged.")
    return ("<details open class='acc-family acc-hu-levy'><summary><b>Hu &amp; Levy's own measures</b> · "
            "metalinguistic prompts, this pair</summary>"
            f"<div class='acc-small'>{text}</div>{_table(head, rows, 'acc-hl-probe')}</details>")


# ------------------------------------------------------------------------------------------ Explore
def _pct(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "<span class='acc-small' title='not recorded in this run'>missing</span>"
    return f"{float(v):.1f}"


def explore_html(df, columns: dict, bench: str, model: str | None) -> str:
    """Explore's table "Hu & Levy's measures" for one model's run on a benchmark (``bench``: its label):
    ``df`` one row per metalinguistic prompt (None: no run), ``columns`` each column's (label, source,
    meaning); each column labelled with its source, a legend with its meaning."""
    if not model or df is None:
        return note("No precomputed run yet, so no Hu &amp; Levy measures to show.", "info")
    if df.empty:
        return note(f"This run of <b>{esc(model)}</b> on <b>{esc(bench)}</b> has none of Hu &amp; Levy's "
                    "metalinguistic prompts (MetaQuestionSimple, MetaInstruct, MetaQuestionComplex).", "info")
    cols = list(columns)
    head = ["Prompt"] + [f"{esc(columns[c][0])}<br><span class='acc-small'>{esc(columns[c][1])}</span>"
                         for c in cols]
    rows = []
    for r in df.to_dict("records"):
        cells = [f"<b>{esc(r['name'])}</b>"]
        for c in cols:
            cells.append(f"{int(r[c]):,}" if c in ("pairs", "sentences", "comparison_pairs") else _pct(r[c]))
        rows.append(cells)
    legend = "".join(f"<li><b>{esc(label)}</b> ({esc(src)}): {esc(meaning)}</li>"
                     for label, src, meaning in columns.values())
    notes = [f"<li><b>{esc(r['name'])}</b>: {esc(r['note'])}.</li>" for r in df.to_dict("records") if r["note"]]
    parts = [f"<div class='acc-small'>{esc(model)} on {esc(bench)}. Hu &amp; Levy 2023 judge each sentence on "
             "its own (Exp. 3a, balanced accuracy) and give the comparison prompt in two orders (Exp. 3b); this "
             "project uses the same prompts pairwise (columns marked “this project”). Percentages pool the pairs, as "
             "Hu &amp; Levy do (the overall accuracy elsewhere in this tab is a mean over paradigms).</div>",
             _table(head, rows, "acc-hl-explore")]
    if notes:
        parts.append(note(f"<ul style='margin:0 0 0 1.2rem'>{''.join(notes)}</ul>", "warn"))
    parts.append(f"<details class='acc-family'><summary>What each column means</summary>"
                 f"<ul style='margin:0.2rem 0 0.2rem 1.2rem'>{legend}</ul></details>")
    return "".join(parts)
