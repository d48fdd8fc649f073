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

Copies with the same mask set are one forward pass (every token of a word shares its
whole-word copy; a word's last token has the same word-l2r and original copy).
"""

from __future__ import annotations

from collections.abc import Sequence

VARIANTS = ("original", "word_l2r", "whole_word", "sentence_l2r")


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
