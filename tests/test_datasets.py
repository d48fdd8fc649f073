"""The shipped datasets are what their descriptors and docs/datasets.md say (fast tier: no model).

Every built-in benchmark's file holds the items, paradigms and phenomena its descriptor counts (what
scripts/convert_hu2025_datasets.py and scripts/convert_benchmarks.py printed), docs/datasets.md's
table gives the same counts and the paper's, and every descriptor has a shape, a language of the
language table, a source, a licence and a citation with its BibTeX entry. Loading: every id loads in
the columns of its shape; an unknown id, or a data file that fits no shape, is one sentence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from accapp import benchmarks, languages
from accapp.benchmarks import BUILTIN, COLUMNS, SENTENCE_COLUMNS, SHAPES
from accapp.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "datasets.md"
SHIPPED = json.loads((ROOT / "accapp" / "data" / "benchmarks.json").read_text(encoding="utf-8"))
NAMES = [n for n in SHIPPED if not n.startswith("_")]


def _doc_rows() -> dict[str, dict]:
    """docs/datasets.md's counts table: | id | items | paradigms | phenomena | Table 1a | ..."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[0] in SHIPPED:
            num = [int(c.replace(",", "")) if re.fullmatch(r"[\d,]+", c) else None for c in cells[1:5]]
            rows[cells[0]] = dict(zip(("items", "paradigms", "phenomena", "paper"), num))
    return rows


@pytest.mark.parametrize("name", NAMES)
def test_descriptor_is_complete(name):
    b = BUILTIN[name]
    assert b.shape in SHAPES and b.language in languages.TABLE
    assert b.source and b.licence and b.citation and b.label
    bib = (ROOT / "accapp" / "data" / "citations.bib").read_text(encoding="utf-8")
    assert re.search(rf"@\w+\{{{re.escape(b.bibkey)},", bib), b.bibkey
    assert set(b.counts) == {"items", "paradigms", "phenomena"}
    assert b.phenomena_from in ("source", "project")


@pytest.mark.parametrize("name", NAMES)
def test_shipped_file_holds_what_the_descriptor_and_the_docs_count(name):
    b = BUILTIN[name]
    df = pd.read_parquet(b.data_path)
    assert (len(df), df.paradigm.nunique(), df.phenomenon.nunique()) == (
        b.counts["items"], b.counts["paradigms"], b.counts["phenomena"]), name
    doc = _doc_rows()[name]
    assert (doc["items"], doc["paradigms"], doc["phenomena"]) == tuple(b.counts[k] for k in ("items", "paradigms", "phenomena"))
    assert doc["paper"] == b.reference_counts.get("items"), name


def test_counts_of_hu_et_al_table_1a():
    """Table 1a's items for the datasets the app ships: equal where the docs say so, else explained there."""
    table_1a = {"blimp": 66993, "scamp_plausible": 67000, "scamp_implausible": 67000, "syntaxgym": 1018,
                "zhoblimp": 35400, "sling": 39976, "cola": 8551}
    for name, items in table_1a.items():
        assert BUILTIN[name].reference_counts["items"] == items, name
    differ = [n for n in table_1a if BUILTIN[n].counts["items"] != table_1a[n]]
    assert differ == ["blimp"]  # it keeps its 7 pairs of identical sentences (ties); docs/datasets.md says so


@pytest.mark.parametrize("name", NAMES)
def test_every_id_loads_in_the_columns_of_its_shape(name):
    df = benchmarks.load_benchmark(name)
    want = SENTENCE_COLUMNS if BUILTIN[name].shape == "sentences" else COLUMNS
    assert list(df.columns[:len(want)]) == want and set(df.benchmark) == {name}
    if BUILTIN[name].shape == "sentences":
        assert set(df.label) <= {0, 1}
    else:
        assert df.good.str.len().min() > 0 and df.bad.str.len().min() > 0


def test_an_unknown_id_gets_one_sentence_listing_the_known_ones():
    with pytest.raises(UserError) as exc:
        benchmarks.load_benchmark("no_such_benchmark")
    text = str(exc.value)
    assert all(name in text for name in BUILTIN) and text.count(". ") == 0


def test_a_data_file_of_an_unknown_shape_gets_one_sentence_naming_what_was_found(tmp_path, monkeypatch):
    (tmp_path / "d.csv").write_text("text,score\nA b.,1\n", encoding="utf-8")
    descriptor = {"odd": {"label": "Odd", "language": "en", "citation": "x", "bibkey": "", "shape": "sentences",
                          "data": "d.csv"}}
    (tmp_path / "b.json").write_text(json.dumps(descriptor), encoding="utf-8")
    monkeypatch.setattr(languages, "TABLE", dict(languages.TABLE))
    monkeypatch.setitem(BUILTIN, "odd", benchmarks._read_descriptors(tmp_path / "b.json")["odd"])
    with pytest.raises(UserError, match=r"described as sentences \(sentence, label\).*columns text, score\.$"):
        benchmarks.load_benchmark("odd")
    pd.DataFrame({"text": ["A b."], "score": [1]}).to_parquet(tmp_path / "d.parquet")
    descriptor["odd"]["data"] = "d.parquet"
    (tmp_path / "b.json").write_text(json.dumps(descriptor), encoding="utf-8")
    monkeypatch.setitem(BUILTIN, "odd", benchmarks._read_descriptors(tmp_path / "b.json")["odd"])
    with pytest.raises(UserError, match=r"described as sentences \(sentence, label\).*columns text, score"):
        benchmarks.load_benchmark("odd")
    descriptor["odd"]["shape"] = "trees"
    (tmp_path / "b.json").write_text(json.dumps(descriptor), encoding="utf-8")
    with pytest.raises(UserError, match="has shape 'trees'; the shapes are pairs, rated_pairs, sentences"):
        benchmarks._read_descriptors(tmp_path / "b.json")


def test_single_sentences_go_to_the_sentence_runner_and_the_pair_runner_refuses_them(tmp_path):
    from accapp.runner.runner import BenchmarkRun, check_scorable

    info = {"model": "m", "language": "en", "templates": {}, "methods": []}
    sentences = next(n for n in NAMES if BUILTIN[n].shape == "sentences")
    assert check_scorable(sentences) == "sentences"  # bench scores them (runner/sentences.py)
    with pytest.raises(UserError, match="not pairs: this runner scores minimal pairs only"):
        BenchmarkRun(tmp_path, sentences, info, progress=False)


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory) -> Path:
    from tests import any_models as am

    return am.gpt2_folder(tmp_path_factory.mktemp("datasets-model"))


@pytest.mark.parametrize("name", [n for n in NAMES if SHIPPED[n].get("shape", "pairs") != "sentences"])
def test_bench_takes_every_pair_id(name, gpt2_folder, tmp_path):
    """`bench --benchmark ID` on a tiny random model: one pair of one paradigm, under the id's name."""
    from tests.cli_in_process import run_cli

    paradigm = sorted(set(pd.read_parquet(BUILTIN[name].data_path, columns=["paradigm"]).paradigm))[0]
    out = run_cli("bench", "--model", gpt2_folder, "--benchmark", name, "--methods", "lp", "--per-paradigm", 1,
                  "--paradigms", paradigm, "--out", tmp_path)
    assert out.returncode == 0, out.stderr
    assert f" {name}: " in out.stdout and "1 pairs" in out.stdout
