"""The case-aware unigram table of SLOR and the unigram Bayes factor (accapp/methods/unigram.py):
by hand on a tiny frequency list (fast), and on SmolLM2's real tokenizer, no weights loaded (slow:
the full table tokenizes 400,000 strings)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from accapp.methods import unigram as U

SMOLLM_VOCAB = 49152  # SmolLM2's output layer
OLD_FLOOR_SHARE = 21_550 / 49_152  # the wordfreq (lower-case) table: 43.8 % of SmolLM2's tokens at the floor


class WordTokenizer:
    """A GPT-2-like toy tokenizer: a word with its leading space, a run of punctuation, a run of spaces."""

    def __init__(self, vocab: list[str]):
        self.ids = {t: i for i, t in enumerate(vocab)}

    def __call__(self, texts, add_special_tokens=False):
        return {"input_ids": [[self.ids[t] for t in re.findall(r" ?\w+|[^\w\s]+|\s+", s)] for s in texts]}


# A hand-made frequency list (probabilities of spaCy-style forms, summing to 1).
FORMS = {"the": 0.4, "The": 0.1, ".": 0.2, "\n": 0.05, "(": 0.05, "cat": 0.2}
VOCAB = ["the", " the", "The", " The", ".", "\n", "(", " ", "cat", " cat", "<never>"]


def test_surface_masses_by_hand():
    # Words: the, The, cat (0.7); after an opening bracket: 0.05 of them, 1/14 of each word bare.
    # Line starts (the newline, 0.05) go to words not beginning in lower case: The (0.1), half of it.
    got = U.surface_masses(FORMS)
    want = {"the": 0.4 / 14, " the": 0.4 * 13 / 14, "The": 0.1 * (1 / 14 + 1 / 2), " The": 0.1 * (1 / 2 - 1 / 14),
            ".": 0.2, "\n": 0.05, " (": 0.05, "(": 0.0, "cat": 0.2 / 14, " cat": 0.2 * 13 / 14}
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v), k
    assert sum(got.values()) == pytest.approx(1.0)


def test_token_logprobs_by_hand():
    # Each string's mass goes to each of its tokens (" (" is " " + "("); the floor is half the
    # smallest observed mass (cat: 0.2/14), added to all 11 tokens; the total is 1.05 + 11 floors.
    table = U.token_logprobs(WordTokenizer(VOCAB), len(VOCAB), U.surface_masses(FORMS))
    counts = [0.4 / 14, 0.4 * 13 / 14, 0.1 * (1 / 14 + 1 / 2), 0.1 * (1 / 2 - 1 / 14), 0.2, 0.05, 0.05, 0.05,
              0.2 / 14, 0.2 * 13 / 14, 0.0]
    floor = 0.2 / 14 / 2
    want = [math.log((c + floor) / (1.05 + 11 * floor)) for c in counts]
    assert table == pytest.approx(want, abs=1e-12)
    assert U.floor_count(table) == 1  # only <never>


def test_form_kinds():
    assert [U.form_kind(f) for f in (" ", "\n\n", "'s", "n't", ".", "?!", ")", '"', "(", "The", "2", "-")] == [
        "space", "space", "attached", "attached", "attached", "attached", "attached", "quote", "opening", "word", "word", "word"]


def test_shipped_data_is_cased_and_documented():
    forms = U.english_forms()
    assert len(forms) == 200_000
    assert forms["the"] > forms["The"] > forms["Kim"] > 0  # case kept: "The" is its own form
    assert U.DATA_EN.with_suffix("").with_suffix(".md").exists()  # source, citation, license beside it


@pytest.fixture(scope="module")
def smollm_table():
    from tests.tiny_models import tokenizer_for

    tok = tokenizer_for("smollm2-135m-instruct")
    return tok, U.estimate_unigram(tok, SMOLLM_VOCAB, "en")


def one_id(tok, text: str) -> int:
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == 1, (text, ids)
    return ids[0]


@pytest.mark.slow  # the full table: ~5 s of tokenizing
def test_the_far_above_the_floor(smollm_table):
    tok, table = smollm_table
    floor = table.min()
    assert table[one_id(tok, " the")] > -4.5  # among the most frequent tokens
    assert table[one_id(tok, "The")] > floor + 6
    assert table[one_id(tok, " the")] > table[one_id(tok, "The")]


@pytest.mark.slow  # the full table: ~5 s of tokenizing
def test_sentence_initial_capitals_off_the_floor(smollm_table):
    # BLiMP sentences start with a capitalised token and no space before it.
    tok, table = smollm_table
    for w in ("The", "It", "He", "She", "Who", "What", "This", "Many", "Some", "Every", "Kim", "Lisa"):
        ids = tok(w, add_special_tokens=False)["input_ids"]
        assert all(table[i] > table.min() + 3 for i in ids), w
    assert table[one_id(tok, " Kim")] > table.min() + 3


@pytest.mark.slow  # the full table: ~5 s of tokenizing
def test_floor_well_below_the_lower_case_table(smollm_table):
    _, table = smollm_table
    assert U.floor_count(table) / SMOLLM_VOCAB < OLD_FLOOR_SHARE / 2
    assert np.exp(table).sum() == pytest.approx(1.0)


@pytest.mark.slow  # the full table: ~5 s of tokenizing
def test_fast_encoding_matches_the_tokenizer(smollm_table):
    tok, _ = smollm_table
    texts = list(U.surface_masses(dict(list(U.english_forms().items())[:2000])))
    assert U.encode_all(tok, texts) == tok(texts, add_special_tokens=False)["input_ids"]
