"""A benchmark is described once (accapp/data/benchmarks.json, read by accapp/benchmarks.py): its
descriptor is complete and true to the shipped data, and no code outside it names a built-in benchmark
(issue 33 part 2), so a new benchmark is a descriptor and its data. Fast tier: no model, no server."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd
import pytest

from accapp import benchmarks
from accapp.benchmarks import BUILTIN, LANGUAGE_NAMES

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "precomputed" / "published"


@pytest.mark.parametrize("name", list(BUILTIN))
def test_descriptor_is_complete_and_true_to_the_data(name):
    b = BUILTIN[name]
    assert b.name == name and b.label and b.language in LANGUAGE_NAMES and b.citation
    bib = (ROOT / "accapp" / "data" / "citations.bib").read_text(encoding="utf-8")
    assert re.search(rf"@\w+\{{{re.escape(b.bibkey)},", bib), b.bibkey
    pairs = benchmarks.load_benchmark(name)
    # every phenomenon of the data has its words on screen, and the descriptor names no other
    assert set(b.phenomena) == set(pairs.phenomenon), name
    # attractor paradigms are paradigms of the data
    assert set(b.attractors) <= set(pairs.paradigm)
    kind = b.human.get("kind")
    assert kind in ("per_paradigm", "overall", None) and b.human.get("label")
    if kind == "per_paradigm":
        human = pd.read_parquet(PUBLISHED / f"{b.human['table']}.parquet")
        assert set(human.paradigm) == set(pairs.paradigm) and human.human_accuracy.between(0, 1).all()
    if kind == "overall":
        human = pd.read_csv(ROOT / "accapp" / "data" / b.human["file"])
        assert list(human.benchmark) == [name] and human.source.str.len().min() > 0
    for key in ("paradigms", "models", "pll_by_paradigm", "pll"):
        if b.published.get(key):
            assert (PUBLISHED / f"{b.published[key]}.parquet").exists(), (name, key)


def test_labels_and_languages():
    assert benchmarks.label_of("blimp") == "BLiMP" and benchmarks.label_of("climp") == "CLiMP"
    assert benchmarks.label_of("my_pairs") == "my_pairs"  # a user's file keeps its name
    assert benchmarks.for_language("zh") == "climp" and benchmarks.for_language("xx") == benchmarks.NAMES[0]
    assert benchmarks.language_name("climp") == "Chinese" and benchmarks.language_name("mine.csv") == ""
    assert BUILTIN["blimp"].phenomenon_label("npi_licensing") == "NPI licensing"
    assert BUILTIN["blimp"].phenomenon_label("new_thing") == "new thing"


def _code_strings(path: Path):
    """(line, text) of every string constant of a module that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def test_no_code_names_a_builtin_benchmark_outside_its_descriptor():
    """No branch on a benchmark's name: no string constant that is a built-in benchmark's id, its bib key or
    one of its published tables, anywhere in accapp/ but the descriptor's loader (prose may say "BLiMP")."""
    names = set(BUILTIN)
    tables = {v for b in BUILTIN.values() for v in [b.human.get("table"), b.human.get("file"), *b.published.values()]
              if isinstance(v, str) and v}
    keys = {b.bibkey for b in BUILTIN.values()}
    found = []
    for path in sorted((ROOT / "accapp").rglob("*.py")):
        if path.name == "benchmarks.py" and path.parent.name == "accapp":
            continue
        for line, text in _code_strings(path):
            words = set(re.findall(r"[A-Za-z0-9_]+", text))
            if text in names or words & keys or any(re.search(rf"\b(published_)?{re.escape(t)}\b", text) for t in tables):
                found.append(f"{path.relative_to(ROOT)}:{line}: {text[:60]!r}")
    assert not found, "\n".join(found)


def test_the_guard_sees_a_branch_on_a_name(tmp_path):
    """The check above finds `bench == "blimp"` and a published table named in SQL."""
    mod = tmp_path / "m.py"
    mod.write_text('def f(bench):\n    """About blimp."""\n    if bench == "blimp":\n'
                   '        return "SELECT * FROM published_blimp2020_human"\n')
    texts = [t for _, t in _code_strings(mod)]
    assert texts == ["blimp", "SELECT * FROM published_blimp2020_human"]  # the docstring is prose
