"""Token helpers shared by the scorers and the prompt methods."""

from __future__ import annotations

from collections.abc import Sequence


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


def vocabulary_id(tokenizer, answer: str) -> int | None:
    """The id of the vocabulary entry spelled exactly as `answer` (Ide et al.'s
    convert_tokens_to_ids("Yes")); else the single token the answer encodes to on its own
    (their code's fallback for 是/否); None when it is neither."""
    tid = tokenizer.convert_tokens_to_ids(answer)
    unk = getattr(tokenizer, "unk_token_id", None)
    if tid is not None and (tid != unk or answer == getattr(tokenizer, "unk_token", None)):
        return int(tid)
    ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
    return int(ids[0]) if len(ids) == 1 else None
