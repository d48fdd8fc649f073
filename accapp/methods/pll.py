"""Pseudo-log-likelihood (PLL) variants for masked LMs (Kauf & Ivanova 2023, §3.1, App. G).

A sentence's scored tokens are t = 0..n-1 (special tokens such as [CLS]/[SEP]/<s>/</s>
are not among them: never masked, never scored). Each scored token t belongs to one word
w(t) (see accapp.words). Every variant predicts token t from a copy of the sentence in
which a set of tokens M(t), always containing t, is replaced by the mask token:

    original       M(t) = {t}                                  (Salazar et al. 2020)
    word_l2r       M(t) = {u >= t : w(u) = w(t)}               (Kauf & Ivanova, eq. 2)
    whole_word     M(t) = {u : w(u) = w(t)}                    (eq. 3)
    sentence_l2r   M(t) = {u >= t}                             (App. G, eq. 4)

PLL(S) = sum over t of log P_MLM(s_t | S with M(t) masked).

The mask sets are pure functions of the word index of each token, kept here so the app,
the scorer and the docs use one definition. Copies with the same mask set are one forward
pass (e.g. every token of a word shares its whole-word copy; a word's last token has the
same word-l2r and original copy), which the scorer exploits.
"""

from __future__ import annotations

from collections.abc import Sequence

from accapp.errors import UserError
from accapp.methods.base import Method

VARIANTS = ("original", "word_l2r", "whole_word", "sentence_l2r")
METHOD_PREFIX = "pll_"
PLL_METHOD_IDS = tuple(METHOD_PREFIX + v for v in VARIANTS)  # pll_original, pll_word_l2r, ...


def mask_sets(word_of: Sequence[int], variant: str) -> list[tuple[int, ...]]:
    """M(t) for every scored token t (indices into the scored tokens, ascending)."""
    n = len(word_of)
    if variant == "original":
        return [(t,) for t in range(n)]
    if variant == "word_l2r":
        return [tuple(u for u in range(t, n) if word_of[u] == word_of[t]) for t in range(n)]
    if variant == "whole_word":
        return [tuple(u for u in range(n) if word_of[u] == word_of[t]) for t in range(n)]
    if variant == "sentence_l2r":
        return [tuple(range(t, n)) for t in range(n)]
    raise ValueError(f"unknown PLL variant {variant!r}; known: {', '.join(VARIANTS)}")


class PLLMethod(Method):
    """Descriptor of one PLL variant for method lists; the masked engine does the scoring."""

    family = "pll"
    source = "Kauf & Ivanova 2023, §3.1 / App. G"

    def __init__(self, variant: str, name: str, formula: str) -> None:
        self.variant = variant
        self.id = METHOD_PREFIX + variant
        self.name = name
        self.formula = formula

    def requests(self, pair, ctx):  # noqa: D401 - not a causal method
        raise UserError(f"Method '{self.id}' needs a masked LM; it is scored by the masked engine.")

    def score(self, pair, ctx, res):
        return self.requests(pair, ctx)


PLL_METHODS = (
    PLLMethod("original", "PLL-original", "sum_t log P(s_t | S without s_t)"),
    PLLMethod("word_l2r", "PLL-word-l2r", "sum_t log P(s_t | S without s_t and its word's tokens to its right)"),
    PLLMethod("whole_word", "PLL-whole-word", "sum_t log P(s_t | S without every token of s_t's word)"),
    PLLMethod("sentence_l2r", "PLL-sentence-l2r", "sum_t log P(s_t | S without s_t and every token to its right)"),
)


def resolve_pll(ids) -> list[str]:
    """Method ids ('all' or None = all four, a comma-separated string or a list) -> variants.

    Unknown ids raise UserError (causal-only methods included: they need a causal LM).
    """
    if ids is None or ids == "all" or (isinstance(ids, (list, tuple)) and list(ids) == ["all"]):
        return list(VARIANTS)
    if isinstance(ids, str):
        ids = [i.strip() for i in ids.split(",") if i.strip()]
    ids = list(ids)
    if not ids:
        raise UserError("No method selected.")
    unknown = [i for i in ids if i not in PLL_METHOD_IDS]
    if unknown:
        raise UserError(
            f"Unknown method(s) for a masked LM: {', '.join(unknown)}. "
            f"Known methods: {', '.join(PLL_METHOD_IDS)}."
        )
    out: list[str] = []
    for i in ids:
        v = i[len(METHOD_PREFIX):]
        if v not in out:
            out.append(v)
    return out
