"""Token unigram log-probabilities for Hu et al. 2025's Bayes factor (unigram) and SLOR.

Hu et al. count each model's tokens in a tokenized web corpus (FineWeb), case kept. No corpus
reaches these machines, so the counts are estimated from word-form frequencies: every form's
probability is spread over the model's tokens of that form as it appears in running text (one
occurrence of the form is one occurrence of each of its tokens); tokens no form covers get
add-lambda smoothing of half the smallest observed mass.

- English: the cased table `lexeme_prob` of the PyPI package spacy-lookups-data 1.0.5 (MIT;
  spaCy v2.2's English lexemes: Good-Turing smoothed log-probabilities of spaCy tokens in the
  Reddit comment corpus), its 200,000 most probable forms, shipped as data/unigram_en.json.gz
  (source, citation and license: data/unigram_en.md). spaCy tokens carry no spaces, so where a
  form stands in running text is estimated (surface_masses): closing punctuation and clitics
  ('s, n't, ...) follow the previous word directly; a word follows a space, except after an
  opening bracket or quote (every word alike) and at the start of a line (words that do not
  begin with a lower-case letter: capitals, digits, bullets), shares taken from the same table.
Which a language takes is its row's ``unigram`` in the language table (accapp/data/languages.json).

- Other languages (Chinese): the word lists of the PyPI package `wordfreq` (Speer 2022; CC-BY-SA),
  its 60,000 most frequent words with no space (Chinese has no case and no spaces).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from accapp import languages
from accapp.files import safe_name, write_atomic
from accapp.models.loading import cache_root

TOP_WORDS = 60_000  # wordfreq words per language
DATA_EN = Path(__file__).parent / "data" / "unigram_en.json.gz"
CLOSING = set(".,!?;:)]}%…")  # a form of these characters only follows the previous token directly
CLITICS = {"'s", "'m", "'re", "'ve", "'ll", "'d", "n't", "’s", "n’t"}  # spaCy splits these off their word
OPENING = {"(", "[", "{", "“", "‘"}  # the next word follows these directly
QUOTES = {'"', "'"}  # half opening, half closing


def form_kind(form: str) -> str:
    """'space' (a whitespace token), 'attached' (no space before it), 'quote', 'opening' or 'word'."""
    if not form.strip():
        return "space"
    if form in QUOTES:
        return "quote"
    if form in OPENING:
        return "opening"
    if form.lower() in CLITICS or set(form) <= CLOSING:
        return "attached"
    return "word"


def surface_masses(forms: dict[str, float]) -> dict[str, float]:
    """Probabilities of surface strings ({" The": p, "The": p, ".": p, ...}) from those of spaCy
    forms: a word's no-space share is (openers + half the quotes) / words, plus, for a word not
    beginning with a lower-case letter, line starts (whitespace tokens holding a newline) / such words."""
    kinds = {f: form_kind(f) for f in forms}
    mass = lambda *ks: sum(p for f, p in forms.items() if kinds[f] in ks)  # noqa: E731
    words = mass("word")
    upper = sum(p for f, p in forms.items() if kinds[f] == "word" and not f[0].islower())
    opened = mass("opening") + mass("quote") / 2  # words right after an opening bracket or quote
    lines = sum(p for f, p in forms.items() if kinds[f] == "space" and "\n" in f)  # line starts
    out: dict[str, float] = {}

    def add(text: str, p: float) -> None:
        out[text] = out.get(text, 0.0) + p

    for f, p in forms.items():
        kind = kinds[f]
        if kind in ("space", "attached"):
            add(f, p)
        elif kind in ("opening", "quote"):
            share = 0.5 if kind == "quote" else 0.0  # a closing quote follows its word directly
            add(f, p * share)
            add(" " + f, p * (1 - share))
        else:
            bare = opened / words + (lines / upper if not f[0].islower() else 0.0)
            bare = min(bare, 1.0)
            add(f, p * bare)
            add(" " + f, p * (1 - bare))
    return out


def encode_all(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids of many texts, as tokenizer(texts, add_special_tokens=False) gives them; a fast
    tokenizer's backend without offsets where it has one (faster: it skips the offsets and the Python wrapping)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if hasattr(backend, "encode_batch_fast"):
        return [e.ids for e in backend.encode_batch_fast(texts, add_special_tokens=False)]
    return tokenizer(texts, add_special_tokens=False)["input_ids"]


def token_logprobs(tokenizer, vocab_size: int, masses: dict[str, float]) -> np.ndarray:
    """log p_uni(token) for every id < vocab_size (float64): each string's mass added to each of
    its tokens, then add-lambda smoothing of half the smallest observed mass, then normalised."""
    texts = list(masses)
    encoded = encode_all(tokenizer, texts)
    ids = np.fromiter((i for e in encoded for i in e), dtype=np.int64)
    weights = np.repeat(np.array([masses[t] for t in texts], dtype=np.float64), [len(e) for e in encoded])
    keep = ids < vocab_size  # the tokenizer may know ids the output layer lacks
    counts = np.zeros(vocab_size, dtype=np.float64)
    np.add.at(counts, ids[keep], weights[keep])
    counts += counts[counts > 0].min() / 2
    return np.log(counts / counts.sum())


@lru_cache(maxsize=1)
def english_forms() -> dict[str, float]:
    """The shipped cased English forms {form: probability} (data/unigram_en.md)."""
    with gzip.open(DATA_EN, "rt", encoding="utf-8") as f:
        data = json.load(f)
    return {form: math.exp(lp) for form, lp in data["forms"]}


def wordfreq_masses(language: str, prefix: str = "") -> dict[str, float]:
    """wordfreq's TOP_WORDS most frequent words of `language` (lower case), each after `prefix`."""
    import wordfreq

    freqs = wordfreq.get_frequency_dict(language)
    words = sorted(freqs, key=freqs.get, reverse=True)[:TOP_WORDS]
    return {prefix + w: freqs[w] for w in words}


def shipped_forms(language: str) -> bool:
    """Whether a language's unigrams come from the shipped cased forms (data/unigram_en.json.gz), else
    from wordfreq: the language table's ``unigram`` (accapp/data/languages.json)."""
    return languages.get(language).unigram == "spacy_lexemes"


def estimate_unigram(tokenizer, vocab_size: int, language: str) -> np.ndarray:
    """log p_uni(token) for every id < vocab_size (float64); sources: the module docstring."""
    masses = surface_masses(english_forms()) if shipped_forms(language) else wordfreq_masses(language)
    return token_logprobs(tokenizer, vocab_size, masses)


def floor_count(table: np.ndarray) -> int:
    """How many tokens sit at the smoothing floor (no form covers them)."""
    return int(np.sum(table <= table.min() + 1e-9))


def unigram_logprobs(lm, language: str) -> np.ndarray:
    """Cached per model and language (a second start reads a .npy file)."""
    source = DATA_EN.name if shipped_forms(language) else f"wordfreq{TOP_WORDS}"
    key = hashlib.sha1(f"{lm.spec.id}|{language}|{source}|v2".encode()).hexdigest()[:12]
    path = Path(cache_root()) / "unigram" / f"{safe_name(lm.spec.id)}-{language}-{key}.npy"  # an id may be a path
    if path.exists():
        return np.load(path)
    table = estimate_unigram(lm.tokenizer, lm.vocab_size, language)

    def save(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file object: np.save would add ".npy" to a bare name
            np.save(f, table)

    write_atomic(path, save)
    return table
