"""One defensible answer to "which sentence does the model prefer?": plain functions over a
probe's judgments (accapp.methods.base.MethodScore) and its words.

- The headline is LP's verdict in words (PLL-word-l2r for a masked LM), with its margin, then
  where the two sentences differ (or the region the user marked) and what those words
  contribute, and apart from them the spill-over: the next word after them, one definition
  for the headline, the difference strip and the region table (service/region.py,
  SPILLOVER_WORDS).
- When the methods split, one sentence says why from the numbers (the token counts and which
  kind of method voted which way) and which reading the papers recommend for such a pair
  (``split_explained``).
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
from accapp.methods import descriptors, headline_methods, presets
from accapp.methods.base import MethodScore
from accapp.schema import IDENTICAL_WARNING, pair_flag
from accapp.service.region import SPILLOVER_WORDS, spillover_phrase

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


# ------------------------------------------------------------------------------------------ a split, explained
# How a method's score treats a sentence's length in tokens, and whether it subtracts what the tokens'
# frequencies alone predict: each method's descriptor says (accapp/methods/data/methods.json).
LENGTH_RULE = {m: d.length_rule for m, d in descriptors().items() if d.length_rule != "none"}
FREQUENCY_METHODS = {m for m, d in descriptors().items() if d.frequency}
INFLATED_METHODS = {m for m, d in descriptors().items() if d.inflates_split_words}  # Kauf & Ivanova 2023
ADVICE_EQUAL = ("For a minimal pair whose sentences have as many tokens, the papers read LP: within a minimal "
                "pair its difference is what tracks grammaticality and human judgments, and dividing by the "
                "same length changes no verdict (Hu et al. 2025, §2.3 and Predictions 1–2).")
ADVICE_LENGTH = ("When the token counts differ, no probability reading is free of length: LP favours the shorter "
                 "sentence, MeanLP and PenLP lean to the longer one, and Yes/No prob comp is the reading least "
                 "affected by length (Ide et al. 2025, §6 and Table 4){yes_no}.")
ADVICE_MASKED = (" For a masked LM, Kauf & Ivanova (2023, §3.1) recommend PLL-word-l2r: PLL-original is inflated "
                 "for words split into several tokens.")


def _names(votes: list[dict]) -> str:
    """'LP', 'LP and MeanLP', 'LP, MeanLP and PenLP'."""
    names = [v["name"] for v in votes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _verb(votes: list[dict], one: str, many: str) -> str:
    return one if len(votes) == 1 else many


def _tokens(n: int) -> str:
    return f"{n} token{'' if n == 1 else 's'}"


def _other_reasons(votes: list[dict]) -> str:
    """Why methods that length does not explain may vote otherwise, one clause per kind present."""
    out = []
    freq = [v for v in votes if v["method"] in FREQUENCY_METHODS]
    asks = [v for v in votes if v["method"] not in LENGTH_RULE and v["family"] != "ensemble"]
    pll = [v for v in votes if v["method"] in INFLATED_METHODS]
    if freq:
        out.append(f"{_names(freq)} {_verb(freq, 'subtracts', 'subtract')} what the tokens' frequencies alone predict")
    if pll:
        out.append(f"{_names(pll)} is inflated for words split into several tokens (Kauf & Ivanova 2023)")
    if asks:
        out.append(f"{_names(asks)} {_verb(asks, 'asks', 'ask')} the model in words, a readout that can differ "
                   "from its probabilities (Hu & Levy 2023)")
    return "; ".join(out)


def split_explained(votes: list[dict], len_good: int, len_bad: int) -> dict | None:
    """When the voting methods (method_votes; unreliable ones and no votes left out) split: {for_good,
    for_bad (method names), reason (why, in one sentence from the token counts and which kind of method
    voted which way), advice (which reading the papers recommend for such a pair, source named), text}.
    None when they agree."""
    voting = [v for v in votes if v.get("reliable") is not False and v["vote"] in ("good", "bad")]
    side = {k: [v for v in voting if v["vote"] == k] for k in ("good", "bad")}
    if not side["good"] or not side["bad"]:
        return None
    words = {"good": "acceptable", "bad": "unacceptable"}
    gap = len_bad - len_good
    reason = ""
    if gap:
        longer, shorter = ("bad", "good") if gap > 0 else ("good", "bad")
        divide = [v for v in side[longer] if LENGTH_RULE.get(v["method"]) in ("average", "penalty")]
        credit = [v for v in side[longer] if LENGTH_RULE.get(v["method"]) == "credit"]
        lifted = divide + credit
        sums = [v for v in side[shorter] if LENGTH_RULE.get(v["method"]) == "sum"]
        if lifted:
            reason = (f"The {words[longer]} sentence has {_tokens(abs(gap))} more ({len_bad if gap > 0 else len_good} vs "
                      f"{len_good if gap > 0 else len_bad} tokens)")
            if sums:
                reason += (f": {_names(sums)} {'adds' if len(sums) == 1 else 'add'} up every token's log-probability, "
                           f"so each token costs, and {'prefers' if len(sums) == 1 else 'prefer'} the {words[shorter]} "
                           "one")
            how = []
            if divide:
                how.append(f"{_names(divide)} {_verb(divide, 'divides', 'divide')} by the length in tokens")
            if credit:
                how.append(f"{_names(credit)} {_verb(credit, 'adds', 'add')} a credit per token")
            reason += (f"; {' and '.join(how)}, which lifts the longer sentence, so "
                       f"{'it prefers' if len(lifted) == 1 else 'they prefer'} the {words[longer]} one")
            others = _other_reasons([v for v in side[longer] if v not in lifted])  # the longer side's other votes
            reason += (f"; {others}" if others else "") + "."
    if not reason:
        minority = min(("good", "bad"), key=lambda k: (len(side[k]), k == "good"))
        majority = "bad" if minority == "good" else "good"
        same = (f"Both sentences have {_tokens(len_good)}, so LP, MeanLP and PenLP cannot disagree over length. "
                if not gap else "")
        others = _other_reasons(side[minority])
        reason = (f"{same}{_names(side[majority])} prefer the {words[majority]} sentence, {_names(side[minority])} the "
                  f"{words[minority]} one" + (f": {others}" if others else "") + ".")
    if gap:
        yes_no = [v for v in voting if v["method"] in presets()["length_robust"]]
        advice = ADVICE_LENGTH.format(yes_no=f"; here it prefers the {words[yes_no[0]['vote']]} sentence" if yes_no else "")
    else:
        advice = ADVICE_EQUAL
    if any(v["family"] == "pll" for v in votes):
        advice += ADVICE_MASKED
    return {"for_good": [v["name"] for v in side["good"]], "for_bad": [v["name"] for v in side["bad"]],
            "reason": reason, "advice": advice, "text": f"The methods disagree. {reason} {advice}"}


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
    region and over its spill-over (the next SPILLOVER_WORDS aligned word(s) after it: ``after``,
    their positions)."""
    cols = []
    for gi, bi, differs in align_words(good, bad):
        sg = -good[gi]["logprob"] if gi is not None else 0.0
        sb = -bad[bi]["logprob"] if bi is not None else 0.0
        cols.append({"good": good[gi]["word"] if gi is not None else "", "bad": bad[bi]["word"] if bi is not None else "",
                     "differs": differs, "delta": sb - sg})
    diff_at = [k for k, c in enumerate(cols) if c["differs"]]
    if not diff_at:
        return {"columns": cols, "region": None, "region_delta": 0.0, "after_delta": 0.0, "after": []}
    lo, hi = diff_at[0], diff_at[-1]
    after = list(range(hi + 1, min(hi + 1 + SPILLOVER_WORDS, len(cols))))
    return {"columns": cols, "region": [lo, hi], "region_delta": sum((c["delta"] for c in cols[lo:hi + 1]), 0.0),
            "after_delta": sum((cols[k]["delta"] for k in after), 0.0), "after": after}


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
    from the first to the last differing word), after_delta (the same over its spill-over, the
    next SPILLOVER_WORDS word(s)), after_words (those words)}. None without words, or when the
    sentences do not differ."""
    if not (words and words.get("good") and words.get("bad")):
        return None
    strip = difference_strip(words["good"], words["bad"])
    if strip["region"] is None:
        return None
    lo, hi = strip["region"]
    named = [_side_word(c) for c in strip["columns"][lo:hi + 1] if c["differs"]]
    where = named[0] if len(named) == 1 else f"{named[0]} … {named[-1]}"
    return {"where": where, "where_words": named, "region_delta": strip["region_delta"],
            "after_delta": strip["after_delta"], "has_after": bool(strip["after"]),
            "after_words": [_side_word(strip["columns"][k]) for k in strip["after"]]}


def with_region(head: dict | None, region: dict | None, unit: str = "bits") -> dict | None:
    """The headline over the region the user marked (service/region.region_report), when there is
    one: its words, its bad − good surprisal and its spill-over's; else the headline as it is."""
    if not head or not region or not (region.get("difference") or {}).get("region"):
        return head
    g, b = region["good"], region["bad"]
    gw, bw = " ".join(g["region"]["words"]), " ".join(b["region"]["words"])
    spill = region["difference"].get("spillover")
    after = [] if spill is None else [" ".join(b["spillover"]["words"])]
    out = dict(head, where=gw if gw == bw else f"{gw} / {bw}", where_words=[gw if gw == bw else f"{gw} / {bw}"],
               region_delta=region["difference"]["region"]["surprisal_nats"], marked=True,
               after_delta=0.0 if spill is None else spill["surprisal_nats"], has_after=spill is not None,
               after_words=after)
    return dict(out, text=headline_text(out, unit))


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
    sentences differ (or the region the user marked) and how much more (or less) surprising the
    unacceptable sentence is there; then, apart, its spill-over (the next word)."""
    if head["verdict"] == "tie":
        return f"{head['name']} cannot tell the two sentences apart: they are equally probable."
    text = f"{head['name']} prefers {VERDICT_WORDS[head['verdict']]} by {abs(to_unit(head['margin'], unit)):.1f} {unit}."
    if not head.get("where"):
        return text
    lead = "In the region you marked" if head.get("marked") else "Where the sentences differ"
    text += (f" {lead}, at “{head['where']}”, the unacceptable sentence is "
             f"{_more_or_less(head['region_delta'], unit)}")
    if head.get("has_after", True):
        text += f"; in the {spillover_phrase(head.get('after_words'))}, {_more_or_less(head['after_delta'], unit)}"
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
