"""What the model expected instead: at each word of a probed pair, and first
where the two sentences differ, the model's most probable next tokens with their probabilities,
as plain data for the page, the `/probe` JSON and the export.

The numbers are the engine's own (Engine.score_pairs(words=True, topk=k): accapp/scoring/topk.py
computes them from the projection that scores the sentence, no second pass). This module only
arranges them: the words where the pair differs first (aligned as the difference strip aligns
them), a sentence a position in words ("after “These casseroles”, the model expected: are 33 %,
can 13 %, ..."), and the export's rows. A masked LM sees both sides of every word: there is no
next token to expect, and the report says so.
"""

from __future__ import annotations

import re

from accapp import settings
from accapp.service.verdicts import align_words

NOT_CAUSAL = ("A masked LM reads the words on both sides of each word, so it has no next word to expect: this view is "
              "for causal LMs. Its per-token pseudo-log-likelihood is in the PLL figure.")
OFF = "Turned off on this server (ACCAPP_TOP_K = 0)."
WORD_NOTE = ("At each word, the tokens that would begin the next word, most probable first: p = the probability of "
             "the token after the words before it; “next word” = that probability divided by the probability "
             "that a new word begins there, so that these add up to 1 over all tokens (the word view's rule, "
             "Pimentel & Meister 2024). A listed token may be only the start of a longer word. The sentence's "
             "own word is given as a whole word, by the word view's rule.")
END_OF_TEXT = "⟨end of text⟩"
_ALNUM = re.compile(r"[^\W_]")  # a letter or a digit (str.isalnum's characters: \w less the underscore)


def top_k() -> int:
    """How many candidates a position lists (ACCAPP_TOP_K, 0 to 20; 0: none)."""
    return settings.integer("ACCAPP_TOP_K")


def percent(p: float | None) -> str:
    """A probability in percent, with as many digits as it needs: '33 %', '4.7 %', '0.29 %', '< 0.01 %'."""
    if p is None:
        return ""
    x = 100.0 * p
    if x >= 9.95:
        return f"{x:.0f} %"
    if x >= 0.995:
        return f"{x:.1f} %"
    if x >= 0.01:
        return f"{x:.2f} %"
    return "< 0.01 %"


def shown(token: str | None) -> str:
    """A candidate token as a reader sees it: its text without the leading space, punctuation in
    quotes, a space or a line break as a sign, a special token (the end of text) in words."""
    if token is None:
        return END_OF_TEXT
    text = token.strip()
    if not text:
        return "⏎" if "\n" in token else "␣"
    # punctuation in quotes, so that a list "are 33 %, “,” 5.0 %" still reads
    return text if _ALNUM.search(text) else f"“{text}”"


# A candidate that is markup or one of the model's control tokens, not a word: "<h1>", "</p>",
# "<start_of_image>", "<|im_start|>", "[multimodal]".
_MARKUP = re.compile(r"\s*(<[^<>\s]{1,40}>|\[[A-Za-z_]{1,40}\])\s*")
LEFT_OUT_NOTE = ("Markup and the model's control tokens (such as <h1> or <start_of_image>) are left out of the "
                 "lists of what the model expected: they are not words.")


def is_markup(token: str | None) -> bool:
    """A candidate's text that is a tag or a control token (e.g. <h1>, <start_of_image>), not a word."""
    return token is not None and _MARKUP.fullmatch(token) is not None


def readable(record: dict) -> tuple[list[dict], int]:
    """A position's candidates that are words: (those kept, in order, and how many were left out). Left
    out: markup and control tokens, and at the start of the sentence a special token (the end of text
    there means nothing to a reader)."""
    at_start = not record.get("context", "").strip()
    kept = [c for c in record["expected"] if not is_markup(c["token"]) and not (at_start and c["token"] is None)]
    return kept, len(record["expected"]) - len(kept)


def left_out(n: int) -> str:
    """' (2 markup or control tokens left out)', or '' for none."""
    return f" ({n} markup or control token{'s' if n != 1 else ''} left out)" if n else ""


def line(record: dict, word: bool = True) -> str:
    """One position in words: "after “These casseroles”, the model expected: are 33 %, can 13 %, ..."
    (a word record: each candidate's probability as the next word's start; a token record: as the next token).
    Markup and control tokens are left out, and said to be (readable)."""
    context = record["context"].strip()
    where = f"after “{context}”" if context else "at the start"
    key = "p_next_word_begins" if word else "p"
    kept, dropped = readable(record)
    items = ", ".join([f"{shown(c['token'])} {percent(c[key])}" for c in kept])
    return (f"{where}, the model expected: {items}" if items else f"{where}, the model listed nothing") + left_out(dropped)


def differing(good: list[dict], bad: list[dict], words_good: list[dict], words_bad: list[dict]) -> list[dict]:
    """The word records (scoring/topk.word_records) at the positions where the two sentences
    differ, aligned as the difference strip aligns the words: [{good: record or None, bad: ...}]."""
    by_good = {r["index"]: r for r in good}
    by_bad = {r["index"]: r for r in bad}
    out = []
    for gi, bi, differs in align_words(words_good, words_bad):
        if not differs:
            continue
        g = by_good.get(words_good[gi]["index"] if gi is not None else None)
        b = by_bad.get(words_bad[bi]["index"] if bi is not None else None)
        if g is not None or b is not None:
            out.append({"good": g, "bad": b})
    return out


def report(result, kind: str, words: dict | None) -> dict:
    """The `expected` part of a probe report: {applies, k, note, good, bad: {tokens, words}
    (scoring/topk.py's records, each word record with its `text` line), differing: the word
    records where the sentences differ, first}."""
    expected = getattr(result, "expected", None)
    if kind != "causal":
        return {"applies": False, "k": 0, "note": NOT_CAUSAL}
    if not expected or not words:
        if getattr(getattr(result, "pair", None), "context", ""):
            note = "Not shown for a pair after a context: the top-k comes from the pass over the sentence alone."
        else:
            note = OFF if top_k() == 0 else "Not computed for this probe."
        return {"applies": False, "k": 0, "note": note}
    sides = {}
    for side in ("good", "bad"):
        e = expected[side]
        sides[side] = {"tokens": [dict(t, text=line(t, word=False)) for t in e["tokens"]],
                       "words": [dict(w, text=line(w)) for w in e["words"]]}
    return {"applies": True, "k": expected["good"]["k"], "note": WORD_NOTE, **sides,
            "differing": differing(sides["good"]["words"], sides["bad"]["words"], words["good"], words["bad"])}


# ------------------------------------------------------------------------------------------ export
def export_rows(model_id: str, record: dict, sentences: dict) -> list[dict]:
    """The export's rows of one model's `expected` (service/export.py's long table): one row per
    (sentence, word, candidate) with record "expected_word" and per (sentence, token position,
    candidate) with record "expected_token"."""
    if not record or not record.get("applies"):
        return []
    rows = []
    for side in ("good", "bad"):
        text = sentences[side]
        for w in record[side]["words"]:
            for c in w["expected"]:
                rows.append({"record": "expected_word", "model_id": model_id, "sentence": side, "sentence_text": text,
                             "index": w["index"], "item": w["word"], "context_text": w["context"], "rank": c["rank"],
                             "candidate": c["token"] if c["token"] is not None else END_OF_TEXT,
                             "candidate_probability": c["p"], "candidate_logprob_nats": c["logprob"],
                             "next_word_begins_probability": c["p_next_word_begins"],
                             "item_word_probability": w["p_word"]})
        for t in record[side]["tokens"]:
            for c in t["expected"]:
                rows.append({"record": "expected_token", "model_id": model_id, "sentence": side, "sentence_text": text,
                             "index": t["index"], "item": t["token"] or "",
                             "context_text": t["context"], "rank": c["rank"],
                             "candidate": c["token"] if c["token"] is not None else END_OF_TEXT,
                             "candidate_probability": c["p"], "candidate_logprob_nats": c["logprob"]})
    return rows
