"""Scoring a suite with a causal LM: every condition's sentence through the engine's word view
(Engine.word_scores, the probe's words, one call for all conditions of all items), region
surprisals in bits (accapp/suites/regions.py), then the predictions (accapp/suites/evaluate.py).

A masked LM is refused: region surprisal is the surprisal of each token given the tokens
before it, which only a causal LM gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from accapp.errors import UserError
from accapp.suites.evaluate import SuiteEvaluation, evaluate_suite
from accapp.suites.regions import surprisals_from_words
from accapp.suites.suite import Item, Suite

COLUMNS = ["item", "condition", "region_number", "region_name", "content", "surprisal_bits"]
PROGRESS_ITEMS = 8  # with a progress callback, items go to the engine this many at a time


@dataclass
class ScoredSuite:
    suite: Suite
    regions: pd.DataFrame  # COLUMNS, one row per item x condition x region
    evaluation: SuiteEvaluation
    words: dict = field(default_factory=dict, repr=False)  # sentence -> the probe's word records
    model: str = ""
    word_rule: str = ""


def check_causal(engine) -> None:
    if getattr(engine, "kind", "causal") != "causal":
        model = getattr(engine, "model_id", "") or "this model"
        raise UserError(f"Region surprisal needs a causal language model, and {model} is a {engine.kind} LM, "
                        "which gives no left-to-right token surprisals.")


def _words(engine, items: list[Item]) -> dict:
    """{sentence: word records} for every condition of the items, in one engine call."""
    sentences = list(dict.fromkeys(c.sentence for it in items for c in it.conditions))
    try:
        return engine.word_scores(sentences)
    except UserError:
        for it in items:  # name the item and condition whose sentence the engine refuses
            for c in it.conditions:
                engine.check_sentence(c.sentence, f"sentence of item {it.item_number}, condition {c.name!r}")
        raise


def _rows(suite: Suite, items: list[Item], words: dict) -> list[tuple]:
    rows = []
    for it in items:
        for c in it.conditions:
            bits = surprisals_from_words(words[c.sentence], c.spans)
            for (number, content), value in zip(c.regions, bits):
                rows.append((it.item_number, c.name, number, suite.region_name(number), content.strip(), value))
    return rows


def _scored(engine, suite: Suite, items: list[Item], progress=None) -> ScoredSuite:
    check_causal(engine)
    words: dict = {}
    step = PROGRESS_ITEMS if progress is not None else max(len(items), 1)
    for k in range(0, len(items), step):
        words.update(_words(engine, items[k:k + step]))
        if progress is not None:
            progress(min(k + step, len(items)), len(items))
    table = pd.DataFrame(_rows(suite, items, words), columns=COLUMNS)
    return ScoredSuite(suite, table, evaluate_suite(suite, table), words,
                       getattr(engine, "model_id", ""), getattr(engine, "word_rule", ""))


def score_suite(engine, suite: Suite, progress=None) -> ScoredSuite:
    """Region surprisals of every item and the predictions' outcomes. progress(done, total) is
    called with items done, when given (the items then go to the engine a few at a time)."""
    return _scored(engine, suite, list(suite.items), progress)


def score_item(engine, item: Item, suite: Suite) -> ScoredSuite:
    """One item of the suite (e.g. typed or edited in the Design view), scored the same way."""
    return _scored(engine, suite, [item])
