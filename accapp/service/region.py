"""The critical region of a minimal pair (SyntaxGym's regions; Gauthier et al. 2020): the words a
linguist marks with double brackets, "These casseroles [[disgust]] Kayla.", and the spill-over
region after them.

The probe strips the brackets before anything is scored (the model never sees them) and reports,
in each sentence, the region's summed surprisal and the spill-over region's: the next
SPILLOVER_WORDS word(s) after the region, as the word view cuts the sentence (punctuation is a
word there, so the spill-over of "... [[Kayla]]." is "."). Each word's surprisal is the word
view's own (its `logprob`: the word probability of the model's word rule), so a region's sum is
the sum of the per-word surprisals the page shows.

Marking: one [[...]] per sentence. A region marked in one sentence only is carried to the other
by word position when both have as many words; otherwise both must be marked. Pure functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accapp.errors import UserError
from accapp.words import split_words

OPEN, CLOSE = "[[", "]]"
SPILLOVER_WORDS = 1  # words after the region that make its spill-over region (SyntaxGym's suites mostly use one)
SPILLOVER_TERM = "spill-over"
# What the page says on hover wherever it shows the term: one definition for the headline, the
# difference strip and the region table.
SPILLOVER_DEFINITION = (
    f"Spill-over: the {'next word' if SPILLOVER_WORDS == 1 else f'next {SPILLOVER_WORDS} words'} after the critical "
    "region (where the sentences differ, or the region you marked). A reader's, and a model's, surprise at a word "
    "often shows a word late, so the spill-over is summed apart from the region (SyntaxGym; Gauthier et al. 2020).")
LN2 = math.log(2)
SIDES = ("good", "bad")
LABELS = {"good": "acceptable sentence", "bad": "unacceptable sentence"}


@dataclass(frozen=True)
class Marked:
    """A sentence with its brackets removed (surrounding whitespace stripped), and the region's
    character span in it (None: no region marked)."""

    text: str
    span: tuple[int, int] | None


def parse(text, label: str = "sentence") -> Marked:
    """The sentence without its [[...]] and the region's span, or UserError for brackets that do not
    pair up, nest, repeat or enclose nothing. Text that is not a string is returned as is (the
    sentence check names its fault)."""
    if not isinstance(text, str) or (OPEN not in text and CLOSE not in text):
        return Marked(text.strip() if isinstance(text, str) else text, None)
    a = text.find(OPEN)
    b = text.find(CLOSE, a + 2) if a >= 0 else -1
    if a < 0 or b < 0 or text.find(CLOSE) < a:
        raise UserError(f"The {label} has an unmatched bracket: mark the critical region as [[word]] "
                        "(two opening, two closing brackets).")
    inner = text[a + 2 : b]
    if OPEN in inner:
        raise UserError(f"The {label} opens a second [[ before ]]: regions cannot nest.")
    rest = text[b + 2 :]
    if OPEN in rest or CLOSE in rest:
        raise UserError(f"The {label} marks more than one region: mark one with [[...]].")
    if not inner.strip():
        raise UserError(f"The {label}'s region [[...]] is empty: put the critical word(s) inside it.")
    raw = text[:a] + inner + rest
    lead = len(raw) - len(raw.lstrip())
    start = a - lead + (len(inner) - len(inner.lstrip()))  # the region's own spaces are not its words
    end = a - lead + len(inner.rstrip())
    return Marked(raw.strip(), (max(start, 0), end))


def spillover_phrase(words: list[str] | None = None) -> str:
    """'spill-over (the next word, “Kayla”)': the term with its definition in brief, for a sentence."""
    what = "the next word" if SPILLOVER_WORDS == 1 else f"the next {SPILLOVER_WORDS} words"
    named = ", ".join(f"“{w}”" for w in words or [])
    return f"{SPILLOVER_TERM} ({what}, {named})" if named else f"{SPILLOVER_TERM} ({what})"


def _word_spans(text: str) -> list[tuple[int, int]]:
    return [(w.start, w.end) for w in split_words(text)]


def covered(spans, span) -> list[int]:
    """Indices of the words (character spans) that overlap the region's span."""
    a, b = span
    return [i for i, (s, e) in enumerate(spans) if s < b and e > a]


def split_pair(good, bad) -> tuple[object, object, dict | None]:
    """(good, bad, regions): both sentences without brackets, and {"good": span, "bad": span} or None
    when neither is marked. A region marked in one sentence only is carried to the other by word
    position (both must have as many words); else UserError."""
    g, b = parse(good, LABELS["good"]), parse(bad, LABELS["bad"])
    if g.span is None and b.span is None:
        return g.text, b.text, None
    spans = {"good": g.span, "bad": b.span}
    texts = {"good": g.text, "bad": b.text}
    for side, other in (("good", "bad"), ("bad", "good")):
        if spans[side] is None:
            mine, theirs = _word_spans(texts[side]), _word_spans(texts[other])
            idx = covered(theirs, spans[other])
            if len(mine) != len(theirs) or not idx:
                raise UserError(f"The critical region is marked in the {LABELS[other]} only, and the two sentences "
                                "have different numbers of words: mark it in both with [[...]].")
            spans[side] = (mine[idx[0]][0], mine[idx[-1]][1])
    return g.text, b.text, spans


def _sum(words: list[dict], idx: list[int]) -> dict | None:
    if not idx:
        return None
    nats = -sum(float(words[i]["logprob"]) for i in idx)
    return {"words": [words[i]["word"] for i in idx], "word_indices": idx,
            "start": words[idx[0]]["start"], "end": words[idx[-1]]["end"],
            "surprisal_nats": nats, "surprisal_bits": nats / LN2}


def side_report(words: list[dict], span: tuple[int, int], spillover: int = SPILLOVER_WORDS) -> dict:
    """One sentence's region and spill-over: words, character span and summed surprisal (nats, bits)
    of each; spill-over None where the region ends the sentence."""
    idx = covered([(w["start"], w["end"]) for w in words], span)
    after = list(range(idx[-1] + 1, min(idx[-1] + 1 + spillover, len(words)))) if idx else []
    return {"region": _sum(words, idx), "spillover": _sum(words, after)}


def region_report(words: dict | None, regions: dict | None) -> dict | None:
    """{"good": side_report, "bad": side_report, "difference": {region, spillover: bad − good in nats
    and bits}, "spillover_words": SPILLOVER_WORDS} from a report's words, or None (no region, no words)."""
    if not regions or not words or not words.get("good") or not words.get("bad"):
        return None
    out = {side: side_report(words[side], regions[side]) for side in SIDES}
    diff = {}
    for part in ("region", "spillover"):
        g, b = out["good"][part], out["bad"][part]
        diff[part] = None if g is None or b is None else {
            "surprisal_nats": b["surprisal_nats"] - g["surprisal_nats"],
            "surprisal_bits": b["surprisal_bits"] - g["surprisal_bits"]}
    return dict(out, difference=diff, spillover_words=SPILLOVER_WORDS)


def attach(report: dict, regions: dict | None) -> dict:
    """The report with its "region" (region_report of its words; None without a region)."""
    report["region"] = region_report(report.get("words"), regions)
    return report


def marked(text: str, span: tuple[int, int] | None) -> str:
    """The sentence with its region back in brackets (parse's inverse on its own output)."""
    if not span:
        return text
    a, b = span
    return f"{text[:a]}{OPEN}{text[a:b]}{CLOSE}{text[b:]}"


def marked_pair(report: dict) -> tuple[str, str]:
    """A report's two sentences with their regions' words in brackets (for a link that keeps them)."""
    reg = report.get("region")
    out = []
    for side in SIDES:
        r = reg[side]["region"] if reg else None
        out.append(marked(report[side], (r["start"], r["end"]) if r else None))
    return out[0], out[1]


def clicked(text, span) -> str:
    """The sentence's text after a click on the word at `span` (character offsets, on word boundaries, in the sentence
    without brackets, surrounding spaces stripped): a plain click marks that word as the region
    (replacing any region marked); a click on the word just before or after the region grows the region
    to it; a plain click on the sole word already marked removes
    the marking. A span that is not one of the sentence's words (stale, out of range), or text whose
    brackets do not parse, leaves the text as it is."""
    if not isinstance(text, str):
        return text
    try:
        m = parse(text)
        a, b = int(span[0]), int(span[1])
    except (UserError, TypeError, ValueError, IndexError):
        return text
    words = _word_spans(m.text)
    starts, ends = {w[0] for w in words}, {w[1] for w in words}
    if not (0 <= a < b <= len(m.text)) or a not in starts or b not in ends:
        return text  # not the sentence's words (a stale click): nothing changes
    if m.span is None:
        return marked(m.text, (a, b))
    i = next((k for k, w in enumerate(words) if w[0] == a), None)
    beside = i is not None and ((i + 1 < len(words) and words[i + 1][0] == m.span[0])
                                or (i > 0 and words[i - 1][1] == m.span[1]))
    if beside:  # the word just before or after the region: the region grows to it
        return marked(m.text, (min(a, m.span[0]), max(b, m.span[1])))
    if m.span == (a, b):
        return m.text
    return marked(m.text, (a, b))
