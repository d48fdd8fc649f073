"""User-facing errors and input validation shared by the CLI, the app and the API."""

from __future__ import annotations

import unicodedata

# Documented limits (README "Input limits"): long enough for any benchmark sentence
# (BLiMP's longest is 185 characters), short enough to keep one probe fast.
MAX_SENTENCE_CHARS = 400
MAX_SENTENCE_TOKENS = 128
# A context before both sentences (accapp/scoring/context.py): a paragraph.
MAX_CONTEXT_CHARS = 1000
# A request's method ids, repeats included (there are 23 methods): every entry point checks this.
MAX_METHOD_IDS = 64
# Unknown values an error message names, each cut to MAX_ECHO_CHARS: a message stays short whatever is sent.
MAX_NAMED = 5
# Any value a visitor sent, as a message or a log line quotes it (shown()): a hub id with its revision or a
# long folder path fits, and five of them keep a message under a kilobyte.
MAX_ECHO_CHARS = 120
# A model id, hub id with @revision, folder or .gguf path: longer than any path this machine can open.
MAX_MODEL_CHARS = 1024
# Bidirectional overrides and isolates: they reorder what follows on screen, so they are shown as escapes too.
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


class UserError(ValueError):
    """Bad input from a person: shown as a message, never as a traceback."""


def is_control(ch: str) -> bool:
    """A character that must never reach a log line or a message as it is: a control character
    (newlines, NUL, ESC of an ANSI sequence), a lone surrogate, a line or paragraph separator, or a
    bidirectional override."""
    return unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") or ch in BIDI_CONTROLS


def escape_controls(text: str) -> str:
    """The text with every control character written as its escape (\\n, \\x1b, \\ud800, \\u202e):
    one line, shown literally, whatever was sent."""
    if not any(is_control(ch) for ch in text):
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if is_control(ch) else ch for ch in text)


def shown(value, limit: int = MAX_ECHO_CHARS) -> str:
    """A value a visitor sent, as a message or a log line quotes it: control characters escaped, cut
    to `limit` characters with "…" and its full length ("mmmm… (500,000 characters)"). Every echo
    of a visitor's value goes through here, so each is cut the same way."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        return escape_controls(text[:limit]) + f"… ({len(text):,} characters)"
    return escape_controls(text)


def name_some(items) -> str:
    """'a, b, c, d, e and 12 more': the first MAX_NAMED items (each cut short), the rest counted."""
    items = list(items)
    named = [shown(s) for s in map(str, items[:MAX_NAMED])]
    more = len(items) - len(named)
    return ", ".join(named) + (f" and {more:,} more" if more else "")


def check_method_count(n: int) -> None:
    """Refuse a request with more than MAX_METHOD_IDS method ids (counted before repeats are dropped)."""
    if n > MAX_METHOD_IDS:
        raise UserError(f"{n:,} method ids were sent; at most {MAX_METHOD_IDS} are accepted.")


def validate_sentence(text: object, label: str = "sentence") -> str:
    """Return the sentence stripped of surrounding whitespace, or raise UserError."""
    if text is None:
        raise UserError(f"The {label} is missing: type a sentence.")
    if not isinstance(text, str):
        raise UserError(f"The {label} must be text, not a {type(text).__name__}.")
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
        if cat in ("Cc", "Cs") or ch in BIDI_CONTROLS:
            raise UserError(
                f"The {label} contains a control character (U+{ord(ch):04X}); remove it and try again."
            )
    return stripped


def check_context(context, label: str = "context") -> str:
    """The context with surrounding whitespace removed ('' = none), or UserError: not text, too long,
    or a control character other than a newline or a tab inside it."""
    if context is None:
        return ""
    if not isinstance(context, str):
        raise UserError(f"The {label} must be text, not a {type(context).__name__}.")
    text = context.strip()
    if not text:
        return ""
    if len(text) > MAX_CONTEXT_CHARS:
        raise UserError(f"The {label} is {len(text):,} characters long; the limit is {MAX_CONTEXT_CHARS:,}.")
    for ch in text:
        cat = unicodedata.category(ch)
        if (cat in ("Cc", "Cs") and ch not in "\n\t") or ch in BIDI_CONTROLS:
            raise UserError(f"The {label} contains a control character (U+{ord(ch):04X}); remove it and try again.")
    return text


def check_token_length(n_tokens: int, label: str = "sentence") -> None:
    if n_tokens > MAX_SENTENCE_TOKENS:
        raise UserError(
            f"The {label} is {n_tokens} tokens long for this model; the limit is {MAX_SENTENCE_TOKENS}."
        )
