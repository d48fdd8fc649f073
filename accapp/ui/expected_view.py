"""How the Probe tab shows what the model expected instead and the per-token
table (item 14): HTML and a display frame from the probe's reports (service/probe.py's
probe_json_full: its `expected`, `tokens` and `words`). Every user string through esc."""

from __future__ import annotations

import math

import pandas as pd

from accapp.service.expected import percent, shown
from accapp.ui.common import esc

LN2 = math.log(2.0)
SIDE_NAME = {"good": "acceptable", "bad": "unacceptable"}


def _candidates_html(record: dict, own: set[str]) -> str:
    """'are 33 %, can 13 %, ...', a candidate that is one of the pair's own words in bold."""
    items = []
    for c in record["expected"]:
        text = shown(c["token"])
        item = f"{esc(text)} {esc(percent(c['p_next_word_begins']))}"
        items.append(f"<b>{item}</b>" if text in own else item)
    return ", ".join(items) or "nothing"


def _own(record: dict, side: str) -> str:
    return (f"{SIDE_NAME[side]} “{esc(record['word'])}”: {esc(percent(record['p_word']))} as a whole word, "
            f"{esc(percent(record['p_first_token_begins']))} as the next word's start")


def _after(context: str) -> str:
    context = context.strip()
    return f"After “{esc(context)}”" if context else "At the start"


def _position_html(item: dict) -> str:
    """One position where the sentences differ: what the model expected there, and the pair's own words."""
    g, b = item.get("good"), item.get("bad")
    own = {r["word"] for r in (g, b) if r}
    if g and b and g["context"] == b["context"]:
        return (f"<li><b>{_after(g['context'])}</b>, the model expected: {_candidates_html(g, own)}"
                f"<div class='acc-small'>{_own(g, 'good')}; {_own(b, 'bad')}.</div></li>")
    out = []
    for side, r in (("good", g), ("bad", b)):
        if r:
            out.append(f"<li><b>{_after(r['context'])}</b> ({SIDE_NAME[side]} sentence), the model expected: "
                       f"{_candidates_html(r, own)}<div class='acc-small'>{_own(r, side)}.</div></li>")
    return "".join(out)


def _every_word_html(expected: dict, side: str) -> str:
    rows = "".join(f"<tr><td data-label='Word'>{esc(w['word'])} <span class='acc-small'>({esc(percent(w['p_word']))})"
                   f"</span></td><td data-label='Context'>{_after(w['context'])}</td>"
                   f"<td data-label='Expected'>{_candidates_html(w, {w['word']})}</td></tr>"
                   for w in expected[side]["words"])
    return (f"<details class='acc-family'><summary>At every word of the {SIDE_NAME[side]} sentence</summary>"
            f"<table class='acc-votes'><thead><tr><th>Word (its probability)</th><th>Context</th>"
            f"<th>The model expected (next word's start)</th></tr></thead><tbody>{rows}</tbody></table></details>")


def expected_html(report: dict | None) -> str:
    """What the first model expected instead: first where the sentences differ, then at every word."""
    if not report or not report.get("expected"):
        return ""
    e = report["expected"]
    title = f"<div><b>What {esc(report.get('model_name') or report['model'])} expected instead</b></div>"
    if not e.get("applies"):
        return f"<div class='acc-expected'>{title}<div class='acc-small'>{esc(e.get('note', ''))}</div></div>"
    differing = "".join(_position_html(item) for item in e.get("differing") or [])
    first = (f"<div>Where the sentences differ (the {e['k']} most probable next words' first tokens, in % "
             f"as the next word's start):</div><ul>{differing}</ul>") if differing else ""
    return (f"<div class='acc-expected' id='probe-expected-body'>{title}{first}"
            f"{_every_word_html(e, 'good')}{_every_word_html(e, 'bad')}"
            f"<div class='acc-small'>{esc(e['note'])}</div></div>")


# ------------------------------------------------------------------------------------------ the token table
def token_columns(unit: str, k: int = 5) -> list[str]:
    return ["Model", "Sentence", "Token #", "Token", "Word", f"Surprisal ({unit})", "Probability (%)",
            f"Expected instead (top {k}, %)"]


def token_frame(reports: list[dict | None], unit: str = "bits") -> pd.DataFrame:
    """Every token of both sentences, for each model shown: its text, its word, its surprisal in
    `unit`, its probability, and what the model expected at its position (service/expected.py)."""
    k = next((r["expected"].get("k") for r in reports if r and (r.get("expected") or {}).get("applies")), 5)
    cols = token_columns(unit, k)
    rows = []
    for r in reports:
        if not r:
            continue
        e = r.get("expected") or {}
        for side in ("good", "bad"):
            owner = {t: w["word"] for w in (r.get("words") or {}).get(side) or [] for t in w.get("tokens") or []}
            tops = e[side]["tokens"] if e.get("applies") else []
            for i, t in enumerate(r["tokens"][side]):
                surprisal = -t["logprob"] / (LN2 if unit == "bits" else 1.0)
                top = ", ".join(f"{shown(c['token'])} {percent(c['p'])}" for c in tops[i]["expected"]) if i < len(tops) else ""
                rows.append({cols[0]: r.get("model_name") or r["model"], cols[1]: SIDE_NAME[side], cols[2]: i,
                             cols[3]: t["token"], cols[4]: owner.get(i, ""), cols[5]: round(surprisal, 3),
                             cols[6]: float(f"{100.0 * math.exp(t['logprob']):.4g}"), cols[7]: top})
    return pd.DataFrame(rows, columns=cols)
