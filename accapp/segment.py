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

A pair is segmented consistently (``pair_spans``): the text the two sentences share at the start
and at the end is cut the same way in both (a cut jieba makes there in either sentence is a cut in
both), and each sentence keeps its own cuts inside the span where they differ, so the differing
words stand against each other ("一本书" / "一张书": 本 against 张, not 本书 against 一张).

A display unit never lacks a token of its own (``merge_crossing``): the words a token crosses
become one unit (``joined``: the words it joined), and ``joined_note`` says so on the page.

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


def _cuts(spans) -> set[int]:
    return {a for a, _ in spans} | {b for _, b in spans}


def _spans(cuts: set[int], n: int) -> list[tuple[int, int]]:
    pts = sorted(c for c in cuts | {0, n} if 0 <= c <= n)
    return [(a, b) for a, b in zip(pts, pts[1:]) if b > a]


def shared_ends(a: str, b: str) -> tuple[int, int]:
    """(characters the two strings share at the start, at the end), the two never overlapping."""
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[-1 - s] == b[-1 - s]:
        s += 1
    return p, s


def pair_spans(good: str, bad: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Word spans of both sentences of a pair, cut consistently (module doc): in the shared start
    and end, a cut of either sentence's jieba words is a cut in both; inside the differing span each
    keeps its own."""
    cg, cb = _cuts(chinese_spans(good)), _cuts(chinese_spans(bad))
    p, s = shared_ends(good, bad)
    ng, nb = len(good), len(bad)
    start = {c for c in cg | cb if c <= p}
    end = {ng - c for c in cg if c >= ng - s} | {nb - c for c in cb if c >= nb - s}  # as distances from the end
    own_g = {c for c in cg if p < c < ng - s}
    own_b = {c for c in cb if p < c < nb - s}
    return (_spans(start | {ng - d for d in end} | own_g, ng), _spans(start | {nb - d for d in end} | own_b, nb))


def group_records(text: str, records: list[dict], spans: list[tuple[int, int]] | None = None) -> list[dict]:
    """Word records of `text` (accapp/scoring/word_prob.py's, one a character for Chinese) with
    the Chinese characters grouped into jieba's words (module doc), or into `spans` (pair_spans'
    words of this sentence); indices renumbered 0..n-1. Returns `records` itself when `text`
    needs no segmenting."""
    if not records or not needs_segmenting(text):
        return records
    seg_of = [-1] * len(text)
    for k, (a, b) in enumerate(spans if spans is not None else chinese_spans(text)):
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


def _joined(text: str, group: list[dict]) -> dict:
    """One display unit of the records a token crosses: _merge's sums over their characters, with
    the words it joined."""
    parts = [c for r in group for c in (r.get("characters") or [r])]
    out = _merge(text, parts)
    out["joined"] = [r["word"] for r in group]
    if not any(r.get("segmenter") for r in group):
        out.pop("segmenter")
    return out


def merge_crossing(text: str, records: list[dict], token_spans) -> list[dict]:
    """The records with the words one token crosses (its character span overlaps several) made one
    display unit each (``joined``), so that no unit is drawn without a token of its own; indices
    renumbered. `token_spans`: the sentence's tokens' (start, end) character offsets."""
    if len(records) < 2:
        return records
    reach = list(range(len(records)))  # reach[i]: the last record that i's unit runs to
    for a, b in token_spans or []:
        if b <= a:
            continue
        hit = [i for i, r in enumerate(records) if r["start"] < b and r["end"] > a]
        if len(hit) > 1:
            reach[hit[0]] = max(reach[hit[0]], hit[-1])
    out, i = [], 0
    while i < len(records):
        j = reach[i]
        k = i
        while k < j:  # a unit grows while a token inside it reaches further
            k += 1
            j = max(j, reach[k])
        out.append(records[i] if j == i else _joined(text, records[i:j + 1]))
        i = j + 1
    if len(out) == len(records):
        return records
    return [dict(r, index=n) for n, r in enumerate(out)]


def joined_note(words: dict | None) -> str:
    """A line for the page when a token joined words into one unit ('' when none did)."""
    units = [r for ws in (words or {}).values() for r in ws or [] if r.get("joined")]
    if not units:
        return ""
    named = ", ".join(f"“{r['word']}” ({' + '.join(r['joined'])})" for r in units[:4])
    return (f" Shown as one unit where one of the model's tokens covers two words, so that no word is drawn "
            f"without a token of its own: {named}.")


def characters(records: list[dict], token_spans: dict | list | None = None, text: str = "") -> list[dict]:
    """The character view: each grouped word replaced by its characters' records (indices
    renumbered); a record that is not grouped stays as it is. With the sentence's token spans (and
    its text), characters one token covers stay one unit (merge_crossing)."""
    flat = [c for r in records for c in (r.get("characters") or [r])]
    out = [dict({k: v for k, v in c.items() if k not in ("characters", "segmenter", "joined")}, index=i)
           for i, c in enumerate(flat)]
    if token_spans is None:
        return out
    return merge_crossing(text or _text_of(out), out, token_spans)


def _text_of(records: list[dict]) -> str:
    """A string on which the records' offsets index their words (spaces where no word is)."""
    n = max((r["end"] for r in records), default=0)
    chars = [" "] * n
    for r in records:
        chars[r["start"]:r["end"]] = list(r["word"])[: r["end"] - r["start"]]
    return "".join(chars)


def segmented_note(words: dict | None, view: str = "words") -> str:
    """A line for the page when Chinese words were grouped: which segmenter, and where the
    character view is; '' when no word was grouped."""
    if not words or not any(r.get("segmenter") for ws in words.values() for r in ws or []):
        return ""
    if view == "characters":
        return f" Words view: Chinese words by {segmenter_name()}."
    return (f" Chinese words by {segmenter_name()}; each word's surprisal is the sum over its characters' "
            "tokens. The \u201ccharacters\u201d view shows one character a word.")
