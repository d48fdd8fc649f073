"""Hu & Levy 2023's own measures of their metalinguistic prompts, beside this project's pairwise use.

This project scores MetaQuestionSimple, MetaInstruct and MetaQuestionComplex (accapp.methods.prompting,
MetaPrompt) PAIRWISE: the judgment prompt compares log P(Yes) across the pair's two prompts, the
comparison prompt averages log p(option) over both orders. Hu & Levy 2023 (EMNLP) measure them
differently:

- Experiment 3a (sentence judgment, §4.3): each sentence is judged on its own. A sentence is
  answered "Yes" when the model gives "Yes" a higher probability than "No" (strictly; equal
  probabilities answer neither, and count as wrong). **Balanced accuracy** = the mean of the true
  positive rate (share of acceptable sentences answered Yes) and the true negative rate (share of
  unacceptable sentences answered No).
- Experiment 3b (sentence comparison, §4.4): one prompt shows both sentences as 1) and 2); the
  model is right when the option of the acceptable sentence gets the higher probability (again
  strictly). They run both orders (their code's ``--option_order goodFirst`` / ``badFirst``) and
  average the results over the two, so here: **order 1** = acceptable sentence as option 1,
  **order 2** = acceptable sentence as option 2, **both** = the mean of the two orders' accuracies.

Every accuracy here pools the pairs (items), as Hu & Levy do; the project's headline accuracy
(accapp.analysis.accuracy) is a mean over paradigms instead (equal for BLiMP's equal-sized samples).

The answers are parsed from the results' ``prediction`` column: ``good:Yes bad:No`` for a judgment
row, ``order1:1 order2:2`` for a comparison row (accapp.methods.base.Answers.text). Comparison rows
of runs scored before the per-order answers were kept have an empty prediction: their per-order
accuracies are missing (NaN, with a note), never zero.
"""

from __future__ import annotations

import math
import re

import pandas as pd

from accapp.errors import UserError
from accapp.store import Store

SOURCE_3A = "Hu & Levy 2023, Exp. 3a (§4.3)"
SOURCE_3B = "Hu & Levy 2023, Exp. 3b (§4.4)"
PROJECT = "this project (pairwise)"

# The metalinguistic prompt methods, in Hu & Levy's order, with their names (accapp.methods.prompting).
META_METHODS = {
    "meta_question_simple": "MetaQuestionSimple",
    "meta_instruct": "MetaInstruct",
    "meta_question_complex": "MetaQuestionComplex",
}

# The columns of measures(), each with its label, source and plain-language meaning (the app shows them).
COLUMNS = {
    "pairs": ("Pairs", PROJECT, "How many minimal pairs of the run these numbers are over."),
    "sentences": ("Sentences judged", SOURCE_3A,
                  "Sentences with a Yes/No answer: each pair gives one acceptable and one unacceptable sentence."),
    "yes_rate_good": ("Yes on acceptable (%)", SOURCE_3A,
                      "Share of acceptable sentences the model calls good (P(Yes) > P(No)): the true positive rate."),
    "no_rate_bad": ("No on unacceptable (%)", SOURCE_3A,
                    "Share of unacceptable sentences the model calls not good (P(No) > P(Yes)): the true negative rate."),
    "balanced_accuracy": ("Balanced accuracy (%)", SOURCE_3A,
                          "Mean of the two rates before: 50 % is chance, and so is a model that says Yes (or No) "
                          "to everything."),
    "judgment_pairwise": ("Judgment, pairwise (%)", PROJECT,
                          "The same prompt used as this project does: right when P(Yes) is higher for the "
                          "acceptable sentence's prompt than for the unacceptable one's."),
    "comparison_pairs": ("Pairs with per-order answers", SOURCE_3B,
                         "Pairs whose comparison answers were recorded for each order (older runs lack them)."),
    "order1": ("Order 1: acceptable first (%)", SOURCE_3B,
               "Both sentences in one prompt, the acceptable one as option 1: share of pairs where the model "
               "prefers answer 1."),
    "order2": ("Order 2: acceptable second (%)", SOURCE_3B,
               "The same with the acceptable sentence as option 2: share of pairs where it prefers answer 2."),
    "both_orders": ("Both orders (%)", SOURCE_3B,
                    "Mean of the two orders, Hu & Levy's reported accuracy. A large gap between the orders means "
                    "the model mostly prefers one answer position."),
    "comparison_pairwise": ("Comparison, pairwise (%)", PROJECT,
                            "This project's use: log p(option) of each sentence averaged over both orders; right when "
                            "the acceptable sentence's is higher."),
}

_GROUPS = {None: [], "phenomenon": ["phenomenon"], "paradigm": ["paradigm", "phenomenon"]}

_PATTERNS = {"good": r"good:(\w+)", "bad": r"bad:(\w+)", "order1": r"order1:(\w+)", "order2": r"order2:(\w+)"}


def parse_prediction(text) -> dict:
    """{good, bad, order1, order2} of a stored prediction: 'good:Yes bad:No' -> good 'Yes', bad 'No';
    'order1:1 order2:2' -> order1 '1', order2 '2'; what a text lacks is None."""
    text = "" if text is None or (isinstance(text, float) and math.isnan(text)) else str(text)
    out = {}
    for key, pattern in _PATTERNS.items():
        m = re.search(pattern, text)
        out[key] = m.group(1) if m else None
    return out


def _sql(keys: list[str]) -> str:
    group = "".join(f"{k}, " for k in keys)
    return f"""
WITH sel AS (
    SELECT {group}method, template, correct,
           NULLIF(regexp_extract(prediction, '{_PATTERNS["good"]}', 1), '') AS g,
           NULLIF(regexp_extract(prediction, '{_PATTERNS["bad"]}', 1), '') AS b,
           NULLIF(regexp_extract(prediction, '{_PATTERNS["order1"]}', 1), '') AS o1,
           NULLIF(regexp_extract(prediction, '{_PATTERNS["order2"]}', 1), '') AS o2
    FROM results
    WHERE model = $model AND benchmark = $benchmark AND list_contains($methods, method)
      AND template IN ('judgment', 'comparison')
),
j AS (
    SELECT {group}method, count(*) AS j_pairs,
           count(*) FILTER (WHERE g IS NOT NULL AND b IS NOT NULL) AS judged,
           avg(CASE WHEN g = 'Yes' THEN 1.0 ELSE 0.0 END) FILTER (WHERE g IS NOT NULL AND b IS NOT NULL) AS yes_good,
           avg(CASE WHEN b = 'No' THEN 1.0 ELSE 0.0 END) FILTER (WHERE g IS NOT NULL AND b IS NOT NULL) AS no_bad,
           avg(correct) AS j_pairwise
    FROM sel WHERE template = 'judgment' GROUP BY ALL
),
c AS (
    SELECT {group}method, count(*) AS c_pairs,
           count(*) FILTER (WHERE o1 IS NOT NULL AND o2 IS NOT NULL) AS ordered,
           avg(CASE WHEN o1 = '1' THEN 1.0 ELSE 0.0 END) FILTER (WHERE o1 IS NOT NULL AND o2 IS NOT NULL) AS order1,
           avg(CASE WHEN o2 = '2' THEN 1.0 ELSE 0.0 END) FILTER (WHERE o1 IS NOT NULL AND o2 IS NOT NULL) AS order2,
           avg(correct) AS c_pairwise
    FROM sel WHERE template = 'comparison' GROUP BY ALL
)
SELECT {group}method, greatest(coalesce(j_pairs, 0), coalesce(c_pairs, 0)) AS pairs,
       coalesce(judged, 0) * 2 AS sentences,
       100 * yes_good AS yes_rate_good, 100 * no_bad AS no_rate_bad,
       100 * (yes_good + no_bad) / 2 AS balanced_accuracy, 100 * j_pairwise AS judgment_pairwise,
       coalesce(ordered, 0) AS comparison_pairs, coalesce(c_pairs, 0) AS c_pairs,
       100 * order1 AS order1, 100 * order2 AS order2, 100 * (order1 + order2) / 2 AS both_orders,
       100 * c_pairwise AS comparison_pairwise
FROM j FULL OUTER JOIN c USING ({group}method)
"""


def _note(row) -> str:
    notes = []
    if row["c_pairs"] and not row["comparison_pairs"]:
        notes.append("per-order comparison answers were not recorded in this run (scored before they were "
                     "kept): order 1, order 2 and both are missing, not zero; rescore the comparison prompts to "
                     "get them")
    elif row["comparison_pairs"] < row["c_pairs"]:
        notes.append(f"per-order comparison answers for {row['comparison_pairs']:,} of {row['c_pairs']:,} pairs "
                     "only (older rows lack them)")
    if not row["sentences"] and row["pairs"]:
        notes.append("no Yes/No answers recorded for the judgment prompt")
    if not row["c_pairs"]:
        notes.append("no comparison rows in this run")
    return "; ".join(notes)


def measures(store: Store, model: str, benchmark: str, by: str | None = None) -> pd.DataFrame:
    """Hu & Levy's measures of each metalinguistic prompt in a run, beside the pairwise accuracy.

    One row per method (and per phenomenon or paradigm with ``by="phenomenon"`` / ``"paradigm"``),
    methods in Hu & Levy's order. Columns: model, benchmark, [paradigm,] [phenomenon,] method, name,
    then those of :data:`COLUMNS` (percentages, pooled over pairs), then ``note`` (why a number is
    missing; '' when none is). Methods the run lacks are left out; a run with none gives an empty frame.
    """
    if by not in _GROUPS:
        raise UserError(f"by must be one of: none, phenomenon, paradigm (got {by!r}).")
    keys = _GROUPS[by]
    cols = ["model", "benchmark", *keys, "method", "name", *COLUMNS, "note"]
    present = [m for m in META_METHODS if m in store.methods(model, benchmark)]
    if not present:
        return pd.DataFrame(columns=cols)
    df = store.query(_sql(keys), {"model": model, "benchmark": benchmark, "methods": present})
    df["note"] = [_note(r) for r in df.to_dict("records")]
    df["model"], df["benchmark"] = model, benchmark
    df["name"] = df.method.map(META_METHODS)
    df["order"] = df.method.map(list(META_METHODS).index)
    df = df.sort_values(keys + ["order"], kind="stable").reset_index(drop=True)
    for c in ("pairs", "sentences", "comparison_pairs"):
        df[c] = df[c].astype("int64")
    return df[cols]


# ------------------------------------------------------------------------------------------ one pair (the probe)
def pair_answers(records: list[dict]) -> list[dict]:
    """Per metalinguistic prompt, what the model answered for one pair, from the probe's verdict
    records (dicts with method, template, prediction, score_good, score_bad: service.probe).

    Each: {method, name, judgment: {good, bad, p_yes_good, p_yes_bad, right_good, right_bad} or None,
    comparison: {order1, order2, right_order1, right_order2} or None}. p_yes_* is the model's
    P(Yes) after each sentence's judgment prompt (the judgment row's score is log P(Yes)); right_*
    follow Hu & Levy (Yes for the acceptable sentence, No for the unacceptable one; answer 1 in
    order 1, 2 in order 2). A comparison row without per-order answers gives order1/order2 None.
    """
    out: dict[str, dict] = {}
    for r in records:
        m = r.get("method")
        if m not in META_METHODS or r.get("template") not in ("judgment", "comparison"):
            continue
        entry = out.setdefault(m, {"method": m, "name": META_METHODS[m], "judgment": None, "comparison": None})
        ans = parse_prediction(r.get("prediction"))
        if r["template"] == "judgment":
            entry["judgment"] = {
                "good": ans["good"], "bad": ans["bad"],
                "p_yes_good": math.exp(float(r["score_good"])), "p_yes_bad": math.exp(float(r["score_bad"])),
                "right_good": ans["good"] == "Yes" if ans["good"] else None,
                "right_bad": ans["bad"] == "No" if ans["bad"] else None,
            }
        else:
            entry["comparison"] = {
                "order1": ans["order1"], "order2": ans["order2"],
                "right_order1": ans["order1"] == "1" if ans["order1"] else None,
                "right_order2": ans["order2"] == "2" if ans["order2"] else None,
            }
    return [out[m] for m in META_METHODS if m in out]
