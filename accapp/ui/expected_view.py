"""How the Probe tab shows what the model expected instead and the per-token
table (item 14): HTML and a display frame from the probe's reports (service/probe.py's
probe_json_full: its `expected`, `tokens` and `words`). Every user string through esc."""

from __future__ import annotations

import itertools
import math

import pandas as pd

from accapp.service import overlay
from accapp.service.expected import left_out, percent, readable, shown
from accapp.ui.common import esc

LN2 = math.log(2.0)
SIDE_NAME = {"good": "acceptable", "bad": "unacceptable"}


def _candidates_html(record: dict, own: set[str]) -> str:
    """'are 33 %, can 13 %, ...', a candidate that is one of the pair's own words in bold; markup and control
    tokens left out, and said to be."""
    items = []
    kept, dropped = readable(record)
    for c in kept:
        text = shown(c["token"])
        item = f"{esc(text)} {esc(percent(c['p_next_word_begins']))}"
        items.append(f"<b>{item}</b>" if text in own else item)
    return (", ".join(items) or "nothing") + esc(left_out(dropped))


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
CONTINUES = "·"  # before a token that continues the word begun by the token before it
TOKEN_LEGEND = (f"Each word, then its tokens: a token written {CONTINUES}like this continues the word begun by the "
                "token before it (a piece of a word, not a word of its own). Markup and the model's control tokens "
                "(such as &lt;h1&gt; or &lt;start_of_image&gt;) are left out of what the model expected: they are "
                "not words.")


def token_columns(unit: str, k: int = 5) -> list[str]:
    return ["Model", "Sentence", "Word", "Token #", "Token", f"Surprisal ({unit})", "Probability (%)",
            f"Expected instead (top {k}, %)"]


NBSP = "\u00a0"  # between a number and its unit: never a line break there


def _expected_cell(record: dict) -> str:
    kept, dropped = readable(record)
    return ", ".join(f"{shown(c['token'])} {percent(c['p']).replace(' ', NBSP)}" for c in kept) + left_out(dropped)


def token_frame(reports: list[dict | None], unit: str = "bits") -> pd.DataFrame:
    """Every token of both sentences, for each model shown: its word, its text (CONTINUES before a token
    that continues its word), its surprisal in `unit`, its probability, and what the model expected at
    its position (service/expected.py; markup and control tokens left out)."""
    k = next((r["expected"].get("k") for r in reports if r and (r.get("expected") or {}).get("applies")), 5)
    cols = token_columns(unit, k)
    rows = []
    for r in reports:
        if not r:
            continue
        e = r.get("expected") or {}
        for side in ("good", "bad"):
            words = (r.get("words") or {}).get(side) or []
            owner = {t: w["word"] for w in words for t in w.get("tokens") or []}
            continues = {t for w in words for t in (w.get("tokens") or [])[1:]}  # not the first token of its word
            tops = e[side]["tokens"] if e.get("applies") else []
            for i, t in enumerate(r["tokens"][side]):
                surprisal = -t["logprob"] / (LN2 if unit == "bits" else 1.0)
                top = _expected_cell(tops[i]) if i < len(tops) else ""
                rows.append({cols[0]: r.get("model_name") or r["model"], cols[1]: SIDE_NAME[side],
                             cols[2]: owner.get(i, ""), cols[3]: i,
                             cols[4]: (CONTINUES if i in continues else "") + t["token"], cols[5]: round(surprisal, 3),
                             cols[6]: float(f"{100.0 * math.exp(t['logprob']):.4g}"), cols[7]: top})
    return pd.DataFrame(rows, columns=cols)


# ------------------------------------------------------------------------------------------ the teacher's overlay
_overlay_ids = itertools.count(1)  # each overlay's own pair of radio buttons


def _legend_html(mode: str, unit: str) -> str:
    items = "".join(f"<span class='acc-legend-item'><span class='acc-swatch' style='background:{x['colour']}'></span>"
                    f"{esc(x['label'])}</span>" for x in overlay.legend(mode, unit))
    return f"<div class='acc-legend'>{items}</div>"


def _sentences_html(report: dict, mode: str, unit: str, ranks: dict | None) -> str:
    rows = []
    for side, mark in (("good", ""), ("bad", "*")):
        pieces = overlay.segments(report[side], report["tokens"][side], mode, unit, (ranks or {}).get(side))
        spans = "".join(
            f"<span class='acc-tok' style='background:{p['colour']}' title='{esc(p['title'])}'>{esc(p['text'])}</span>"
            if p["bucket"] is not None else esc(p["text"]) for p in pieces)
        rows.append(f"<div class='acc-overlay-line'><span class='acc-overlay-side'>{SIDE_NAME[side]}</span>"
                    f"<span class='acc-overlay-text'>{esc(mark)}{spans}</span></div>")
    return "".join(rows)


def overlay_html(report: dict | None, ranks: dict | None, unit: str = "bits", note: str = "") -> str:
    """Both sentences coloured token by token (service/overlay.py): by rank among the model's guesses or by
    surprisal, a toggle between the two (radio buttons the page's CSS reads: no round trip), each with its
    legend. ranks None: by surprisal only, with the reason (a masked LM has no next-token guesses; `note`
    says why otherwise). A token's hover says its surprisal and rank."""
    if not report or not report.get("tokens") or not report.get("good") or not report.get("bad"):
        return ""
    name = esc(report.get("model_name") or report.get("model") or "")
    title = (f"<div class='acc-overlay-title'><b>Each token coloured by how expected it was</b> ({name}; "
             f"as GLTR, Gehrmann et al. 2019, colours a text)</div>")
    surprisal = (f"<div class='acc-overlay-surprisal'>{_legend_html('surprisal', unit)}"
                 f"{_sentences_html(report, 'surprisal', unit, None)}</div>")
    if ranks is None:
        why = note or ("A masked LM has no next-token guesses to rank (ranks are for causal LMs): coloured by "
                       "each token's surprisal (its pseudo-log-likelihood)." if report.get("kind") == "masked" else
                       "Coloured by surprisal; ranks need a causal LM's next-token guesses.")
        return (f"<div class='acc-overlay'>{title}{surprisal}<div class='acc-small'>{esc(why)}</div></div>")
    n = next(_overlay_ids)
    toggle = (f"<div class='acc-overlay-toggle' role='radiogroup' aria-label='Colour by'>Colour by: "
              f"<label><input type='radio' name='acc-overlay-{n}' value='rank' checked> rank among the model's "
              f"guesses</label> <label><input type='radio' name='acc-overlay-{n}' value='surprisal'> surprisal "
              f"({esc(unit)})</label></div>")
    by_rank = (f"<div class='acc-overlay-rank'>{_legend_html('rank', unit)}"
               f"{_sentences_html(report, 'rank', unit, ranks)}</div>")
    return (f"<div class='acc-overlay' id='acc-overlay-{n}'>{title}{toggle}{by_rank}{surprisal}"
            f"<div class='acc-small'>Rank: 1 + the number of tokens the model found more probable at that "
            f"point. Hover a token for its numbers.</div></div>")
