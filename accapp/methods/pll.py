"""Pseudo-log-likelihood (PLL) of masked LMs as ordinary methods (Kauf & Ivanova 2023, §3.1,
App. G): score(s) = PLL(s) under one variant; the variants' mask sets are defined in
accapp.scoring.pll_variants."""

from __future__ import annotations

from accapp.methods.base import Method, judged
from accapp.scoring.api import PLLRequest
from accapp.scoring.pll_variants import VARIANTS

METHOD_PREFIX = "pll_"
PLL_METHOD_IDS = tuple(METHOD_PREFIX + v for v in VARIANTS)  # pll_original, pll_word_l2r, ...


class PLLMethod(Method):
    family = "pll"
    kind = "masked"
    source = "Kauf & Ivanova 2023, §3.1 / App. G"

    def __init__(self, variant: str, name: str, formula: str) -> None:
        self.variant = variant
        self.id = METHOD_PREFIX + variant
        self.name = name
        self.formula = formula

    def requests(self, pair, ctx):
        return [PLLRequest(pair.good, self.variant), PLLRequest(pair.bad, self.variant)]

    def score(self, pair, ctx, res):
        g, b = (res(r).scores[self.variant] for r in self.requests(pair, ctx))
        return [judged(self.id, "-", g, b)]


PLL_METHODS = (
    PLLMethod("original", "PLL-original", "sum_t log P(s_t | S without s_t)"),
    PLLMethod("word_l2r", "PLL-word-l2r", "sum_t log P(s_t | S without s_t and its word's tokens to its right)"),
    PLLMethod("whole_word", "PLL-whole-word", "sum_t log P(s_t | S without every token of s_t's word)"),
    PLLMethod("sentence_l2r", "PLL-sentence-l2r", "sum_t log P(s_t | S without s_t and every token to its right)"),
)
