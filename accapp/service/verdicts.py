"""One defensible answer to "which sentence does the model prefer?": plain functions over a
probe's judgments (accapp.methods.base.MethodScore) and its words.

- The headline is LP's verdict in words (PLL-word-l2r for a masked LM), with its margin, then
  where the two sentences differ and what those words contribute, and apart from them the
  spill-over in the words after them (as the difference strip shows).
- Each method casts one vote (`method_vote`): its templates and answer orders are combined by
  its own rule (its descriptor's, methods/data/methods.json, shown on the page): a template with two answer orders
  votes only when both orders pick the same sentence; then the majority of its templates; a
  split is no vote. Ensembles are votes of other judgments and cast none.
- Votes are counted by family; a method unreliable for the model (service.reliability) is
  shown with its reason and does not vote.
- Warnings for pairs whose verdict means little: identical sentences, a large token-length
  difference, a language the model was not made for.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

from accapp.languages import name as language_name
from accapp.methods import descriptors, headline_methods
from accapp.methods.base import MethodScore
from accapp.schema import IDENTICAL_WARNING, pair_flag

LN2 = math.log(2.0)
LENGTH_WARNING_TOKENS = 3  # |tokens(good) - tokens(bad)| at or above this gets a warning (LP favours shorter strings)
VERDICT_WORDS = {"good": "the acceptable sentence", "bad": "the unacceptable sentence"}


def to_unit(nats: float, unit: str) -> float:
    """A log-probability difference (nats) in bits or nats."""
    return nats / LN2 if unit == "bits" else nats


def _sign(verdict: str) -> int:
    return 1 if verdict == "good" else -1 if verdict == "bad" else 0


def method_vote(scores: list[MethodScore]) -> str:
    """One method's vote from its judgments: 'good', 'bad' or 'none' (no vote).

    Per template, its answer orders (variants) must agree, and a tie is no vote; then the
    majority of the templates that voted, a split is no vote."""
    by_template: dict[str, list[str]] = defaultdict(list)
    for s in scores:
        by_template[s.template].append(s.verdict)
    total = 0
    for verdicts in by_template.values():
        first = verdicts[0]
        if first != "tie" and all(v == first for v in verdicts):
            total += _sign(first)
    return "good" if total > 0 else "bad" if total < 0 else "none"


def method_votes(scores: list[MethodScore], reliability: dict | None = None) -> list[dict]:
    """Per method (in the order they came, ensembles left out): its vote, rule, judgments counted,
    the mean of good − bad over its judgments, and whether it votes (reliable for the model)."""
    reliability = reliability or {}
    table = descriptors()
    grouped: dict[str, list[MethodScore]] = defaultdict(list)
    for s in scores:
        grouped[s.method].append(s)
    out = []
    for method, mine in grouped.items():
        m = table.get(method)
        if m is None or m.family == "ensemble":
            continue
        counts = Counter(s.verdict for s in mine)
        rel = reliability.get(method)
        diff = [s.score_good - s.score_bad for s in mine]
        out.append({
            "method": method, "name": m.name, "family": m.family, "vote": method_vote(mine),
            "rule": m.rule, "unit": m.unit, "plain": m.plain, "source": m.source,
            "judgments": len(mine), "good": counts.get("good", 0), "bad": counts.get("bad", 0), "tie": counts.get("tie", 0),
            "mean_difference": sum(diff) / len(diff),
            "reliable": rel.reliable if rel is not None else None,
            "unreliable_reason": rel.reason if rel is not None and not rel.reliable else "",
            "benchmark_accuracy": rel.accuracy if rel is not None else None,
            "benchmark": rel.benchmark if rel is not None else None,
        })
    return out


def family_agreement(votes: list[dict]) -> list[dict]:
    """Per family, in order: how many of its voting methods prefer each sentence."""
    fams: dict[str, dict] = {}
    for v in votes:
        f = fams.setdefault(v["family"], {"family": v["family"], "good": 0, "bad": 0, "none": 0, "not_voting": 0, "methods": 0})
        f["methods"] += 1
        if v["reliable"] is False:
            f["not_voting"] += 1
        else:
            f[v["vote"]] += 1
    return list(fams.values())


def overall(families: list[dict]) -> dict:
    """All voting methods together: {good, bad, none, not_voting, verdict}."""
    tot = {k: sum(f[k] for f in families) for k in ("good", "bad", "none", "not_voting")}
    tot["verdict"] = "good" if tot["good"] > tot["bad"] else "bad" if tot["bad"] > tot["good"] else "tie"
    return tot


# ------------------------------------------------------------------------------------------ words
def align_words(good: list[dict], bad: list[dict]) -> list[tuple[int | None, int | None, bool]]:
    """Aligned word positions (index in good, index in bad, differs) by difflib over the word
    strings: equal runs share positions, a replaced run pairs word by word, the rest stand alone."""
    import difflib

    a, b = [w["word"] for w in good], [w["word"] for w in bad]
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out += [(i1 + k, j1 + k, False) for k in range(i2 - i1)]
        else:
            for k in range(max(i2 - i1, j2 - j1)):
                out.append((i1 + k if i1 + k < i2 else None, j1 + k if j1 + k < j2 else None, True))
    return out


def difference_strip(good: list[dict], bad: list[dict]) -> dict:
    """Per aligned word, surprisal of bad minus good (nats; a word one side lacks counts 0 there),
    the region where the pair differs (first to last differing position) and the sums over the
    region and over the words after it (spill-over)."""
    cols = []
    for gi, bi, differs in align_words(good, bad):
        sg = -good[gi]["logprob"] if gi is not None else 0.0
        sb = -bad[bi]["logprob"] if bi is not None else 0.0
        cols.append({"good": good[gi]["word"] if gi is not None else "", "bad": bad[bi]["word"] if bi is not None else "",
                     "differs": differs, "delta": sb - sg})
    diff_at = [k for k, c in enumerate(cols) if c["differs"]]
    if not diff_at:
        return {"columns": cols, "region": None, "region_delta": 0.0, "after_delta": 0.0}
    lo, hi = diff_at[0], diff_at[-1]
    return {"columns": cols, "region": [lo, hi], "region_delta": sum((c["delta"] for c in cols[lo:hi + 1]), 0.0),
            "after_delta": sum((c["delta"] for c in cols[hi + 1:]), 0.0)}


# ------------------------------------------------------------------------------------------ headline
def _side_word(c: dict) -> str:
    """An aligned position's words as the pair shows them: "disgust / disgusts", or the one
    word where the other sentence has none there."""
    if c["good"] and c["bad"] and c["good"] != c["bad"]:
        return f"{c['good']} / {c['bad']}"
    return c["bad"] or c["good"]


def where_they_differ(words: dict | None) -> dict | None:
    """Where the two sentences differ and what it contributes: {where (the
    differing words as the headline names them), where_words (each differing position's
    "good / bad" label), region_delta (nats: surprisal of bad minus good summed over the region
    from the first to the last differing word), after_delta (the same over the words after it:
    the spill-over)}. None without words, or when the sentences do not differ."""
    if not (words and words.get("good") and words.get("bad")):
        return None
    strip = difference_strip(words["good"], words["bad"])
    if strip["region"] is None:
        return None
    lo, hi = strip["region"]
    named = [_side_word(c) for c in strip["columns"][lo:hi + 1] if c["differs"]]
    where = named[0] if len(named) == 1 else f"{named[0]} … {named[-1]}"
    return {"where": where, "where_words": named, "region_delta": strip["region_delta"],
            "after_delta": strip["after_delta"], "has_after": hi + 1 < len(strip["columns"])}


def headline(kind: str, scores: list[MethodScore], words: dict | None, unit: str = "bits") -> dict | None:
    """{method, name, verdict, margin (nats, good − bad), text, where, where_words, region_delta,
    after_delta}: the headline method's verdict in words, then where the sentences differ with
    what those words contribute, and the spill-over after them apart (where_they_differ). None
    when the headline method did not run."""
    method = headline_methods().get(kind, headline_methods()["causal"])
    mine = [s for s in scores if s.method == method]
    if not mine:
        return None
    s = mine[0]
    name = descriptors()[method].name
    margin = float(s.score_good - s.score_bad)
    head = {"method": method, "name": name, "verdict": s.verdict, "margin": margin, "where": None}
    head.update(where_they_differ(words) or {})
    return dict(head, margin_unit=unit, margin_in_unit=to_unit(margin, unit), text=headline_text(head, unit))


def _more_or_less(nats: float, unit: str) -> str:
    """"0.59 bits more surprising" for a positive difference (bad − good), "less" for a negative one."""
    return f"{abs(to_unit(nats, unit)):.2f} {unit} {'more' if nats >= 0 else 'less'} surprising"


def headline_text(head: dict, unit: str = "bits") -> str:
    """The headline in words, its numbers in `unit`: the verdict and its margin; then where the
    sentences differ and how much more (or less) surprising the unacceptable sentence is there;
    then, apart, the words after it (the spill-over)."""
    if head["verdict"] == "tie":
        return f"{head['name']} cannot tell the two sentences apart: they are equally probable."
    text = f"{head['name']} prefers {VERDICT_WORDS[head['verdict']]} by {abs(to_unit(head['margin'], unit)):.1f} {unit}."
    if not head.get("where"):
        return text
    text += (f" Where the sentences differ, at “{head['where']}”, the unacceptable sentence is "
             f"{_more_or_less(head['region_delta'], unit)}")
    if head.get("has_after", True):
        text += f"; in the words after it (spill-over), {_more_or_less(head['after_delta'], unit)}"
    return text + "."


def warnings(good: str, bad: str, len_good: int, len_bad: int, languages, language: str) -> list[str]:
    """Plain warnings about a pair whose verdict means little."""
    out = []
    if pair_flag(good, bad):
        out.append(IDENTICAL_WARNING)
    gap = abs(len_good - len_bad)
    if gap >= LENGTH_WARNING_TOKENS:
        longer = "acceptable" if len_good > len_bad else "unacceptable"
        out.append(f"The {longer} sentence is {gap} tokens longer ({len_good} vs {len_bad}): LP and the other sums "
                   "favour shorter strings, so compare with MeanLP, PenLP or SLOR.")
    lang = language_name(language)
    if languages and language not in languages:
        out.append(f"This pair looks {lang}, a language this model was not made for ({', '.join(languages)}): "
                   "expect poor judgments.")
    elif not languages:  # a model the registry does not list: its languages are unknown, so nothing is vouched for
        out.append(f"This pair looks {lang}; the languages this model was made for are unknown (it is not in the "
                   "registry): judgments may be poor if it was not trained on them.")
    return out
