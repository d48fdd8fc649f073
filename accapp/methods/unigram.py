"""Token unigram log-probabilities for Hu et al. 2025's Bayes factor (unigram) and SLOR.

Hu et al. estimate each model's token frequencies by tokenizing a web corpus (FineWeb);
no corpus reaches these machines, so the estimate here comes from the word frequency
lists of the PyPI package `wordfreq` (Speer 2022; CC-BY-SA, built from Wikipedia,
subtitles, news, books, web text, Twitter and Reddit). Each of the 60,000 most frequent words of the
language spreads its frequency over the model's tokens of that word as it appears in
running text (with a leading space in English; none in Chinese). Tokens no word covers
(punctuation, rare pieces) get add-lambda smoothing of half the smallest observed mass.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from accapp.files import write_atomic
from accapp.models.loading import cache_root

TOP_WORDS = 60_000


def estimate_unigram(tokenizer, vocab_size: int, language: str) -> np.ndarray:
    """log p_uni(token) for every id < vocab_size (float64)."""
    import wordfreq

    freqs = wordfreq.get_frequency_dict(language)
    words = sorted(freqs, key=freqs.get, reverse=True)[:TOP_WORDS]
    prefix = " " if language == "en" else ""
    encoded = tokenizer([prefix + w for w in words], add_special_tokens=False)["input_ids"]
    counts = np.zeros(vocab_size, dtype=np.float64)
    for w, ids in zip(words, encoded):
        for i in ids:
            if i < vocab_size:
                counts[i] += freqs[w]
    floor = counts[counts > 0].min() / 2
    counts += floor
    return np.log(counts / counts.sum())


def unigram_logprobs(lm, language: str) -> np.ndarray:
    """Cached per model and language (a second start reads a .npy file)."""
    key = hashlib.sha1(f"{lm.spec.id}|{language}|{TOP_WORDS}|v1".encode()).hexdigest()[:12]
    path = Path(cache_root()) / "unigram" / f"{lm.spec.id}-{language}-{key}.npy"
    if path.exists():
        return np.load(path)
    table = estimate_unigram(lm.tokenizer, lm.vocab_size, language)

    def save(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file object: np.save would add ".npy" to a bare name
            np.save(f, table)

    write_atomic(path, save)
    return table
