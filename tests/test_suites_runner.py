"""The test-suite runner and report (accapp/runner/suites.py, accapp/analysis/suites.py,
accapp/cli/suites.py) on a tiny random-weight model (fast): a suite runs into one unit file with
its manifest, a rerun scores nothing, a changed suite is scored again, a killed run's temporary
file is removed, a user's JSON file runs and a bad one is one sentence; `report --suites` reads
the shipped precomputed files without loading a model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pandas as pd
import pytest

from accapp.analysis import suites as S
from accapp.engine import Engine, make_scorer
from accapp.errors import UserError
from accapp.files import temp_path
from accapp.runner import suites as R
from accapp.suites import catalog
from accapp.suites.score import COLUMNS
from tests.cli_in_process import run_cli
from tests.test_suites_reading import _suite_dict
from tests.threads import one_thread  # noqa: F401 - autouse: one torch thread for this module

MODEL = "smollm2-135m-instruct"
# Both embedded models' results ship in precomputed/suites; a model whose files are not there yet is
# skipped with the command that makes them, not passed.
MODELS = [pytest.param(m, marks=pytest.mark.skipif(
    not (S.DEFAULT_DIR / f"{m}__syntaxgym2020.manifest.json").is_file(),
    reason=f"no precomputed suite results for {m} yet: accapp bench --suite all --model {m} --consolidate-to "
           "precomputed/suites")) for m in ("smollm2-135m-instruct", "gemma3-270m")]


class Counting:
    """An engine that counts the sentences it scores."""

    def __init__(self, engine):
        self.engine, self.sentences = engine, 0

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def word_scores(self, texts):
        self.sentences += len(texts)
        return self.engine.word_scores(texts)


@pytest.fixture(scope="module")
def engine(tiny_llama):
    return Engine(make_scorer(tiny_llama))


@pytest.fixture()
def suite_file(tmp_path):
    path = tmp_path / "my_fgd.json"
    path.write_text(json.dumps(_suite_dict()), encoding="utf-8")
    return path


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    return proc.pid


def test_a_user_suite_runs_resumes_and_is_rescored_when_it_changes(engine, suite_file, tmp_path):
    out = tmp_path / "runs"
    sources = R.resolve_suites(str(suite_file))
    assert [(s.id, s.collection) for s in sources] == [("my_fgd", R.USER)]
    counting = Counting(engine)
    first = R.run_suites(counting, sources, out, progress=False)
    assert (first["suites_written"], first["suites_skipped"], first["items_scored"]) == (1, 0, 2)
    distinct = len({c.sentence for it in sources[0].suite.items for c in it.conditions})
    assert counting.sentences == distinct == 6  # 2 items x 4 conditions, the gap sentences alike
    rpath = R.regions_path(out, MODEL, R.USER, "my_fgd")
    regions = pd.read_parquet(rpath)
    assert list(regions.columns) == COLUMNS and len(regions) == 2 * 4 * 4
    meta = R.unit_manifest(rpath)
    assert {k: meta[k] for k in ("model", "suite", "sha256", "word_rule")} == {
        "model": MODEL, "suite": "my_fgd", "sha256": sources[0].sha256, "word_rule": engine.word_rule}
    assert "commit" in meta and meta["items"] == 2
    outcomes = pd.read_parquet(R.outcomes_path(out, MODEL, R.USER, "my_fgd"))
    assert list(outcomes.columns) == R.OUTCOME_COLUMNS and len(outcomes) == 2 * 2  # items x predictions
    values = json.loads(outcomes["values"].iloc[0])
    assert set(values) == {"(4;%what_gap%)", "(4;%that_gap%)"}
    bits = regions.set_index(["item", "condition", "region_number"])["surprisal_bits"]
    assert values["(4;%what_gap%)"] == bits[(1, "what_gap", 4)]
    assert outcomes["passed"].iloc[0] == (values["(4;%what_gap%)"] < values["(4;%that_gap%)"])

    # a rerun scores nothing; lost outcomes come back from the regions, without the model
    R.outcomes_path(out, MODEL, R.USER, "my_fgd").unlink()
    counting.sentences = 0
    again = R.run_suites(counting, R.resolve_suites(str(suite_file)), out, progress=False)
    assert (again["suites_written"], again["suites_skipped"], counting.sentences) == (1 - 1, 1, 0)
    pd.testing.assert_frame_equal(pd.read_parquet(R.outcomes_path(out, MODEL, R.USER, "my_fgd")), outcomes)

    # the same suite reformatted is the same suite; a changed one is scored again
    suite_file.write_text(json.dumps(_suite_dict(), indent=2), encoding="utf-8")
    assert R.run_suites(counting, R.resolve_suites(str(suite_file)), out, progress=False)["suites_skipped"] == 1
    changed = _suite_dict()
    changed["items"][0]["conditions"][0]["regions"][3]["content"] = "at the zoo."
    suite_file.write_text(json.dumps(changed), encoding="utf-8")
    counting.sentences = 0
    third = R.run_suites(counting, R.resolve_suites(str(suite_file)), out, progress=False)
    assert third["suites_written"] == 1 and counting.sentences == 6
    manifest = json.loads((R.run_dir(out, MODEL, R.USER) / "manifest.json").read_text())
    assert manifest["suites"]["my_fgd"]["sha256"] == R.resolve_suites(str(suite_file))[0].sha256


def test_a_rerun_removes_a_killed_runs_temporary_file(engine, suite_file, tmp_path):
    out = tmp_path / "runs"
    R.run_suites(engine, R.resolve_suites(str(suite_file)), out, progress=False)
    rpath = R.regions_path(out, MODEL, R.USER, "my_fgd")
    dead = temp_path(rpath, _dead_pid())
    dead.write_bytes(b"half a parquet file")
    alive = temp_path(rpath)  # this process's: a run still writing, left alone
    alive.write_bytes(b"being written")
    summary = R.run_suites(engine, R.resolve_suites(str(suite_file)), out, progress=False)
    assert summary["suites_skipped"] == 1
    assert not dead.exists() and alive.exists()
    alive.unlink()


def test_bench_suite_on_the_command_line_with_consolidation_and_report(engine, suite_file, tmp_path, monkeypatch):
    import accapp.cli

    monkeypatch.setattr(accapp.cli, "engine_from_args", lambda args: engine)
    out, store = tmp_path / "runs", tmp_path / "suites"
    done = run_cli("bench", "--suite", "center_embed", "--model", MODEL, "--out", out, "--consolidate-to", store)
    assert done.returncode == 0, done.stderr
    assert "written: 1, skipped (already done): 0" in done.stdout and "center_embed: accuracy" in done.stdout
    files = {p.name for p in store.iterdir()}
    assert files == {f"{MODEL}__syntaxgym2020.{k}" for k in ("regions.parquet", "outcomes.parquet", "manifest.json")}
    again = run_cli("bench", "--suite", "center_embed", "--model", MODEL, "--out", out)
    assert "written: 0, skipped (already done): 1" in again.stdout
    regions = pd.read_parquet(store / f"{MODEL}__syntaxgym2020.regions.parquet")
    items = len(catalog.load_suite("center_embed").items)
    assert list(regions.columns) == ["model", "suite"] + COLUMNS and regions["item"].nunique() == items

    report = run_cli("report", "--suites", "--model", MODEL, "--results", store, "--format", "json")
    assert report.returncode == 0, report.stderr
    rows = json.loads(report.stdout)
    assert [(r["suite"], r["circuit"], r["items"], r["predictions"]) for r in rows] == [
        ("center_embed", "Center Embedding", items, 1)]
    assert 0 <= rows[0]["ci_low"] <= rows[0]["accuracy"] <= rows[0]["ci_high"] <= 1
    assert rows[0]["published_gpt2"] == pytest.approx(
        catalog.published_accuracies("gpt-2-pretrained__0").set_index("suite").loc["center_embed", "accuracy"], abs=1e-4)

    # the user's file beside it: its own collection, not mixed into the shipped one
    mine = run_cli("bench", "--suite", suite_file, "--model", MODEL, "--out", out)
    assert mine.returncode == 0, mine.stderr and R.regions_path(out, MODEL, R.USER, "my_fgd").is_file()


@pytest.mark.parametrize("content, words", [
    ("{not json", "not valid JSON"),
    (json.dumps({**_suite_dict(), "predictions": [{"type": "formula", "formula": "__import__('os').system('x')"}]}),
     "Prediction 1"),
    (json.dumps({**_suite_dict(), "region_meta": {"1": "prefix", "2": "comp", "3": "embedded", "4": "end", "5": "x"}}),
     "lacks region 5"),
])
def test_a_bad_suite_file_is_one_sentence_before_any_model_loads(content, words, tmp_path, monkeypatch):
    import accapp.cli

    def no_model(args):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(accapp.cli, "engine_from_args", no_model)
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    done = run_cli("bench", "--suite", bad, "--model", MODEL, "--out", tmp_path / "runs")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: bad.json: ") and words in lines[0], done.stderr


def test_unknown_ids_and_missing_options_are_one_sentence(tmp_path):
    with pytest.raises(UserError, match="No shipped suite 'nope'"):
        R.resolve_suites("nope")
    assert len(R.resolve_suites("all")) == 34
    done = run_cli("bench", "--model", MODEL, "--out", tmp_path)
    assert done.returncode == 2 and "Give --benchmark (or --suite" in done.stderr
    done = run_cli("report", "--suites", "--model", "no-such-model")
    assert done.returncode == 2 and "No suite results for 'no-such-model'" in done.stderr


# ---- the shipped precomputed results -----------------------------------------------------------
@pytest.mark.parametrize("model", MODELS)
def test_report_suites_lists_the_34_shipped_suites_from_precomputed_files(model, monkeypatch):
    import accapp.cli

    monkeypatch.setattr(accapp.cli, "engine_from_args", lambda args: pytest.fail("a model was loaded"))
    done = run_cli("report", "--suites", "--model", model, "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    info = {s.id: s for s in catalog.list_suites()}
    assert sorted(r["suite"] for r in rows) == sorted(info) and len(rows) == 34
    for r in rows:
        assert r["items"] == info[r["suite"]].items and r["predictions"] == info[r["suite"]].predictions
        assert 0 <= r["accuracy"] <= 1 and r["circuit"] == info[r["suite"]].circuit
        assert r["published_gpt2"] is not None and "Hu et al. 2020" in r["published_gpt2_source"]
    by_circuit = json.loads(run_cli("report", "--suites", "--model", model, "--format", "json", "--by", "circuit").stdout)
    assert [r["circuit"] for r in by_circuit] == catalog.circuits()["circuits"] + ["SG score"]
    assert by_circuit[-1]["suites"] == 31
    table = run_cli("report", "--suites", "--model", model)
    assert table.returncode == 0 and "SG score" in table.stdout and "npi_orc_any" in table.stdout


@pytest.mark.parametrize("model", MODELS)
def test_the_shipped_outcomes_follow_from_the_shipped_regions(model):
    """Every shipped outcome is the suite's prediction evaluated again on the shipped region surprisals."""
    from accapp.suites.evaluate import evaluate_suite

    regions, outcomes = S.read(model, "regions"), S.read(model, "outcomes")
    manifest = S.manifests()[model]
    for sid, group in regions.groupby("suite"):
        suite = catalog.load_suite(sid)
        assert manifest["suites"][sid]["sha256"] == R.suite_sha256(suite)
        again = R.outcomes_frame(evaluate_suite(suite, group.drop(columns=["model", "suite"])))
        mine = outcomes[outcomes["suite"] == sid].drop(columns=["model", "suite"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, again, check_dtype=False)  # stored: small integer types
