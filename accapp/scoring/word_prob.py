"""Word log-probabilities and surprisals from token log-probs: the plain sum, and the word
probability corrected for tokenizers whose tokens carry the leading space.

Words are the project's (accapp/words.py); a token belongs to the word its characters
overlap (``assign_words``). Two values per word w, in nats:

- ``logprob_sum``: the sum of log p over w's tokens (in token order, float64), what most
  papers call a word's surprisal;
- ``logprob``: log p(w | context), after Pimentel & Meister (2024, "How to Compute the
  Probability of a Word") and Oh & Schuler (2024). With tokens that carry the leading space
  ("Ġthe", "▁the") a word's end is only known when the next token begins a new word, so

      log p(w | c) = sum log p(tokens of w) + log P(B | c, w) - log P(B | c)

  where B is the set of tokens that begin a new word (accapp/scoring/boundary.py: whitespace,
  punctuation, CJK, special tokens; after punctuation or a CJK character every token) and
  P(B | x) the model's probability that the next token after x is in B. Given
  ``boundary[k]`` = log P(B | start token + the first k tokens), k = 0..n (``BoundaryRequest``;
  boundary[0] = 0: at the start of the sentence every token begins a word), a word owning
  tokens a..b-1 gets ``logprob_sum + boundary[b] - boundary[a]``.

  The correction telescopes: summed over the words of a sentence (whose tokens are the
  sentence's tokens, in order), the corrected log-probs give LP + boundary[n], the sentence's
  log-prob times the probability that a new word (or the end) follows it.

A word that owns no token (a token covering two CJK characters belongs to the first, see
words.py) gets 0 for both values and ``no_token`` True; its correction is 0 as well
(boundary[a] - boundary[a]), so the identity above still holds.

Records (one dict per word, in order):
    index, word, start, end (character offsets, end exclusive), tokens (token indices),
    logprob_sum, logprob, correction (= logprob - logprob_sum), surprisal_nats,
    surprisal_bits (of ``logprob``), sum_surprisal_nats, sum_surprisal_bits (of
    ``logprob_sum``), no_token, correction_applies (False: ``logprob`` is the plain sum).
"""

from __future__ import annotations

import math

import numpy as np

from accapp.words import assign_words, split_words

WORD_RULE_CORRECTED = "word probability with the leading-space correction (Pimentel & Meister 2024)"
WORD_RULE_SUM = "sum of the word's tokens"
LN2 = math.log(2.0)


def _record(index: int, word: str, start: int, end: int, tokens: list[int], logprob_sum: float, logprob: float,
            applies: bool) -> dict:
    return {
        "index": index,
        "word": word,
        "start": start,
        "end": end,
        "tokens": list(tokens),
        "logprob_sum": logprob_sum,
        "logprob": logprob,
        "correction": logprob - logprob_sum,
        "surprisal_nats": 0.0 - logprob,
        "surprisal_bits": (0.0 - logprob) / LN2,
        "sum_surprisal_nats": 0.0 - logprob_sum,
        "sum_surprisal_bits": (0.0 - logprob_sum) / LN2,
        "no_token": not tokens,
        "correction_applies": applies,
    }


def word_records(text: str, offsets, logprobs, boundary=None) -> list[dict]:
    """One record per word of `text` (module doc), from its tokens' character offsets (start,
    end) and log-probs (nats), and optionally ``boundary`` (n + 1 values, BoundaryRequest's
    result). Without it ``logprob`` equals ``logprob_sum`` and ``correction_applies`` is False."""
    lps = [float(x) for x in np.asarray(logprobs, dtype=np.float64)]
    if len(lps) != len(offsets):
        raise ValueError(f"{len(offsets)} token offsets but {len(lps)} log-probs")
    bnd = None
    if boundary is not None:
        bnd = np.asarray(boundary, dtype=np.float64)
        if bnd.shape != (len(lps) + 1,):
            raise ValueError(f"boundary needs {len(lps) + 1} values (tokens + 1), got {bnd.shape}")
    words = split_words(text)
    owner = assign_words(offsets, [(w.start, w.end) for w in words])
    owned: list[list[int]] = [[] for _ in words]
    for t, w in enumerate(owner):
        if w >= 0:
            owned[w].append(t)
    out = []
    at = 0  # where the next word's tokens begin (a word without tokens sits here)
    for w, toks in zip(words, owned):
        total = 0.0
        for t in toks:
            total += lps[t]
        if toks:
            a, b = toks[0], toks[-1] + 1
            at = b
        else:
            a = b = at
        corrected = total + (float(bnd[b]) - float(bnd[a])) if bnd is not None and toks else total
        out.append(_record(w.index, w.text, w.start, w.end, toks, total, corrected, bnd is not None))
    return out


def sum_records(words) -> list[dict]:
    """Records whose ``logprob`` is the given per-word sum (a masked LM's PLL-word-l2r, where the
    leading-space correction does not apply). words: dicts or objects with index, text (or
    word), start, end, tokens and logprob_sum."""
    out = []
    for w in words:
        get = w.get if isinstance(w, dict) else (lambda k, _w=w: getattr(_w, k, None))
        text = get("word") if get("word") is not None else get("text")
        total = float(get("logprob_sum"))
        out.append(_record(int(get("index")), text, int(get("start")), int(get("end")), list(get("tokens")),
                           total, total, False))
    return out
