"""The language table (accapp/data/languages.json): what differs by language, as data.

A leaf: the standard library and accapp.errors only. Each row gives a language's name on screen,
how its words are found (``segmentation``), the character ranges that mark typed text as it
(``recognised_by``), its prompts' Yes/No answer words and where its unigram frequencies come from. A code the table lacks still works: it
reads as itself, its words are found on whitespace, and text is never guessed to be in it.
A benchmark descriptor file may bring rows of its own (accapp.benchmarks reads ``_languages``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from accapp.errors import UserError

TABLE_FILE = Path(__file__).resolve().parent / "data" / "languages.json"
SEGMENTATIONS = ("whitespace", "jieba")
# Where a language's unigram frequencies come from (accapp/methods/unigram.py): the shipped cased English
# forms of spaCy's lexeme table, or the word lists of the wordfreq package.
UNIGRAM_SOURCES = ("wordfreq", "spacy_lexemes")


@dataclass(frozen=True)
class Language:
    code: str  # ISO 639-1: "en"
    name: str  # on screen: "English"
    segmentation: str = "whitespace"
    script: str = ""
    recognised_by: tuple[tuple[int, int], ...] = ()  # code point ranges, inclusive
    default: bool = False
    answers: dict = field(default_factory=dict)  # "yes_no" -> [yes, no]
    unigram: str = "wordfreq"  # one of UNIGRAM_SOURCES

    def recognises(self, text: str) -> bool:
        return any(lo <= ord(c) <= hi for c in text or "" for lo, hi in self.recognised_by)


def _row(code: str, raw: dict) -> Language:
    unknown = set(raw) - {"name", "segmentation", "script", "recognised_by", "default", "answers", "unigram"}
    if unknown:
        raise UserError(f"Language '{code}' has fields the table does not know: {', '.join(sorted(unknown))}.")
    segmentation = raw.get("segmentation", "whitespace")
    if segmentation not in SEGMENTATIONS:
        raise UserError(f"Language '{code}': segmentation '{segmentation}' is not one of {', '.join(SEGMENTATIONS)}.")
    unigram = raw.get("unigram", "wordfreq")
    if unigram not in UNIGRAM_SOURCES:
        raise UserError(f"Language '{code}': unigram '{unigram}' is not one of {', '.join(UNIGRAM_SOURCES)}.")
    ranges = tuple((int(lo, 16), int(hi, 16)) for lo, hi in raw.get("recognised_by", ()))
    return Language(code, raw.get("name") or code, segmentation, raw.get("script", ""), ranges,
                    bool(raw.get("default")), dict(raw.get("answers") or {}), unigram)


def read_table(path: Path = TABLE_FILE) -> dict[str, Language]:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return {code: _row(code, row) for code, row in raw.items() if not code.startswith("_")}


TABLE: dict[str, Language] = read_table()


def add(rows: dict) -> None:
    """Rows from a benchmark descriptor file ({code: row}); a code already in the table keeps its row."""
    for code, raw in (rows or {}).items():
        TABLE.setdefault(code, _row(code, raw))


def codes() -> tuple[str, ...]:
    return tuple(TABLE)


def default() -> str:
    """The language typed text is taken to be when no row's characters are found in it."""
    return next((c for c, lang in TABLE.items() if lang.default), next(iter(TABLE)))


def get(code: str | None) -> Language:
    """A language's row; a code the table lacks reads as itself, words on whitespace."""
    code = code or default()
    return TABLE.get(code) or Language(code, code)


def name(code: str | None) -> str:
    """A language in words ("English"); '' for None."""
    return get(code).name if code else ""


def names() -> dict[str, str]:
    return {code: lang.name for code, lang in TABLE.items()}


def detect(*texts: str) -> str:
    """The language of typed text: the first row whose characters any text holds, else the default."""
    return next((c for c, lang in TABLE.items() if lang.recognised_by and any(lang.recognises(t) for t in texts)),
                default())
