"""How the Probe tab shows the probe's data (accapp.service.probe): the summary, the verdict
table, the benchmark context. HTML and display frames only; every user string through esc."""

from __future__ import annotations

import pandas as pd

from accapp.benchmarks import NAMES, label_of
from accapp.service import ratings, units
from accapp.service.catalog import describe, family_title, headline, stage_text
from accapp.service.probe import MethodContext
from accapp.ui import plots
from accapp.ui.common import esc, note, pair_where
from accapp.ui.hu_levy_view import probe_html as hu_levy_html
from accapp.ui.region_view import spillover_abbr

LN2 = plots.LN2

VERDICT_TEXT = {"good": "prefers good ✓", "bad": "prefers bad ✗", "tie": "tie ="}


def _run_verdict(c) -> str:
    return "" if c is None else ("right" if c >= 1 else ("wrong" if c <= 0 else f"{c * 10:.0f}/10 draws right"))


def in_unit(value: float, method: str, unit: str) -> float:
    """A method's score (or difference) in the page's unit (accapp.service.units)."""
    return units.in_unit(value, method, unit)


def unit_label(method: str, unit: str) -> str:
    """What a method's number is in: 'bits', 'bits/token', 'P(Yes)', 'share of draws' (accapp.service.units)."""
    return units.unit_label(method, unit)


def table_columns(unit: str = "bits") -> list[str]:
    """The judgments table's headers. Its rows mix methods (log-probabilities in the page's unit,
    P(Yes), shares of draws), so no header names a unit: the Unit column gives each row's."""
    return ["Method", "Template", "Order", "Score: good", "Score: bad", "Good − bad", "Unit", "Verdict",
            "Votes / answers"]


RUN_ACCURACY = "Run: phenomenon accuracy (%)"  # the phenomenon is named in the benchmark box below
# The judgments table's column shares (of its panel's width): the table fits its panel, every header
# reads on one or two lines (the run's columns got 66 px and a 221-px header without them).
JUDGMENT_WIDTHS = {"Method": 13, "Template": 7, "Order": 6, "Score: good": 8, "Score: bad": 8, "Good − bad": 8,
                   "Unit": 9, "Verdict": 10, "Votes / answers": 13, RUN_ACCURACY: 11, "Run: this pair": 7}


def judgment_widths(columns: list[str]) -> list[str]:
    """Each column's share of the judgments table, as percentages that sum to 100."""
    raw = [JUDGMENT_WIDTHS.get(c, 8) for c in columns]
    return [f"{100 * w / sum(raw):.1f}%" for w in raw]


def verdict_frame(records: list[dict], has_run: bool = False, phenomenon: str | None = None, unit: str = "nats") -> pd.DataFrame:
    """Every judgment (method x template x answer order) as the page shows it: log-probabilities in
    `unit`, probabilities and shares as they are (the Unit column says which). With a run (records
    from service.probe.with_run), two more columns: its accuracy on the phenomenon and its
    verdict on this pair."""
    cols = table_columns(unit)
    df = pd.DataFrame([{
        cols[0]: r["name"], cols[1]: r["template"], cols[2]: r["variant"] or "",
        cols[3]: in_unit(r["score_good"], r["method"], unit), cols[4]: in_unit(r["score_bad"], r["method"], unit),
        cols[5]: in_unit(r["difference"], r["method"], unit), cols[6]: unit_label(r["method"], unit),
        cols[7]: VERDICT_TEXT.get(r["verdict"], r["verdict"]), cols[8]: r["votes"],
    } for r in records], columns=cols)
    if has_run:
        df[RUN_ACCURACY] = pd.Series(
            [float("nan") if r.get("run_accuracy") is None else r["run_accuracy"] for r in records], dtype=float).round(1)
        df["Run: this pair"] = [_run_verdict(r.get("run_correct")) for r in records]
    return df


def styled(df: pd.DataFrame):
    """Colour the verdicts and mark the rows that disagree with the majority."""

    def row_style(row):
        base = ""
        out = []
        for c in row.index:
            s = base
            if c == "Verdict":
                s += "color: #1864ab;" if "good" in str(row[c]) else "color: #d9480f;" if "bad" in str(row[c]) else ""
            out.append(s)
        return out

    fmt = {c: "{:.4g}" for c in df.columns if c.startswith(("Score: ", "Good − bad"))}
    fmt.update({c: "{:.1f}" for c in df.columns if c == RUN_ACCURACY})  # "88.0", never "88.000000"
    return df.style.apply(row_style, axis=1).format(fmt, na_rep="")


def context_html(ctx: MethodContext, model_name: str, method_name: str) -> str:
    """How the chosen method and model did on this pair's phenomenon, and on this very pair."""
    meta = ctx.meta
    if meta is None:
        return note(f"This pair is not in {esc(' or '.join(label_of(b) for b in NAMES))}, so there is no benchmark "
                    "result to show beside it. "
                    "Pick a benchmark pair above to see how the method does on its phenomenon.", "info")
    if not meta.get("phenomenon"):  # a pair of the user's file (ratings_view.open_row): no benchmark behind it
        return note(f"This pair is {esc(' · '.join(pair_where(meta)))}. It is not in "
                    f"{esc(' or '.join(label_of(b) for b in NAMES))}, so there is no benchmark result to show beside it.",
                    "info")
    name, mname = esc(model_name), esc(method_name)
    bench, phen = meta["benchmark"], meta["phenomenon"]
    where = (f"<b>{esc(label_of(bench))}</b> · phenomenon <b>{esc(phen)}</b> · paradigm <b>{esc(meta['paradigm'])}</b> · "
             f"pair {esc(meta['pair_id'])}")
    parts = [f"<div class='acc-small'>This pair is {where}.</div>"]
    human_txt = (f" Humans: <b>{ctx.human_accuracy:.1f} %</b> (published: {esc(plots.short_source(ctx.human_source))})."
                 if ctx.human_accuracy is not None else "")
    if not ctx.has_run:
        parts.append(f"No precomputed {esc(label_of(bench))} run of <b>{mname}</b> with <b>{name}</b> yet.{human_txt}")
        return note("<br>".join(parts), "info")
    tmpl_txt = "" if ctx.template == "-" else f" (template {esc(ctx.template)}, its best)"
    if ctx.phen_accuracy is not None:
        overall = (f" ({ctx.overall_accuracy:.1f} % over all of {esc(label_of(bench))}; a tie counts as wrong)."
                   if ctx.overall_accuracy is not None else ".")
        parts.append(f"<b>{mname}</b>{tmpl_txt} with <b>{name}</b> is right on <b>{ctx.phen_accuracy:.1f} %</b> of "
                     f"{ctx.phen_pairs} {esc(phen)} pairs in this project's run" + overall + human_txt)
    c = ctx.pair_correct
    if c is not None:
        verdict = "right" if c >= 1 else "wrong" if c <= 0 else f"right on {c * 100:.0f} % of its judgments"
        parts.append(f"On this very pair the precomputed run was <b>{verdict}</b>.")
        kind = "good" if c >= 1 else "bad"
    else:
        parts.append("This pair was not in the run's sample.")
        kind = "info"
    return note("<br>".join(parts), kind)


# ------------------------------------------------------------------------------------------ the answer
VOTE_TEXT = {"good": "acceptable ✓", "bad": "unacceptable ✗", "none": "no vote"}
TIE_HALF = "a tie or no vote counts half"  # service/reliability.py's rule (a coin flip)


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def family_line(f: dict) -> str:
    """One family's agreement in words (escaped)."""
    voting = f["good"] + f["bad"] + f["none"]
    parts = []
    if voting:
        parts.append(f"{f['good']} of {voting} prefer the acceptable sentence")
        if f["bad"]:
            parts.append(f"{f['bad']} the unacceptable one")
        if f["none"]:
            parts.append(f"{f['none']} cast no vote")
    if f["not_voting"]:
        parts.append(f"{f['not_voting']} unreliable for this model (no vote)")
    return esc(", ".join(parts))


def headline_html(report: dict | None, status: str = "") -> str:
    """The answer on top: the headline method's verdict in words, agreement by family (one vote
    per method), warnings, and what is still computing."""
    if report is None:
        return status
    head = report.get("headline")
    verdict = head["verdict"] if head else report["agreement"]["verdict"]
    kind = {"good": "good", "bad": "bad"}.get(verdict, "warn")
    need = describe(headline(report.get("kind") or "causal")).name
    text = head["text"] if head else f"No headline method was run (select {need} to get one)."
    where = (report.get("ran_on") or {}).get("text")
    ran_on = f" <span class='acc-ran-on' title='where it ran'>· ran on {esc(where)}</span>" if where else ""
    parts = [f"<div class='acc-model-name'>{esc(report.get('model_name', report['model']))}{ran_on}</div>",
             f"<div class='acc-verdict'>{spillover_abbr(esc(text))}</div>",
             f"<div class='acc-pair'><span class='g'>✓ {esc(report['good'])}</span><br>"
             f"<span class='b'>✗ {esc(report['bad'])}</span></div>"]
    split = report.get("split")
    if split:  # the methods disagree: why, from the numbers, and which reading the papers recommend
        parts.append(f"<div class='acc-split' data-testid='probe-split'><b>The methods disagree.</b> "
                     f"{esc(split['reason'])} <span class='acc-small'>{esc(split['advice'])}</span></div>")
    if report.get("humans"):  # a pair of a built-in rated set: the humans' z-scores beside the verdict
        parts.append(f"<div class='acc-humans'>👥 {esc(ratings.humans_line(report['humans']))}</div>")
    for w in report.get("warnings") or []:  # first: a warning can say why the votes below mean little
        parts.append(f"<div class='acc-warning'>⚠ {esc(w)}</div>")
    fams = report.get("families") or []
    if fams:
        a = report["agreement"]
        voting = a["good"] + a["bad"] + a["none"]
        summary = f"One vote per method: {a['good']} of {voting} prefer the acceptable sentence, {a['bad']} the unacceptable one"
        if a["none"]:
            why = ("the two sentences are identical, so every score ties" if report["good"].strip() == report["bad"].strip()
                   else "a tie, or their templates or answer orders disagree")
            summary += f", {a['none']} cast no vote ({why})"
        if a["not_voting"]:
            summary += f"; {_count(a['not_voting'], 'method')} unreliable for this model did not vote"
        items = "".join(f"<li><b>{esc(family_title(f['family']))}</b>: {family_line(f)}</li>" for f in fams)
        parts.append(f"<div class='acc-agree'>{esc(summary)}.</div><ul class='acc-families'>{items}</ul>")
    if status:
        parts.append(status)
    return note("".join(parts), kind)


def busy_html(text: str) -> str:
    """A working state with a spinner (text is trusted, written here)."""
    return f"<div class='acc-pending' role='status'><span class='acc-spinner'></span> {esc(text)}</div>"


def pending_html(pending: list[str]) -> str:
    """The visible 'still computing' state."""
    if not pending:
        return ""
    return busy_html(f"Still computing {', then '.join(stage_text(p) for p in pending)}…")


def _bench_cell(v: dict) -> str:
    if v.get("reliable") is None:
        return "<span class='acc-small'>no run</span>"
    acc = f"{v['benchmark_accuracy']:.1f} %"
    if v["reliable"]:
        return esc(acc)
    return f"<span class='acc-unreliable'>unreliable: {esc(v['unreliable_reason'])}</span>"


def votes_html(report: dict | None, unit: str = "bits", narrow: bool = False) -> str:
    """One row per method, grouped by family (collapsible): its vote, its mean good − bad in the
    page's unit, its judgments, its rule, and how it did on the benchmark with this model. The
    method's meaning and source on hover and under its name. Cards on a phone, and with
    narrow=True (one of two models side by side)."""
    if not report or not report.get("methods"):
        return ""
    bench = label_of(report.get("reliability_benchmark") or "benchmark")
    # each difference carries its own unit (bits, P(Yes), share of draws): the column mixes methods
    head = (f"<tr><th>Method</th><th>Vote</th><th>Good − bad (mean over its judgments, in its unit)</th>"
            f"<th>Judgments</th><th>How its judgments make one vote</th><th>{esc(bench)} accuracy, this model "
            f"(one vote per pair; {TIE_HALF})</th></tr>")
    wrap = "acc-votes-wrap acc-narrow" if narrow else "acc-votes-wrap"
    out = [f"<div class='{wrap}'><div class='acc-small'>Accuracy: this project's precomputed run, one vote per pair "
           f"with {TIE_HALF}, so it can differ by a tenth from the benchmark box and Explore, where a tie counts "
           "as wrong; a method whose "
           "accuracy is not above chance with 95 % confidence, or that gives one answer to 95 % of its prompts, "
           "is unreliable for this model and does not vote.</div>"]
    fams: dict[str, list[dict]] = {}
    for v in report["methods"]:
        fams.setdefault(v["family"], []).append(v)
    agree = {f["family"]: f for f in report.get("families") or []}
    for fam, rows in fams.items():
        body = []
        for v in rows:
            tip = f"{v['plain']} Source: {v['source']}."
            value = units.with_unit(v["mean_difference"], v["method"], unit)
            judg = f"{v['good']} good, {v['bad']} bad" + (f", {v['tie']} tie" if v["tie"] else "")
            cls = "unreliable" if v.get("reliable") is False else v["vote"]
            vote = VOTE_TEXT[v["vote"]] + (" (not counted)" if v.get("reliable") is False else "")
            body.append(
                f"<tr class='acc-vote-{cls}'><td data-label='Method'><span class='acc-method' title='{esc(tip)}'>"
                f"{esc(v['name'])}</span><div class='acc-plain'>{esc(v['plain'])}</div></td>"
                f"<td data-label='Vote' class='acc-vote'>{esc(vote)}</td>"
                f"<td data-label='Good − bad' class='acc-num'>{esc(value)}</td>"
                f"<td data-label='Judgments'>{esc(judg)}</td><td data-label='Rule'>{esc(v['rule'])}</td>"
                f"<td data-label='{esc(bench)} accuracy'>{_bench_cell(v)}</td></tr>")
        title = esc(family_title(fam))
        line = family_line(agree[fam]) if fam in agree else ""
        out.append(f"<details open class='acc-family'><summary><b>{title}</b> · {line}</summary>"
                   f"<table class='acc-votes'><thead>{head}</thead><tbody>{''.join(body)}</tbody></table></details>")
    ens = [r for r in report.get("verdicts", []) if r["family"] == "ensemble"]
    if ens:
        items = "".join(f"<li>{esc(r['name'])}: {esc(r['votes'])}</li>" for r in ens)
        out.append(f"<details class='acc-family'><summary><b>{esc(family_title('ensemble'))}</b> · votes of the judgments "
                   f"above, not counted again</summary><ul>{items}</ul></details>")
    out.append(hu_levy_html(report))  # each sentence's Yes/No and each order's answer (Hu & Levy 2023, Exp. 3a/3b)
    out.append("</div>")
    return "".join(out)


def error_html(message: str) -> str:
    return note(f"<div class='acc-verdict'>Nothing scored</div>{esc(message)}", "bad")
