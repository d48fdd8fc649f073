"""How the Probe tab shows the probe's data (accapp.service.probe): the summary, the verdict
table, the benchmark context. HTML and display frames only; every user string through esc."""

from __future__ import annotations

import pandas as pd

from accapp.service.probe import MethodContext
from accapp.ui import plots
from accapp.ui.common import esc, note

TABLE_COLUMNS = ["Method", "Template", "Order", "Score: good", "Score: bad", "Good − bad", "Verdict",
                 "Agrees with majority", "Votes / answers"]
VERDICT_TEXT = {"good": "prefers good ✓", "bad": "prefers bad ✗", "tie": "tie ="}


def _agrees(a) -> str:
    return "—" if a is None else ("yes" if a else "NO ⚠")


def _run_verdict(c) -> str:
    return "" if c is None else ("right" if c >= 1 else ("wrong" if c <= 0 else f"{c * 10:.0f}/10 draws right"))


def verdict_frame(records: list[dict], has_run: bool = False, phenomenon: str | None = None) -> pd.DataFrame:
    """The table shown in the page (plain strings and numbers; Gradio shows them as text). With a
    run (records from service.probe.with_run), two more columns: its accuracy on the phenomenon and
    its verdict on this pair."""
    df = pd.DataFrame([{
        "Method": r["name"], "Template": r["template"], "Order": r["variant"] or "",
        "Score: good": r["score_good"], "Score: bad": r["score_bad"], "Good − bad": r["difference"],
        "Verdict": VERDICT_TEXT.get(r["verdict"], r["verdict"]), "Agrees with majority": _agrees(r["agrees_with_majority"]),
        "Votes / answers": r["votes"],
    } for r in records], columns=TABLE_COLUMNS)
    if has_run:
        df[f"Run: accuracy on {phenomenon or 'phenomenon'} (%)"] = pd.Series(
            [float("nan") if r.get("run_accuracy") is None else r["run_accuracy"] for r in records], dtype=float).round(1)
        df["Run: this pair"] = [_run_verdict(r.get("run_correct")) for r in records]
    return df


def styled(df: pd.DataFrame):
    """Colour the verdicts and mark the rows that disagree with the majority."""

    def row_style(row):
        base = "background-color: #fff4e6; font-weight: 600;" if str(row["Agrees with majority"]).startswith("NO") else ""
        out = []
        for c in row.index:
            s = base
            if c == "Verdict":
                s += "color: #1864ab;" if "good" in str(row[c]) else "color: #d9480f;" if "bad" in str(row[c]) else ""
            out.append(s)
        return out

    fmt = {c: "{:.4g}" for c in ("Score: good", "Score: bad", "Good − bad")}
    return df.style.apply(row_style, axis=1).format(fmt, na_rep="")


def summary_html(good: str, bad: str, maj: dict, records: list[dict]) -> str:
    g, b, n = maj["good"], maj["bad"], maj["judgments"]
    if maj["verdict"] == "good":
        head, kind = f"Most judgments prefer the acceptable sentence: {g} of {n}.", "good"
    elif maj["verdict"] == "bad":
        head, kind = f"Most judgments prefer the unacceptable sentence: {b} of {n}.", "bad"
    else:
        head, kind = f"The judgments are split: {g} for the acceptable sentence, {b} against.", "warn"
    if maj["tie"]:
        head += f" {maj['tie']} tie{'s' if maj['tie'] != 1 else ''}."
    ens = [r for r in records if r["family"] == "ensemble"]
    ens_txt = ""
    if ens:
        ens_txt = "<br>Ensemble votes: " + "; ".join(
            f"{esc(r['name'].replace('Ensemble ', ''))} {round(r['score_good'] * 10)}/10 draws for the acceptable sentence"
            for r in ens)
    dis = sorted({r["name"] for r in records if r["agrees_with_majority"] is False})
    dis_txt = f"<br>Disagree with the majority: {esc(', '.join(dis))}." if dis else ""
    return note(
        f"<div class='acc-verdict'>{esc(head)}</div>"
        f"<div class='acc-pair'><span class='g'>✓ {esc(good)}</span><br><span class='b'>✗ {esc(bad)}</span></div>"
        f"{ens_txt}{dis_txt}", kind)


def context_html(ctx: MethodContext, model_name: str, method_name: str) -> str:
    """How the chosen method and model did on this pair's phenomenon, and on this very pair."""
    meta = ctx.meta
    if meta is None:
        return note("This pair is not in BLiMP or CLiMP, so there is no benchmark result to show beside it. "
                    "Pick a benchmark pair above to see how the method does on its phenomenon.", "info")
    name, mname = esc(model_name), esc(method_name)
    bench, phen = meta["benchmark"], meta["phenomenon"]
    where = (f"<b>{esc(bench.upper())}</b> · phenomenon <b>{esc(phen)}</b> · paradigm <b>{esc(meta['paradigm'])}</b> · "
             f"pair {esc(meta['pair_id'])}")
    parts = [f"<div class='acc-small'>This pair is {where}.</div>"]
    human_txt = (f" Humans: <b>{ctx.human_accuracy:.1f} %</b> (published: {esc(plots.short_source(ctx.human_source))})."
                 if ctx.human_accuracy is not None else "")
    if not ctx.has_run:
        parts.append(f"No precomputed {esc(bench.upper())} run of <b>{mname}</b> with <b>{name}</b> yet.{human_txt}")
        return note("<br>".join(parts), "info")
    tmpl_txt = "" if ctx.template == "-" else f" (template {esc(ctx.template)}, its best)"
    if ctx.phen_accuracy is not None:
        overall = f" ({ctx.overall_accuracy:.1f} % over all of {esc(bench.upper())})." if ctx.overall_accuracy is not None else "."
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
