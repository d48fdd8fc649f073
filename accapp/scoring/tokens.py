"""Token helpers shared by the scorers and the prompt methods."""

from __future__ import annotations

from collections.abc import Sequence

from accapp.models.inspect import vocabulary_id  # noqa: F401 - one definition: found at inspection, read at scoring


def common_prefix_len(a: Sequence, b: Sequence) -> int:
    """How many leading items two sequences share."""
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k


def answer_tokens(tokenizer, prompt: str, answer: str) -> tuple[list[int], list[int]]:
    """(context ids, answer ids) as the tokenizer writes the answer right after the prompt:
    the answer's tokens are those of prompt + answer past the prompt's own tokens."""
    ctx = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    full = tokenizer(prompt + answer, add_special_tokens=False)["input_ids"]
    k = common_prefix_len(ctx, full)
    return list(full[:k]), list(full[k:])
