"""What the methods know of a language comes from the language table (accapp/data/languages.json): the
unigram source of SLOR and the unigram Bayes factor, and the prompts' Yes/No answer words."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from accapp import languages
from accapp.methods import unigram
from accapp.methods.base import Context
from accapp.methods.prompting import YesNoProbComp
from accapp.prompts import template_set


@pytest.fixture
def table(monkeypatch):
    monkeypatch.setattr(languages, "TABLE", dict(languages.TABLE))
    return languages.TABLE


def test_the_unigram_source_is_the_rows(table):
    assert unigram.shipped_forms(languages.default())
    assert {c for c in table if unigram.shipped_forms(c)} == {c for c, lang in table.items() if lang.unigram == "spacy_lexemes"}
    languages.add({"qq": {"name": "Q", "unigram": "spacy_lexemes"}, "qr": {"name": "R"}})
    assert unigram.shipped_forms("qq") and not unigram.shipped_forms("qr")


class _Vocab:
    """A tokenizer whose vocabulary holds only the given words as single tokens."""

    def __init__(self, words):
        self.words = set(words)

    def convert_tokens_to_ids(self, token):
        return 1 if token in self.words else None

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [1, 2]}  # two tokens: never one


def _yes_no(code, words, chat=False):
    lm = SimpleNamespace(tokenizer=_Vocab(words), spec=SimpleNamespace(is_chat=chat))
    return YesNoProbComp()._set(Context(lm, code))


def test_the_yes_no_words_are_the_rows_and_their_fallback_the_prompts():
    ide = template_set("ide2025")
    for code, lang in languages.TABLE.items():
        own = tuple(lang.answers["yes_no"])
        prompts, answers = _yes_no(code, own)
        assert answers == own and prompts == ide["yes_no"][code]["base"]
        fallback = f"{code}_answer_yes_no"
        prompts, answers = _yes_no(code, ())  # the row's words are not single tokens
        if fallback in ide["yes_no"]:
            assert answers == tuple(ide["answers"]["yes_no"][fallback]) and prompts == ide["yes_no"][fallback]["base"]
        else:
            assert answers == own
