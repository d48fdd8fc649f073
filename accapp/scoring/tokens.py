"""Token helpers shared by the scorers and the prompt methods."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from accapp.models.inspect import vocabulary_id  # noqa: F401 - one definition: found at inspection, read at scoring


def common_prefix_len(a: Sequence, b: Sequence) -> int:
    """How many leading items two sequences share."""
    n = min(len(a), len(b))
    a, b = tuple(a[:n]), tuple(b[:n])
    if a == b:  # the usual case: one is the other's start
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]: halve by slices (compared in C, not item by item)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def answer_tokens(tokenizer, prompt: str, answer: str) -> tuple[list[int], list[int]]:
    """(context ids, answer ids) as the tokenizer writes the answer right after the prompt:
    the answer's tokens are those of prompt + answer past the prompt's own tokens."""
    ctx = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    full = tokenizer(prompt + answer, add_special_tokens=False)["input_ids"]
    k = common_prefix_len(ctx, full)
    return list(full[:k]), list(full[k:])


def encode_ids(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids of many texts, as tokenizer(texts, add_special_tokens=False) gives them: a fast
    tokenizer's backend without offsets where nothing (padding, truncation) is set on it, which skips
    the offsets and the Python wrapping of each item."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    fast = getattr(backend, "encode_batch_fast", None)
    if fast is not None and backend.padding is None and backend.truncation is None:
        return [e.ids for e in fast(list(texts), add_special_tokens=False)]
    return tokenizer(list(texts), add_special_tokens=False)["input_ids"]


class SpecialSplit:
    """Prompts tokenized piece by piece between the special tokens they hold (a chat template's turn
    markers). A fast tokenizer cuts its added tokens out of the text first and tokenizes each piece
    between them on its own, so the pieces' tokens joined are the text's; the pieces are kept, and
    the system message and the markers, the same in every prompt, are tokenized once.

    Used only where that holds: special tokens that take no space from their neighbours (no lstrip,
    rstrip, single-word or normalized matching), no "prepend to the first piece only" pre-tokenizer
    (Metaspace's prepend_scheme "first"), and the first CHECKED prompts compared with the whole
    text's tokens (one difference turns it off for good)."""

    CHECKED = 32
    PIECES_MAX = 100_000

    def __init__(self, tokenizer, specials: dict[str, int]) -> None:
        self.tokenizer = tokenizer
        self.specials = specials
        self.pattern = re.compile("(" + "|".join(re.escape(t) for t in sorted(specials, key=len, reverse=True)) + ")")
        self.pieces: dict[str, tuple[int, ...]] = {}
        self.checked = 0
        self.on = True

    @classmethod
    def of(cls, tokenizer) -> SpecialSplit | None:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None or getattr(tokenizer, "split_special_tokens", False):
            return None
        try:
            added = backend.get_added_tokens_decoder()
            pipeline = _pipeline(backend)
        except Exception:  # noqa: BLE001 - an older tokenizers: the whole text, as before
            return None
        specials = {t.content: int(i) for i, t in added.items()
                    if t.special and t.content and not (t.lstrip or t.rstrip or t.single_word or t.normalized)}
        if not specials or _first_only(pipeline):
            return None
        return cls(tokenizer, specials)

    def encode(self, texts: list[str]) -> list[tuple[int, ...]]:
        """Each text's token ids."""
        if not self.on:
            return [tuple(ids) for ids in encode_ids(self.tokenizer, texts)]
        split = [self.pattern.split(t) for t in texts]
        new = [p for parts in split for p in parts[::2] if p and p not in self.pieces]
        if new:
            if len(self.pieces) + len(new) > self.PIECES_MAX:
                self.pieces.clear()
                new = list(dict.fromkeys(p for parts in split for p in parts[::2] if p))
            new = list(dict.fromkeys(new))
            self.pieces.update(zip(new, map(tuple, encode_ids(self.tokenizer, new))))
        out = []
        for parts in split:
            ids: list[int] = []
            for k, part in enumerate(parts):
                if k % 2:
                    ids.append(self.specials[part])
                elif part:
                    ids.extend(self.pieces[part])
            out.append(tuple(ids))
        if self.checked < self.CHECKED:
            take = texts[: self.CHECKED - self.checked]
            self.checked += len(take)
            if [tuple(i) for i in encode_ids(self.tokenizer, take)] != out[: len(take)]:
                self.on = False
                return [tuple(ids) for ids in encode_ids(self.tokenizer, texts)]
        return out


PIPELINE = ("normalizer", "pre_tokenizer", "post_processor", "decoder")  # the vocabulary and merges hold no option


def _pipeline(backend) -> list:
    """A fast tokenizer's pipeline parts as JSON, without its vocabulary: serialising and parsing the
    whole tokenizer (Gemma's 262k tokens and their merges) took seconds at every scorer built."""
    parts = (getattr(backend, name) for name in PIPELINE)
    return [json.loads(part.__getstate__()) for part in parts if part is not None]


def _first_only(config) -> bool:
    """Whether a tokenizer's configuration prepends something to the first piece of a text only."""
    if isinstance(config, dict):
        if config.get("prepend_scheme") == "first":
            return True
        return any(_first_only(v) for v in config.values())
    if isinstance(config, list):
        return any(_first_only(v) for v in config)
    return False
