"""A benchmark in a third language is a descriptor file and its data, no code: tests/fixtures/toy_dutch/
(three Dutch minimal pairs, a descriptor with its own language row) read through ACCAPP_BENCHMARKS,
run through `bench` on a tiny random model and read back by `report`.

Fast tier: the descriptor read as accapp.benchmarks reads every file, put beside the built-in ones, and
the command line run in this process. Process tier: the same through the environment variable, in a
process of its own (the descriptors are read when accapp.benchmarks is imported)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accapp import benchmarks, languages
from tests import any_models as am
from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "fixtures" / "toy_dutch" / "benchmarks.json"


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory) -> Path:
    return am.gpt2_folder(tmp_path_factory.mktemp("toy-language-model"))


@pytest.fixture
def toy(monkeypatch):
    """The toy descriptors added as ACCAPP_BENCHMARKS adds them (the language table copied first, so its
    new row leaves with the test)."""
    monkeypatch.setattr(languages, "TABLE", dict(languages.TABLE))
    found = benchmarks._read_descriptors(TOY)
    for name, b in found.items():
        monkeypatch.setitem(benchmarks.BUILTIN, name, b)
    return found


def test_the_toy_descriptor_loads_with_its_language(toy):
    assert list(toy) == ["toy_dutch"]
    pairs = benchmarks.load_benchmark("toy_dutch")
    assert len(pairs) == toy["toy_dutch"].counts["items"] == 3
    assert list(pairs.columns[:6]) == benchmarks.COLUMNS and set(pairs.benchmark) == {"toy_dutch"}
    assert set(pairs.phenomenon) == set(toy["toy_dutch"].phenomena)
    assert benchmarks.language_of("toy_dutch") == "nl" and benchmarks.language_name("toy_dutch") == "Dutch"
    assert languages.get("nl").segmentation == "whitespace"
    assert languages.detect(*pairs.good) == languages.default()  # Latin script: never guessed from text


def test_the_toy_benchmark_runs_through_bench_and_report(toy, gpt2_folder, tmp_path):
    model = str(gpt2_folder)
    out = run_cli("bench", "--model", model, "--benchmark", "toy_dutch", "--methods", "lp,mean_lp",
                  "--out", tmp_path / "runs", "--consolidate-to", tmp_path / "results")
    assert out.returncode == 0, out.stderr
    manifest = json.loads(next((tmp_path / "results").glob("*.manifest.json")).read_text(encoding="utf-8"))
    assert manifest["benchmark"] == "toy_dutch" and manifest["language"] == "nl"
    report = run_cli("report", "--benchmark", "toy_dutch", "--model", model, "--results", tmp_path / "results",
                     "--format", "json")
    assert report.returncode == 0, report.stderr
    rows = json.loads(report.stdout)
    assert {r["method"] for r in rows} >= {"lp", "mean_lp"}
    (summary,) = (tmp_path / "results").glob("*.separation.json")  # written by the consolidation, read by report
    shipped = {r["metric"]: round(r["auc"], 4) for r in json.loads(summary.read_text(encoding="utf-8"))["rows"]}
    assert shipped == {r["method"]: r["auc"] for r in rows if r.get("measure") == "separation_auc"}  # 4 digits
    assert set(shipped) == {"lp", "mean_lp"}


@pytest.mark.process
def test_acc_benchmarks_names_the_toy_file_for_a_process_of_its_own(gpt2_folder, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACCAPP_BENCHMARKS": str(TOY)}
    done = subprocess.run([sys.executable, "-m", "accapp", "bench", "--model", str(gpt2_folder), "--benchmark",
                           "toy_dutch", "--methods", "lp", "--out", str(tmp_path / "runs")],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "toy_dutch" in done.stdout and "3 pairs" in done.stdout
