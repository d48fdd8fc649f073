"""User-facing errors and input validation shared by the CLI, the app and the API."""

from __future__ import annotations

import unicodedata

# Documented limits (README "Input limits"): long enough for any benchmark sentence
# (BLiMP's longest is 185 characters), short enough to keep one probe fast.
MAX_SENTENCE_CHARS = 400
MAX_SENTENCE_TOKENS = 128


class UserError(ValueError):
    """Bad input from a person: shown as a message, never as a traceback."""


def validate_sentence(text: object, label: str = "sentence") -> str:
    """Return the sentence stripped of surrounding whitespace, or raise UserError."""
    if text is None or not isinstance(text, str):
        raise UserError(f"The {label} is missing: type a sentence.")
    stripped = text.strip()
    if not stripped:
        raise UserError(f"The {label} is empty: type a sentence.")
    if len(stripped) > MAX_SENTENCE_CHARS:
        raise UserError(
            f"The {label} is {len(stripped)} characters long; the limit is {MAX_SENTENCE_CHARS}."
        )
    for ch in stripped:
        cat = unicodedata.category(ch)
        # Cc: control characters (tabs and newlines inside a sentence included); Cs: lone surrogates.
        if cat in ("Cc", "Cs") or (cat == "Cf" and ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"):
            raise UserError(
                f"The {label} contains a control character (U+{ord(ch):04X}); remove it and try again."
            )
    return stripped


def check_token_length(n_tokens: int, label: str = "sentence") -> None:
    if n_tokens > MAX_SENTENCE_TOKENS:
        raise UserError(
            f"The {label} is {n_tokens} tokens long for this model; the limit is {MAX_SENTENCE_TOKENS}."
        )
