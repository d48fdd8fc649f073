"""Single labelled sentences through the runner, and the separation AUC of pooled strings.

A toy benchmark of shape "sentences" (tests/fixtures/toy_sentences/: six labelled sentences in two
paradigms, added as ACCAPP_BENCHMARKS adds a descriptor file) runs on a tiny random Llama-style model
under the per-string methods, resumes and consolidates; the AUC is sklearn's and a hand count's; the
report reads the shipped CoLA results without loading a model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pytest import approx
from sklearn.metrics import roc_auc_score

from accapp import benchmarks
from accapp.analysis.separation import auc, auc_interval, bad_below, resampled_aucs
from accapp.engine import Engine, make_scorer
from accapp.errors import UserError
from accapp.runner import sentences
from accapp.runner.runner import consolidated_path, manifest_beside
from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "fixtures" / "toy_sentences" / "benchmarks.json"
PER_STRING = ["lp", "mean_lp", "pen_lp", "bayes_factor_uniform", "bayes_factor_unigram", "slor"]
SHIPPED = ROOT / "precomputed" / "results" / "smollm2-135m-instruct__cola.parquet"


@pytest.fixture
def toy(monkeypatch):
    for name, b in benchmarks._read_descriptors(TOY).items():
        monkeypatch.setitem(benchmarks.BUILTIN, name, b)
    return "toy_sentences"


@pytest.fixture()
def engine(tiny_llama):
    return Engine(make_scorer(tiny_llama))


def _units(out: Path) -> dict[tuple[str, str], pd.DataFrame]:
    folder = out / "smollm2-135m-instruct" / "toy_sentences" / "units"
    return {(p.parent.parent.name, p.parent.name): pd.read_parquet(p) for p in folder.rglob("*.parquet")}


# ------------------------------------------------------------------------------------ the runner
def test_sentences_run_under_every_per_string_method_resume_and_consolidate(toy, engine, tmp_path):
    out = tmp_path / "runs"
    summary = sentences.run_sentences(engine, toy, "all", out, progress=False)
    assert (summary["units_written"], summary["sentences_scored"], summary["sentences_failed"]) == (12, 6, 0)
    units = _units(out)
    assert set(units) == {(p, m) for p in ("a", "b") for m in PER_STRING}
    lp = units[("a", "lp")].set_index("sentence_id")
    assert list(lp.index) == ["0", "1", "2"] and list(lp.label) == [1, 0, 1] and set(lp.unit) == {"log"}
    assert set(units[("a", "mean_lp")].unit) == {"log/token"}
    # each score is the one a pair gives the same sentence (one scorer, one request per string)
    pair = engine.score_pair("The dog barks.", "The dog bark the.", PER_STRING, "en")
    for s in pair.scores:
        row = units[("a", s.method)].set_index("sentence_id")
        assert row.loc["0", "score"] == approx(s.score_good, abs=1e-4)
        assert row.loc["1", "score"] == approx(s.score_bad, abs=1e-4)
    assert lp.loc["0", "len"] == pair.len_good

    again = sentences.run_sentences(engine, toy, "all", out, progress=False)
    assert (again["units_written"], again["units_skipped"], again["sentences_scored"]) == (0, 12, 0)
    (out / "smollm2-135m-instruct" / "toy_sentences" / "units" / "b" / "slor" / "-.parquet").unlink()
    resumed = sentences.run_sentences(engine, toy, "all", out, progress=False)
    assert (resumed["units_written"], resumed["units_skipped"], resumed["sentences_scored"]) == (1, 11, 3)

    (path,) = sentences.consolidate(out, tmp_path / "results")
    assert path == consolidated_path(tmp_path / "results", "smollm2-135m-instruct", toy)
    df = pd.read_parquet(path)
    assert len(df) == 36 and df.score.dtype == np.float32 and list(df.columns) == sentences.SENTENCE_ROW_COLUMNS
    manifest = json.loads(manifest_beside(path).read_text(encoding="utf-8"))
    assert manifest["shape"] == "sentences" and manifest["sentences_by_method"] == {m: 6 for m in PER_STRING}

    fresh = tmp_path / "restored"
    assert sentences.restore_units(path, fresh) == 12
    assert sentences.run_sentences(engine, toy, "all", fresh, progress=False)["sentences_scored"] == 0


def test_a_method_that_needs_a_pair_is_refused_in_one_sentence(toy, engine, tmp_path):
    with pytest.raises(UserError, match=r"ab_prompting compare the two sentences of a pair .* lp, mean_lp"):
        sentences.run_sentences(engine, toy, "lp,ab_prompting", tmp_path, progress=False)
    done = run_cli("bench", "--benchmark", toy, "--model", "smollm2-135m-instruct", "--methods", "in_template_lp",
                   "--out", tmp_path)
    assert done.returncode == 2 and "cannot score a single sentence" in done.stderr
    done = run_cli("bench", "--benchmark", "no_such_id", "--out", tmp_path)
    assert done.returncode == 2 and "the known ones are blimp" in done.stderr


def test_bench_and_report_on_the_toy_sentences(toy, tiny_llama, tmp_path, monkeypatch):
    from accapp import cli

    monkeypatch.setattr(cli, "engine_from_args", lambda args: Engine(make_scorer(tiny_llama)))
    done = run_cli("bench", "--benchmark", toy, "--model", "smollm2-135m-instruct", "--out", tmp_path / "runs",
                   "--consolidate-to", tmp_path / "results")
    assert done.returncode == 0, done.stderr
    assert "6 sentences" in done.stdout and "consolidated:" in done.stdout
    report = run_cli("report", "--benchmark", toy, "--results", tmp_path / "results", "--format", "json")
    assert report.returncode == 0, report.stderr
    rows = {r["method"]: r for r in json.loads(report.stdout)}
    assert set(rows) == set(PER_STRING)
    assert all(r["measure"] == "separation_auc" and (r["n_good"], r["n_bad"]) == (3, 3) for r in rows.values())
    table = run_cli("report", "--benchmark", toy, "--results", tmp_path / "results")
    assert table.returncode == 0 and "separation AUC" in table.stdout


# ------------------------------------------------------------------------------------ the AUC
def test_auc_by_hand_and_by_sklearn():
    # goods 3 5 1 against bads 2 4 0: 3 beats 2 and 0, 5 beats all three, 1 beats 0 -> 6 of 9
    assert auc([3, 5, 1], [2, 4, 0]) == approx(6 / 9)
    # a tie counts one half: 1 beats 0 0; 2 beats 0 0 and ties 2; 3 beats all -> 7.5 of 9
    assert auc([1, 2, 3], [2, 0, 0]) == approx(7.5 / 9)
    rng = np.random.default_rng(3)
    good, bad = np.round(rng.normal(0.5, 1, 40), 1), np.round(rng.normal(0, 1, 30), 1)
    y = np.r_[np.ones(40), np.zeros(30)]
    assert auc(good, bad) == approx(roc_auc_score(y, np.r_[good, bad]))
    assert np.isnan(auc([1.0], []))


def test_counts_give_sklearns_weighted_auc():
    """A resample is counts per distinct score: its AUC is sklearn's with those counts as weights."""
    rng = np.random.default_rng(5)
    values = np.arange(6.0)
    good_counts, bad_counts = rng.integers(0, 4, 6), rng.integers(0, 4, 6)
    scores, y = np.r_[values, values], np.r_[np.ones(6), np.zeros(6)]
    expected = roc_auc_score(y, scores, sample_weight=np.r_[good_counts, bad_counts])
    assert (good_counts * bad_below(bad_counts)).sum() / (good_counts.sum() * bad_counts.sum()) == approx(expected)


def test_resampled_aucs_are_those_of_the_same_draws_and_the_interval_scipys():
    rng = np.random.default_rng(7)
    good, bad = np.round(rng.normal(0.4, 1, 25), 1), np.round(rng.normal(0, 1, 20), 1)
    got = resampled_aucs(good, bad, n_resamples=50, seed=11)
    draws = np.random.default_rng(11)  # one chunk: the bad strings' draws, then the good's
    b = draws.integers(0, len(bad), size=(50, len(bad)))
    g = draws.integers(0, len(good), size=(50, len(good)))
    assert got == approx([auc(good[g[k]], bad[b[k]]) for k in range(50)])
    from scipy import stats

    lo, hi = auc_interval(good, bad)
    ref = stats.bootstrap((good, bad), auc, vectorized=False, n_resamples=1000, method="percentile",
                          random_state=0).confidence_interval
    assert lo < auc(good, bad) < hi
    assert (lo, hi) == (approx(ref.low, abs=0.03), approx(ref.high, abs=0.03))
    assert auc_interval(good, bad) == (lo, hi)  # seeded
    assert all(np.isnan(auc_interval([1.0], [0.0, 2.0])))


# ------------------------------------------------------------------------------------ CoLA as shipped
@pytest.mark.skipif(not SHIPPED.exists(), reason="CoLA's results for SmolLM2 are not in precomputed/results")
def test_report_gives_colas_separation_auc_for_lp_and_slor_without_a_model():
    done = run_cli("report", "--benchmark", "cola", "--model", "smollm2-135m-instruct", "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = {r["method"]: r for r in json.loads(done.stdout)}
    assert {"lp", "slor"} <= set(rows)
    for r in rows.values():
        # CoLA's 8,551 less the 3 with a control character (U+0008), refused by the input check
        assert r["measure"] == "separation_auc" and r["strings"] == 8548
        assert 0 <= r["ci_low"] <= r["auc"] <= r["ci_high"] <= 1
