"""Chinese words: a segmenter made for Chinese (jieba) groups the one-character words of
accapp/words.py into words ("桌子", not "桌" and "子").

words.py defines a word on the characters alone, the same for every model, and a Chinese
character is one word there (the methods that need words, e.g. a masked LM's PLL-word-l2r, keep
that rule: it is part of their definition and of the shipped CLiMP results). The word view of
the probe, the file's word rows and the headline's "where" show words as a reader of Chinese
sees them: the per-character records are grouped into the words jieba finds.

The rule (``group_records``):

1. Only runs of Han characters are segmented (``is_han``: CJK ideographs; a sentence with
   Hiragana or Katakana is Japanese and is left one character a word, as jieba is not made for
   it). Everything else keeps words.py's words, so a sentence without Han characters is
   unchanged, record for record.
2. jieba (precise mode, its default dictionary with the HMM for unknown words, as shipped in
   the jieba wheel: no download) cuts the sentence; consecutive one-character Han records that
   fall inside one jieba word become one word record.
3. A grouped word's values are sums over its characters: ``logprob_sum`` (the sum of its tokens'
   log-probs: each token belongs to exactly one character, words.assign_words) and
   ``logprob`` (for a causal LM the leading-space correction telescopes: the corrections of
   consecutive characters add up to the whole word's, and after a Han character it is 0
   anyway). Summed over a sentence, the words' values are therefore the sentence's, exactly as
   for English.
4. A token that straddles two jieba words (e.g. one token for "子上" in "桌子上") keeps words.py's
   placement: it belongs to the character it shares the most with, the leftmost on a tie, so it
   lands in the word that holds that character, and its surprisal is counted once there; the
   other word may own no token (``no_token``), as a character can today.

Each grouped record keeps its characters' records under ``characters`` (the character view);
a record that is one character has none. ``segmenter`` names the segmenter on every grouped
record, so the page can say which one made the words.
"""

from __future__ import annotations

import logging
import threading
import unicodedata

from accapp.words import is_cjk

SEGMENTER = "jieba"
_LOCK = threading.Lock()
_TOKENIZER = None


def segmenter_name() -> str:
    """'jieba 0.42.1 (precise mode, default dictionary)': what made the Chinese words."""
    import jieba

    return f"jieba {getattr(jieba, '__version__', '')} (precise mode, its default dictionary)".replace("  ", " ")


def is_han(ch: str) -> bool:
    """A Chinese character (a CJK ideograph, incl. 〇 and the extensions), not kana or Bopomofo."""
    if not is_cjk(ch):
        return False
    name = unicodedata.name(ch, "")
    return name.startswith("CJK") or ch in "〇々"


def _is_kana(ch: str) -> bool:
    return 0x3040 <= ord(ch) <= 0x30FF or 0x31F0 <= ord(ch) <= 0x31FF or 0xFF66 <= ord(ch) <= 0xFF9D


def _tokenizer():
    global _TOKENIZER
    with _LOCK:
        if _TOKENIZER is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict" lines in the server's log
            tok = jieba.Tokenizer()
            tok.initialize()
            _TOKENIZER = tok
        return _TOKENIZER


def needs_segmenting(text: str) -> bool:
    """True when `text` has Han characters and no kana (Chinese, not Japanese)."""
    return any(is_han(c) for c in text) and not any(_is_kana(c) for c in text)


def chinese_spans(text: str) -> list[tuple[int, int]]:
    """jieba's words of `text` as character spans (start, end), in order (precise mode, HMM on)."""
    tok = _tokenizer()
    with _LOCK:  # jieba's tokenizer keeps state while it cuts; one sentence at a time
        return [(int(a), int(b)) for _, a, b in tok.tokenize(text, mode="default", HMM=True)]


def _merge(text: str, group: list[dict]) -> dict:
    first, last = group[0], group[-1]
    lp_sum = sum(float(r["logprob_sum"]) for r in group)
    lp = sum(float(r["logprob"]) for r in group)
    tokens = [t for r in group for t in r["tokens"]]
    ln2 = 0.6931471805599453
    return {
        "index": first["index"], "word": text[first["start"]:last["end"]], "start": first["start"],
        "end": last["end"], "tokens": tokens, "logprob_sum": lp_sum, "logprob": lp, "correction": lp - lp_sum,
        "surprisal_nats": 0.0 - lp, "surprisal_bits": (0.0 - lp) / ln2,
        "sum_surprisal_nats": 0.0 - lp_sum, "sum_surprisal_bits": (0.0 - lp_sum) / ln2,
        "no_token": not tokens, "correction_applies": bool(first.get("correction_applies")),
        "characters": [dict(r) for r in group], "segmenter": SEGMENTER,
    }


def group_records(text: str, records: list[dict]) -> list[dict]:
    """Word records of `text` (accapp/scoring/word_prob.py's, one a character for Chinese) with
    the Chinese characters grouped into jieba's words (module doc); indices renumbered 0..n-1.
    Returns `records` itself when `text` needs no segmenting."""
    if not records or not needs_segmenting(text):
        return records
    seg_of = [-1] * len(text)
    for k, (a, b) in enumerate(chinese_spans(text)):
        for i in range(a, min(b, len(text))):
            seg_of[i] = k
    out: list[dict] = []
    group: list[dict] = []
    for r in records:
        one_han = r["end"] - r["start"] == 1 and is_han(text[r["start"]])
        if group and not (one_han and seg_of[r["start"]] == seg_of[group[-1]["start"]]
                          and group[-1]["end"] == r["start"]):
            out.append(group[0] if len(group) == 1 else _merge(text, group))
            group = []
        if one_han:
            group.append(r)
        else:
            out.append(r)
    if group:
        out.append(group[0] if len(group) == 1 else _merge(text, group))
    return [dict(r, index=i) for i, r in enumerate(out)]


def characters(records: list[dict]) -> list[dict]:
    """The character view: each grouped word replaced by its characters' records (indices
    renumbered); a record that is not grouped stays as it is."""
    flat = [c for r in records for c in (r.get("characters") or [r])]
    return [dict({k: v for k, v in c.items() if k not in ("characters", "segmenter")}, index=i) for i, c in enumerate(flat)]


def segmented_note(words: dict | None, view: str = "words") -> str:
    """A line for the page when Chinese words were grouped: which segmenter, and where the
    character view is; '' when no word was grouped."""
    if not words or not any(r.get("segmenter") for ws in words.values() for r in ws or []):
        return ""
    if view == "characters":
        return f" Words view: Chinese words by {segmenter_name()}."
    return (f" Chinese words by {segmenter_name()}; each word's surprisal is the sum over its characters' "
            "tokens. The \u201ccharacters\u201d view shows one character a word.")
