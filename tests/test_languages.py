"""The language table (accapp/data/languages.json, accapp/languages.py): complete rows, the guess of
typed text's language, a code the table lacks, agreement with the model registry and the benchmarks,
and no language named in the code that reads it (fast tier)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from accapp import languages
from accapp.benchmarks import BUILTIN
from accapp.errors import UserError

ROOT = Path(__file__).resolve().parents[1]


def test_every_row_is_complete_and_one_is_the_default():
    assert sum(lang.default for lang in languages.TABLE.values()) == 1
    for code, lang in languages.TABLE.items():
        assert len(code) == 2 and lang.name and lang.segmentation in languages.SEGMENTATIONS and lang.script
        assert all(lo <= hi for lo, hi in lang.recognised_by)
        yes_no = lang.answers.get("yes_no")
        assert yes_no is None or len(yes_no) == 2


def test_typed_text_is_recognised_by_the_tables_characters():
    default = languages.default()
    assert languages.detect("The cat sleeps.", "") == default
    for code, lang in languages.TABLE.items():
        for lo, _ in lang.recognised_by:
            assert languages.detect("x", "y" + chr(lo)) == code
    assert languages.detect(None or "") == default


def test_a_code_the_table_lacks_reads_as_itself_on_whitespace():
    lang = languages.get("xx")
    assert (lang.name, lang.segmentation, lang.recognised_by) == ("xx", "whitespace", ())
    assert languages.name(None) == "" and languages.get(None).code == languages.default()


def test_a_bad_row_is_refused_naming_what_is_wrong(tmp_path):
    (tmp_path / "t.json").write_text('{"qq": {"name": "Q", "segmentation": "morfessor"}}', encoding="utf-8")
    with pytest.raises(UserError, match="segmentation 'morfessor' is not one of whitespace, jieba"):
        languages.read_table(tmp_path / "t.json")
    (tmp_path / "t.json").write_text('{"qq": {"name": "Q", "unigram": "corpus"}}', encoding="utf-8")
    with pytest.raises(UserError, match="unigram 'corpus' is not one of wordfreq, spacy_lexemes"):
        languages.read_table(tmp_path / "t.json")
    (tmp_path / "t.json").write_text('{"qq": {"name": "Q", "tones": 4}}', encoding="utf-8")
    with pytest.raises(UserError, match="fields the table does not know: tones"):
        languages.read_table(tmp_path / "t.json")


def test_every_benchmark_and_every_registry_model_speaks_languages_of_the_table():
    from accapp.models import registry

    assert {b.language for b in BUILTIN.values()} <= set(languages.TABLE)
    assert {code for spec in registry().values() for code in spec.languages} <= set(languages.TABLE)


LANGUAGE_READERS = ("engine.py", "benchmarks.py", "ui/gallery.py", "service/verdicts.py", "cli/__init__.py",
                    "methods/prompting.py", "methods/unigram.py")


@pytest.mark.parametrize("module", LANGUAGE_READERS)
def test_the_modules_that_read_the_table_name_no_language(module):
    """No string constant that is a language code of the table, outside docstrings."""
    tree = ast.parse((ROOT / "accapp" / module).read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and id(n) not in docs and n.value in languages.TABLE]
    assert not found, (module, found)
