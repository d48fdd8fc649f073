"""What a word is: one splitter over the raw string, the same for every model family.

Tokenizers' own pre-tokenizers disagree about words (BERT cuts "don't" into don ' t and
"Kayla." into Kayla .; RoBERTa's byte-level BPE gives " don" "'t"; SentencePiece keeps
punctuation on the word), so PLL-word-l2r and PLL-whole-word (Kauf & Ivanova 2023, §3.1)
would mean different things for different models. Words are therefore defined here, on
the characters of the sentence, and each token is placed in a word through its character
offsets.

The rule (``split_words``), scanning left to right:

1. Whitespace (``str.isspace``) and invisible format characters (Unicode category Cf, e.g.
   U+200B zero-width space) separate words and belong to none.
2. A CJK character (Han ideographs incl. extensions and compatibility ideographs, Hiragana,
   Katakana, Bopomofo) is one word by itself: Chinese is one character a word. Hangul is
   not in this set: Korean writes spaces between words.
3. A word character is a letter, digit or combining mark (Unicode categories L*, N*, M*)
   that is not CJK. A run of word characters is one word, and a run continues across
   - an apostrophe (' U+2019 U+02BC) or hyphen (- U+2010 U+2011) standing between two word
     characters: "don't", "Kayla's", "o'clock", "well-known", "COVID-19" are one word each;
   - a comma or full stop standing between two digits: "3,000" and "3.14" are one word.
   An apostrophe or hyphen not between word characters is punctuation: in "students'",
   "'em" and "-3" it is a word of its own.
4. Any other character (punctuation, symbols, emoji) is a word by itself: "Kayla." is
   "Kayla" + "."; "..." is three words; "?!" is two.

Tokens to words (``assign_words``), from the tokenizer's offsets (special tokens excluded
by the caller):

- A token belongs to the word its characters overlap. A token that overlaps several words
  (a piece like '."' in some SentencePiece vocabularies) belongs to the word it shares the
  most characters with, the leftmost on a tie; words stay the same for every model, and a
  word may then own no token (it is kept, with an empty token list).
- A token with an empty span right after a word's last character, where the token before it
  ends (a byte piece that finishes a character: the scorer gives the 2nd and 3rd byte pieces
  of a Chinese character in a byte-level BPE an empty span at the character's end), belongs to
  that word.
- Any other token that overlaps no word (a lone whitespace marker such as "Ġ" or "▁", or an
  empty offset) belongs to the word of the next token that has one (it marks that word's
  start), else to the previous one's. Several tokens covering one character all belong to
  that character's word.
"""

from __future__ import annotations

import bisect
import unicodedata
from dataclasses import dataclass

APOSTROPHES = "'\u2019\u02bc"
HYPHENS = "-\u2010\u2011"
DIGIT_JOINERS = ",."

_CJK_RANGES = (
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x31A0, 0x31BF),  # Bopomofo extended
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9D),  # half-width Katakana
    (0x20000, 0x2FA1F),  # CJK extensions B-F, compatibility supplement
    (0x30000, 0x323AF),  # CJK extensions G-H
)


@dataclass(frozen=True)
class Word:
    index: int
    start: int  # character offsets into the sentence, end exclusive
    end: int
    text: str


_CJK_STARTS = [lo for lo, _ in _CJK_RANGES]  # sorted: a character's range found by bisection


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    k = bisect.bisect_right(_CJK_STARTS, cp) - 1
    return k >= 0 and cp <= _CJK_RANGES[k][1]


def _is_word_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LNM" and not is_cjk(ch)


def _is_gap(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) == "Cf"


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans (start, end) of the words of `text`, in order (rule in the module doc)."""
    spans: list[tuple[int, int]] = []
    n = len(text)
    i = 0
    while i < n:
        ch = text[i]
        if _is_gap(ch):
            i += 1
            continue
        if not _is_word_char(ch):  # CJK character, punctuation, symbol: one character a word
            spans.append((i, i + 1))
            i += 1
            continue
        j = i + 1
        while j < n:
            c = text[j]
            if _is_word_char(c):
                j += 1
                continue
            if j + 1 < n and _is_word_char(text[j + 1]):
                if c in APOSTROPHES or c in HYPHENS:
                    j += 2
                    continue
                if c in DIGIT_JOINERS and text[j - 1].isdigit() and text[j + 1].isdigit():
                    j += 2
                    continue
            break
        spans.append((i, j))
        i = j
    return spans


def split_words(text: str) -> list[Word]:
    """The words of `text` with their character spans."""
    return [Word(k, a, b, text[a:b]) for k, (a, b) in enumerate(word_spans(text))]


def assign_words(offsets, spans) -> list[int]:
    """Word index for each token, from token offsets (start, end) and word spans.

    Returns -1 for every token only when the text has no word at all.
    """
    starts = [a for a, _ in spans]
    direct: list[int | None] = []
    for a, b in offsets:
        best, best_overlap = None, 0
        # first word that may overlap [a, b): the one before the first start >= b
        k = max(bisect.bisect_right(starts, a) - 1, 0)
        while k < len(spans) and spans[k][0] < b:
            overlap = min(b, spans[k][1]) - max(a, spans[k][0])
            if overlap > best_overlap:
                best, best_overlap = k, overlap
            k += 1
        direct.append(best)
    out: list[int] = []
    n = len(direct)
    for t in range(n):
        w = direct[t]
        a, b = offsets[t]
        if w is None and a == b and t > 0 and out[t - 1] >= 0 and offsets[t - 1][1] == a \
                and spans[out[t - 1]][0] < a <= spans[out[t - 1]][1]:
            w = out[t - 1]  # an empty piece right after its word's last character: a byte that finishes it
        if w is None:
            nxt = next((direct[u] for u in range(t + 1, n) if direct[u] is not None), None)
            if nxt is None:
                nxt = next((out[u] for u in range(t - 1, -1, -1) if out[u] >= 0), -1)
            w = nxt
        out.append(w)
    return out
