"""Text written for the project's own records (a results manifest's reasons and notes), made fit for
a reader of the page: no tracker numbers, no file paths, and the project's shorthand said in words.
Pure functions; every text the page takes from a manifest goes through ``for_reader``."""

from __future__ import annotations

import re

# Shorthand of the records -> what it means for a reader (applied in order, case-insensitive).
PHRASES = (
    (r"tie tolerance 2\^-\d+ \(the largest batching drift[^)]*\)",
     "ties: scores within the rounding measured between batch sizes count as ties"),
    (r"each method's tie tolerance from its terms", "ties: scores within the measured rounding of each method"),
    (r"tie constants from the \d+-pair run", "each method's rounding measured on a sample of pairs"),
    (r"the tie rule for every verdict", "ties (scores within the measured rounding) in every verdict"),
    (r"ensembles vote strictly", "ensembles vote without a tie margin"),
    (r"identical pairs flagged", "pairs whose two sentences are identical marked"),
    (r"case-aware unigram table", "a word-frequency table that tells capitals apart"),
)
INTERNAL = (
    r"\b(?:issue|stop)\s+\d+\s*:\s*",  # "issue N: " before a reason
    r"\s*\((?:stop|issue)\s+\d+\)",  # "(stop N)"
    r"\s*\((?:docs/[\w./-]+|[\w./-]+\.md)(?:,\s*(?:issue|stop)\s+\d+)?\)",  # "(docs/gpu.md, issue N)"
    r",?\s*\b(?:issue|stop)\s+\d+\b",  # any other tracker number
)
LEFT_OVER = re.compile(r"\b(?:issue|stop)\s+\d|2\^-\d|docs/", re.IGNORECASE)


def for_reader(text) -> str:
    """`text` with the records' shorthand said in words and tracker numbers and file paths left out."""
    out = str(text or "")
    for pattern, words in PHRASES:
        out = re.sub(pattern, words, out, flags=re.IGNORECASE)
    for pattern in INTERNAL:
        out = re.sub(pattern, "", out, flags=re.IGNORECASE)
    out = re.sub(r"2\^-(\d+)", lambda m: f"{2.0 ** -int(m.group(1)):.2g}", out)
    return re.sub(r"\s{2,}", " ", out).strip()


def internal_words(text: str) -> list[str]:
    """The internal words left in `text` ("issue N", "2^-12", "docs/..."), for tests and checks."""
    return [m.group(0) for m in LEFT_OVER.finditer(text or "")]
