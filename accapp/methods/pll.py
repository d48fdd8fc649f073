"""Pseudo-log-likelihood (PLL) of masked LMs as ordinary methods (Kauf & Ivanova 2023, §3.1,
App. G): score(s) = PLL(s) under one variant; the variants' mask sets are defined in
accapp.scoring.pll_variants. The word rule (which tokens PLL-word-l2r / PLL-whole-word mask
together) comes from the run's convention: ``ctx.convention.pll_words``, "project" (accapp.words)
or "tokenizer" (the tokenizer's own words, as Kauf & Ivanova's code); "project" when the
context carries no convention (docs/pll_words.md)."""

from __future__ import annotations

from accapp.methods.base import Method, judged
from accapp.scoring.api import PLLRequest
from accapp.scoring.pll_variants import VARIANTS

METHOD_PREFIX = "pll_"
PLL_METHOD_IDS = tuple(METHOD_PREFIX + v for v in VARIANTS)  # pll_original, pll_word_l2r, ...


def word_rule(ctx) -> str:
    """The PLL word rule of a method context: its convention's ``pll_words`` (a Convention, or
    a convention id), else "project"."""
    conv = getattr(ctx, "convention", None)
    if conv is None:
        return "project"
    if isinstance(conv, str):
        from accapp.scoring.convention import get

        conv = get(conv)
    return getattr(conv, "pll_words", None) or "project"


class PLLMethod(Method):
    """PLL under one variant of accapp.scoring.pll_variants."""

    def __init__(self, variant: str) -> None:
        self.variant = variant
        self.id = METHOD_PREFIX + variant

    def requests(self, pair, ctx):
        words = word_rule(ctx)
        return [PLLRequest(pair.good, self.variant, words, pair.context),
                PLLRequest(pair.bad, self.variant, words, pair.context)]

    def score(self, pair, ctx, res):
        g, b = (res(r).scores[self.variant] for r in self.requests(pair, ctx))
        return [judged(self.id, "-", g, b)]

    per_string = True

    def string_requests(self, text, ctx, context=""):
        return [PLLRequest(text, self.variant, word_rule(ctx), context)]

    def score_string(self, text, ctx, res, context=""):
        return res(self.string_requests(text, ctx, context)[0]).scores[self.variant]


PLL_METHODS = tuple(PLLMethod(v) for v in VARIANTS)
