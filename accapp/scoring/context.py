"""A context before the sentences (a discourse, a question): how it meets the sentence.

Both sentences of a pair are scored after the same context, which is conditioned on and never
scored. The model sees: start token (as the convention puts one), the context's tokens, then the
sentence's, the sentence tokenized together with the seam before it (a space, so " disgust" is
the token it is in running text). Each part is tokenized on its own, as a template's parts are
(accapp/scoring/causal.py), so the sentence's tokens never depend on how the context ends;
where a tokenizer would join the two across the seam, "A B" tokenized whole differs from
tokens(A) + tokens(seam + B), and the probe scores the latter (tests/test_context.py checks LP(B | A)
= LP(A B) - LP(A) on pairs where they agree).

The seam: nothing where the context ends in whitespace (a newline, a space: the writer chose
it) or where either side of it is a CJK character (Chinese has no spaces between sentences);
else one space.

Which methods use the context (accapp/methods/data/methods.json, each family's `context`): the
sentence-probability family (LP, MeanLP, PenLP, SLOR, Bayes factors) conditions on it; a masked
LM's PLL reads it as left context, never masked nor scored; in-template and prompting methods
read their published templates without it, and the page says so.
"""

from __future__ import annotations

import re

from accapp.errors import MAX_CONTEXT_CHARS, check_context  # noqa: F401 - the check lives with validate_sentence

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")


def seam(context: str, sentence: str) -> str:
    """What goes between the context and the sentence: "" or " " (see the module doc)."""
    if not context or context[-1].isspace() or (sentence and sentence[0].isspace()):
        return ""
    if _CJK.match(context[-1]) or (sentence and _CJK.match(sentence[0])):
        return ""
    return " "


def shifted(offsets, by: int) -> list[tuple[int, int]]:
    """Character offsets moved left by `by` (the seam's length), never below 0."""
    return [(max(a - by, 0), max(b - by, 0)) for a, b in offsets]
