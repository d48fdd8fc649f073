"""The separation summaries shipped beside the results (accapp.analysis.separation: write_summary,
read_summary): every shipped run has a current one, a summary holds exactly what the bootstrap computes,
and one that no longer matches its run (the file changed, more rows, other settings, damaged) is not read.

Fast tier: real shipped files and a real DuckDB store, no model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from accapp.analysis import separation as SEP
from accapp.store import Store
from accapp.store.store import DEFAULT_RESULTS_DIR

SMALL = "smollm2-135m-instruct__syntaxgym"  # 1,018 pairs: its bootstrap takes a fraction of a second


@pytest.fixture(scope="module")
def shipped():
    with Store() as store:
        yield store


def computed(store, model, bench):
    """The intervals made now from the run's scores, never read from a summary."""
    return SEP.intervals_of(SEP.pooled_scores(store, model, bench), model, bench)


def test_every_shipped_run_with_a_per_string_measure_has_a_current_summary(shipped):
    runs = {(m, b) for m, b in shipped.catalog()[["model", "benchmark"]].itertuples(index=False)
            if set(shipped.methods(m, b)) & set(SEP.SEPARATION_METRICS)}
    runs |= set(shipped.sentence_catalog()[["model", "benchmark"]].itertuples(index=False))
    assert ("smollm2-135m-instruct", "blimp") in runs and ("gemma3-270m", "cola") in runs
    stale = sorted(f"{m}__{b}" for m, b in runs if SEP.read_summary(shipped, m, b) is None)
    assert not stale, f"run `python scripts/separation_summaries.py`: not current for {stale}"


@pytest.mark.parametrize("model,bench", [("smollm2-135m-instruct", "syntaxgym"), ("gemma3-270m", "syntaxgym"),
                                         ("gemma3-270m", "climp"), ("gemma3-270m", "cola")])
def test_a_shipped_summary_is_exactly_what_the_bootstrap_computes(shipped, model, bench):
    summary = SEP.read_summary(shipped, model, bench)
    pd.testing.assert_frame_equal(summary, computed(shipped, model, bench), check_exact=True)
    assert len(summary) == 6 and summary.n_good.min() >= 480


def test_separation_intervals_reads_the_summary_and_a_subset_of_its_measures(shipped):
    model, bench = "gemma3-270m", "climp"
    whole = SEP.read_summary(shipped, model, bench)
    pd.testing.assert_frame_equal(SEP.separation_intervals(shipped, model, bench), whole)
    two = SEP.separation_intervals(shipped, model, bench, ["slor", "lp"])
    assert list(two.metric) == ["lp", "slor"]
    pd.testing.assert_frame_equal(two, whole[whole.metric.isin(["lp", "slor"])].reset_index(drop=True))


@pytest.fixture
def copy(tmp_path) -> Path:
    """A results folder holding one small shipped run, its manifest and its summary."""
    for suffix in (".parquet", ".manifest.json", SEP.SUMMARY_SUFFIX):
        shutil.copy(DEFAULT_RESULTS_DIR / (SMALL + suffix), tmp_path)
    return tmp_path


def test_a_changed_results_file_is_computed_again(copy):
    path = copy / (SMALL + ".parquet")
    df = pd.read_parquet(path)
    first = df.index[df.method == "lp"][0]
    df.loc[first, "score_good"] = df.score_good[df.method == "lp"].max() + 50.0  # one string now tops them all
    df.to_parquet(path, index=False)
    with Store(copy) as store:
        assert SEP.read_summary(store, "smollm2-135m-instruct", "syntaxgym") is None
        now = SEP.separation_intervals(store, "smollm2-135m-instruct", "syntaxgym")
        pd.testing.assert_frame_equal(now, computed(store, "smollm2-135m-instruct", "syntaxgym"))
    old = json.loads((copy / (SMALL + SEP.SUMMARY_SUFFIX)).read_text(encoding="utf-8"))["rows"]
    assert now.set_index("metric").auc["lp"] > next(r["auc"] for r in old if r["metric"] == "lp")


def test_more_rows_of_the_run_in_another_file_make_the_summary_stale(copy):
    df = pd.read_parquet(copy / (SMALL + ".parquet"))
    extra = df[df.method == "lp"].head(5).assign(pair_id=lambda d: d.pair_id.astype(str) + "-extra")
    extra.to_parquet(copy / "more.parquet", index=False)
    with Store(copy) as store:
        assert SEP.read_summary(store, "smollm2-135m-instruct", "syntaxgym") is None
        assert SEP.separation_intervals(store, "smollm2-135m-instruct", "syntaxgym").set_index("metric").strings["lp"] == (
            2 * (df.method == "lp").sum() + 10)


def test_other_settings_or_a_damaged_summary_compute_again(copy):
    summary = copy / (SMALL + SEP.SUMMARY_SUFFIX)
    with Store(copy) as store:
        few = SEP.separation_intervals(store, "smollm2-135m-instruct", "syntaxgym", n_resamples=50)
        read = SEP.read_summary(store, "smollm2-135m-instruct", "syntaxgym")
        assert not few.ci_low.equals(read.ci_low)  # 50 resamples, not the summary's 1,000
        summary.write_text("{not json", encoding="utf-8")
        assert SEP.read_summary(store, "smollm2-135m-instruct", "syntaxgym") is None
        pd.testing.assert_frame_equal(SEP.separation_intervals(store, "smollm2-135m-instruct", "syntaxgym"), read)


def test_write_summary_round_trips_exactly(copy):
    summary = copy / (SMALL + SEP.SUMMARY_SUFFIX)
    summary.unlink()
    assert SEP.write_summary(copy / (SMALL + ".parquet")) == summary
    with Store(copy) as store:
        pd.testing.assert_frame_equal(SEP.read_summary(store, "smollm2-135m-instruct", "syntaxgym"),
                                      computed(store, "smollm2-135m-instruct", "syntaxgym"), check_exact=True)


def test_a_run_without_a_per_string_measure_gets_no_summary_and_loses_a_stale_one(tmp_path):
    name = "gemma3-270m__climp"
    df = pd.read_parquet(DEFAULT_RESULTS_DIR / (name + ".parquet"))
    df[~df.method.isin(SEP.SEPARATION_METRICS)].to_parquet(tmp_path / (name + ".parquet"), index=False)
    shutil.copy(DEFAULT_RESULTS_DIR / (name + SEP.SUMMARY_SUFFIX), tmp_path)  # the whole run's: stale here
    assert SEP.write_summary(tmp_path / (name + ".parquet")) is None
    assert not (tmp_path / (name + SEP.SUMMARY_SUFFIX)).exists()
