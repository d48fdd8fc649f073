"""Which tokens begin a new word: the set B of the word-probability correction.

A causal LM whose tokens carry the LEADING space (byte-level BPE "Ġthe", SentencePiece
"▁the") only knows that a word has ended when the next token begins a new one. The
probability of a word is therefore (Pimentel & Meister 2024; Oh & Schuler 2024)

    log p(w | c) = sum log p(tokens of w | ...) + log P(B | c, w) - log P(B | c)

where B is the set of tokens that begin a new word (accapp/scoring/word_prob.py applies it;
docs/word_probability.md has the derivation and an example). This module says which
vocabulary items are in B, under the project's word rule (accapp/words.py), and at which
positions of a sentence the term is needed at all.

B depends on the character the context ends with, because the word rule does:

- after the start token, whitespace, punctuation, a symbol or a CJK character (a word of
  its own, or no word), EVERY token begins a new word: P(B) = 1, the term is exactly 0;
- after a word character (letter, digit or mark, not CJK), a token CONTINUES the word
  when its text, written right after that character, does not start a new word under
  ``words.word_spans``: it begins with a word character ("s", "la", "known"), or with an
  apostrophe or hyphen followed by a word character ("'s", "-known"), or, after a digit,
  with a comma or full stop followed by a digit (",000"). Every other token is in B: one
  whose text begins with whitespace ("Ġthe", "▁the", "Ċ", "▁▁"), punctuation or a symbol
  (".", ","), a CJK character, and every special token (end of sequence, start, padding,
  unused ids: none of them continues a word; the end-of-sequence token is the one with
  mass). So there are two masks, ``after="a"`` (a letter or mark) and ``after="0"`` (a digit).

A token's text is its surface string, read from its vocabulary piece (never from
``tokenizer.decode([id])``, which may strip the leading space):

- byte-level BPE (the backend decoder is ByteLevel): the piece's characters mapped back to
  bytes (GPT-2's byte-to-unicode table), so "Ġthe" is b" the" and "Ċ" is b"\\n";
- SentencePiece style (a Metaspace decoder, or a Replace of "▁" by a space): "▁" is a
  space; a byte-fallback piece "<0xE4>" is that byte;
- any other tokenizer: the text the tokenizer decodes after an anchor token ("a"),
  minus the anchor's own text (keeps the leading space).

Added (non-special) tokens are their literal content; special tokens have no text and are in
B. Bytes that are not a whole character: a piece that starts inside a character (a UTF-8
continuation byte) continues it, so it is not in B; a piece that starts a multi-byte
character it does not finish (b"\\xe4", b"\\xe4\\xbb") is in B when most assigned characters with
that byte prefix would begin a word (E4-E9: CJK, yes; C3: Latin letters, no; E2: punctuation
and symbols, yes).

Known approximations, all rare and documented: a token that ends in an apostrophe, hyphen
or digit joiner with nothing after it (Gemma's "'" in "don" "'" "t", SmolLM2's "," in
"3" "," "0") counts as beginning a word, as ``split_words`` treats such a character at the
end of a string; and the masks look at the token's text only, never at what follows it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache

import numpy as np

from accapp.words import word_spans

AFTER_LETTER = "a"  # a word character that is not a digit (letters, marks)
AFTER_DIGIT = "0"
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_MAX_SAMPLES = 4096  # code points checked for a piece that starts a character it does not finish


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, inverted: piece character -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def _decoder_types(tokenizer) -> set[str]:
    """The backend decoder's component types (with the Replace patterns), or empty."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = getattr(backend, "decoder", None) if backend is not None else None
    if decoder is None:
        return set()
    found: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            kind = node.get("type")
            if kind == "Replace":
                found.add("Replace:" + str((node.get("pattern") or {}).get("String")))
            elif kind:
                found.add(kind)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(decoder.__getstate__()))
    return found


def piece_kind(tokenizer) -> str:
    """How a vocabulary piece spells its text: 'bytelevel', 'metaspace' or 'decode'."""
    types = _decoder_types(tokenizer)
    if "ByteLevel" in types:
        return "bytelevel"
    if "Metaspace" in types or "Replace:\u2581" in types:
        return "metaspace"
    return "decode"


def surface_bytes(tokenizer, vocab_size: int, ids=None) -> list[bytes | None]:
    """Per vocabulary id (0..vocab_size-1; or per id of `ids` only): the UTF-8 bytes of the
    token's text, leading space included; None for a special token or an id the tokenizer does
    not have."""
    n = min(len(tokenizer), vocab_size)
    whole = ids is None  # the whole vocabulary: out[i] is id i's (ids beyond the tokenizer's stay None)
    ids = list(range(n)) if whole else [int(i) for i in ids]
    kind = piece_kind(tokenizer)
    known = [i for i in ids if 0 <= i < n]
    pieces = dict(zip(known, tokenizer.convert_ids_to_tokens(known)))
    added = {int(i): t for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items()}
    special = set(int(i) for i in getattr(tokenizer, "all_special_ids", []))
    out: list[bytes | None] = [None] * (vocab_size if whole else len(ids))
    if kind == "bytelevel":
        table = _byte_decoder()
    elif kind == "decode":
        anchor = tokenizer("a", add_special_tokens=False)["input_ids"]
        base = tokenizer.decode(anchor)
    for at, i in enumerate(ids):
        piece = pieces.get(i)
        tok = added.get(i)
        if i in special or (tok is not None and getattr(tok, "special", False)) or piece is None:
            continue
        if tok is not None:  # an added token is its literal content
            text = tok.content.replace("\u2581", " ") if kind == "metaspace" else tok.content
            out[at] = text.encode("utf-8")
        elif kind == "bytelevel":
            try:
                out[at] = bytes(table[c] for c in piece)
            except KeyError:
                out[at] = piece.encode("utf-8")
        elif kind == "metaspace":
            m = _BYTE_PIECE.fullmatch(piece)
            out[at] = bytes([int(m.group(1), 16)]) if m else piece.replace("\u2581", " ").encode("utf-8")
        else:
            text = tokenizer.decode(list(anchor) + [i])
            out[at] = (text[len(base):] if text.startswith(base) else text).encode("utf-8")
    return out


def surface_texts(tokenizer, vocab_size: int, ids) -> dict[int, str | None]:
    """{id: the token's text as shown (leading space kept; a piece of a character as its bytes,
    escaped)} for a few ids; None for a special token (the end of text, ...)."""
    ids = [int(i) for i in ids]
    return {i: (b.decode("utf-8", errors="backslashreplace") if b is not None else None)
            for i, b in zip(ids, surface_bytes(tokenizer, vocab_size, ids))}


@lru_cache(maxsize=1 << 17)
def _continues_text(text: str, after: str) -> bool:
    """Whether `text` (its first two characters are all that matter), written right after
    the character `after`, continues its word."""
    return bool(text) and word_spans(after + text)[0][1] > len(after)


def _utf8_length(lead: int) -> int:
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0  # not a lead byte of valid UTF-8


@lru_cache(maxsize=4096)
def _partial_char_continues(head: bytes, after: str) -> bool:
    """A piece that starts a multi-byte character it does not finish: does that character
    continue the word for most of its possible completions?"""
    n = _utf8_length(head[0])
    if n == 0 or len(head) >= n or any(not 0x80 <= b <= 0xBF for b in head[1:]):
        return False
    cp = head[0] & (0x7F >> n)
    for b in head[1:]:
        cp = (cp << 6) | (b & 0x3F)
    missing = n - len(head)
    lo, count = cp << (6 * missing), 1 << (6 * missing)
    step = max(1, count // _MAX_SAMPLES)
    yes = no = 0
    for x in range(lo, lo + count, step):
        if 0xD800 <= x <= 0xDFFF or x > 0x10FFFF:
            continue
        ch = chr(x)
        enc = ch.encode("utf-8")
        if len(enc) != n or not enc.startswith(head) or unicodedata.category(ch) in ("Cn", "Co"):
            continue  # overlong, out of range, unassigned or private use: not a vote
        if _continues_text(ch, after):
            yes += 1
        else:
            no += 1
    return yes > no


def continues_word(data: bytes | None, after: str) -> bool:
    """Whether a token with these surface bytes continues a word whose last character is
    like `after` (AFTER_LETTER or AFTER_DIGIT). None (a special token) or b"" never does."""
    if not data:
        return False
    if 0x80 <= data[0] <= 0xBF:  # inside a character: it continues that character's word
        return True
    # The longest prefix that is whole characters (at most 3 characters are ever needed).
    head = data[:12]
    for cut in range(len(head), 0, -1):
        try:
            text = head[:cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        text = ""
    if text:
        return _continues_text(text[:2], after)
    return _partial_char_continues(data[:4], after)


def boundary_masks(tokenizer, vocab_size: int) -> dict[str, np.ndarray]:
    """{after: bool mask over the vocabulary, True where the token begins a new word} for
    after in (AFTER_LETTER, AFTER_DIGIT). Ids beyond the tokenizer's vocabulary are in B."""
    surfaces = surface_bytes(tokenizer, vocab_size)
    masks = {}
    for after in (AFTER_LETTER, AFTER_DIGIT):
        mask = np.ones(vocab_size, dtype=bool)
        for i, data in enumerate(surfaces):
            if data:
                mask[i] = not continues_word(data, after)
        masks[after] = mask
    # The caches serve one sweep of a vocabulary; kept, they would hold ~26 MB of small strings per model loaded.
    _continues_text.cache_clear()
    _partial_char_continues.cache_clear()
    return masks


def _word_char_kind(ch: str) -> str | None:
    """AFTER_DIGIT or AFTER_LETTER for a word character (words.py's rule), else None."""
    if word_spans(ch + "a")[:1] != [(0, 2)]:
        return None
    return AFTER_DIGIT if ch.isdigit() else AFTER_LETTER


def context_kinds(text: str, offsets) -> list[str | None]:
    """Per k = 0..n (n tokens with these character offsets): which mask gives
    P(next token begins a word | start token + the first k tokens). None: every token does
    (k = 0, or the text so far ends in whitespace, punctuation, a symbol or a CJK
    character), so log P(B) = 0 exactly."""
    kinds: list[str | None] = [None]
    end = 0
    for _, b in offsets:
        end = max(end, b)
        kinds.append(_word_char_kind(text[end - 1]) if end > 0 else None)
    return kinds
