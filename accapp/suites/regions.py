"""Region surprisal: the sum of the surprisals (bits) of a region's words, the probe's words.

A condition's sentence is its regions joined by spaces (accapp/suites/suite.py), each region
with its character span. The model's scored tokens (character offsets into the sentence and
log-probabilities in nats) become the probe's words first (accapp/words.py, and
accapp/scoring/word_prob.py's word log-probability: for tokenizers whose tokens carry the
leading space, with the correction of Pimentel & Meister 2024); each word then belongs to the
region whose span holds the word's first character, and a region's surprisal is the sum of its
words' surprisals in bits (an empty region: 0). So a region's surprisal is exactly the sum of
the probe's word surprisals over the words in it, and the regions of a sentence add up to the
sentence's (corrected) surprisal.

Tokens to regions: a token belongs to the word it overlaps most (words.py: the leftmost on a
tie; a lone space marker, e.g. "Ġ", to the next word), so through its word to that word's
region. Words never cross a region boundary (regions are joined by a space, and a space ends a
word), so a token that crosses a region boundary (one covering the space and more, such as a
multi-space or "word word" piece) goes whole to the region of the word it overlaps most; no
token is ever split. syntaxgym-core's rule for tokenizers with character offsets
(``compute_mapping_huggingface``) gives a token to the region in which it starts, the region's
left edge counted from the joining space before it; for every token that lies inside one word,
or is a space marker before one, the two rules agree. A start token (BOS) is never scored, so
it belongs to no region.

The leading-space correction moves log P(a new word follows) from the word after a word to the
word itself; at a region's first word it therefore moves probability between regions, as it
moves it between the probe's words. With the plain token sum instead (``corrected=False``) a
region is exactly the sum of its tokens' surprisals.
"""

from __future__ import annotations

from accapp.scoring.word_prob import word_records
from accapp.words import assign_words, split_words


def word_regions(words, spans) -> list[int]:
    """For each word (a dict with "start", or an object with .start) the 0-based index of the
    region whose span holds its first character. ValueError for a word outside every region."""
    out = []
    for w in words:
        s = w["start"] if isinstance(w, dict) else w.start
        k = next((k for k, (a, b) in enumerate(spans) if a <= s < b), None)
        if k is None:
            raise ValueError(f"a word at character {s} lies in no region")
        out.append(k)
    return out


def surprisals_from_words(words, spans, key: str = "surprisal_bits") -> list[float]:
    """Per region (in spans' order) the sum of its words' ``key`` (the probe's corrected surprisal
    in bits by default; "sum_surprisal_bits" for the plain token sum), summed in word order."""
    totals = [0.0] * len(spans)
    for w, r in zip(words, word_regions(words, spans)):
        totals[r] += float(w[key])
    return totals


def region_surprisals(sentence: str, spans, tokens, boundary=None, corrected: bool = True) -> list[float]:
    """Per region the surprisal in bits, from the sentence's scored tokens (dicts with start, end
    and logprob in nats, the engine's token view) and, for the leading-space correction, the
    boundary log-probs (n + 1 values, accapp.scoring.api.BoundaryRequest's answer). Without
    ``boundary`` (or with corrected=False) each word is the plain sum of its tokens."""
    offsets = [(int(t["start"]), int(t["end"])) for t in tokens]
    logprobs = [float(t["logprob"]) for t in tokens]
    words = word_records(sentence, offsets, logprobs, boundary if corrected else None)
    return surprisals_from_words(words, spans)


def token_regions(sentence: str, spans, offsets) -> list[int]:
    """For each token (start, end) the region it counts in (module doc), -1 when the sentence has no word."""
    words = split_words(sentence)
    owner = assign_words(offsets, [(w.start, w.end) for w in words])
    regions = word_regions([{"start": w.start} for w in words], spans)
    return [regions[w] if w >= 0 else -1 for w in owner]
