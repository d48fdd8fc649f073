"""The DuckDB store: views, catalog, validation, bound parameters, read-only connection, report CLI."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from accapp.errors import UserError
from accapp.store import RESULT_COLUMNS, Store
from tests.fixtures.results_small import EVIL_MODEL, MODEL, USER_BENCH, USER_PARADIGM, toy_rows, write_results


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory) -> Path:
    return write_results(tmp_path_factory.mktemp("results"))


@pytest.fixture()
def store(results_dir):
    with Store(results_dir) as s:
        yield s


def _snapshot(folder: Path) -> dict:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_empty_results_view_is_valid(tmp_path):
    with Store(tmp_path) as s:
        df = s.query("SELECT * FROM results")
        assert df.empty and list(df.columns) == list(RESULT_COLUMNS)
        assert s.models() == [] and s.catalog().empty
        with pytest.raises(UserError, match="no results"):
            s.check("any", "blimp")
        # the published views come from precomputed/published whatever the results folder
        assert "published_blimp2020_human" in s.published_tables


def test_missing_explicit_results_dir_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        Store(tmp_path / "nope")


def test_env_var_picks_the_results_dir(results_dir, monkeypatch):
    monkeypatch.setenv("ACCAPP_RESULTS_DIR", str(results_dir))
    with Store() as s:
        assert s.results_dir == results_dir.resolve()
        assert MODEL in s.models()


def test_view_types_and_catalog(store):
    types = dict(store.query("DESCRIBE results")[["column_name", "column_type"]].itertuples(index=False))
    assert types == RESULT_COLUMNS
    assert store.models() == sorted([EVIL_MODEL, MODEL])
    assert store.benchmarks(MODEL) == ["blimp", USER_BENCH]
    assert store.models("blimp") == sorted([EVIL_MODEL, MODEL])
    assert store.methods(MODEL, "blimp") == ["ab_prompting", "ens_mix_p3", "in_template_lp", "lp", "slor",
                                             "yes_no_prob_comp"]
    assert store.templates(MODEL, "blimp", "in_template_lp") == ["1", "2"]
    units = store.units(MODEL, "blimp")
    assert dict(zip(units.paradigm, units.pairs)) == {
        "adjunct_island": 2, "distractor_agreement_relative_clause": 4, "regular_plural_subject_verb_agreement_1": 2}
    assert store.manifest(MODEL, "blimp")["model"] == MODEL
    # total rows: 8 pairs x (lp, slor, 2 + 2 templates, 2 A/B orders, ensemble) = 8 x 9 = 72
    assert store.query("SELECT count(*) AS n FROM results WHERE model = ?", [MODEL]).n[0] == 72 + 1


def test_rows_filters(store):
    df = store.rows(MODEL, "blimp", "ab_prompting", template="1", paradigm="adjunct_island")
    assert len(df) == 4 and set(df.variant) == {"good=A", "good=B"}
    wrong = store.rows(MODEL, "blimp", ["lp"], wrong_only=True, columns=["pair_id", "paradigm", "tie"])
    # lp is wrong on a1 and c1 and ties on c3
    assert sorted(zip(wrong.paradigm, wrong.pair_id)) == [
        ("adjunct_island", "1"), ("distractor_agreement_relative_clause", "1"), ("distractor_agreement_relative_clause", "3")]
    assert wrong.tie.sum() == 1
    assert len(store.rows(MODEL, "blimp", "lp", phenomenon="subject_verb_agreement", limit=2)) == 2
    with pytest.raises(UserError, match="Unknown column"):
        store.rows(MODEL, "blimp", "lp", columns=["good; DROP VIEW results"])


@pytest.mark.parametrize("kwargs, message", [
    ({"model": "nope"}, "Unknown model"),
    ({"benchmark": "climp"}, "No results for model"),
    ({"methods": ["lp", "nope"]}, "Unknown method 'nope'"),
    ({"template": "7"}, "Unknown template"),
    ({"paradigm": "nope"}, "Unknown paradigm"),
    ({"phenomenon": "nope"}, "Unknown phenomenon"),
])
def test_unknown_values_are_user_errors(store, kwargs, message):
    args = {"model": MODEL, "benchmark": "blimp", "methods": None} | kwargs
    with pytest.raises(UserError, match=message):
        store.rows(args.pop("model"), args.pop("benchmark"), args.pop("methods"), **args)


INJECTIONS = [
    "lp' OR '1'='1",
    "lp'; DROP VIEW results; --",
    "x\") OR 1=1 --",
    "' UNION SELECT * FROM read_csv('/etc/passwd') --",
    "blimp' --",
    "%",
    "*",
]


@pytest.mark.parametrize("value", INJECTIONS)
def test_injection_looking_values_are_only_unknown_values(store, results_dir, value):
    before = _snapshot(results_dir)
    n_before = store.query("SELECT count(*) AS n FROM results").n[0]
    for call in (
        lambda: store.rows(value, "blimp"),
        lambda: store.rows(MODEL, value),
        lambda: store.rows(MODEL, "blimp", [value]),
        lambda: store.rows(MODEL, "blimp", "lp", template=value),
        lambda: store.rows(MODEL, "blimp", "lp", paradigm=value),
        lambda: store.rows(MODEL, "blimp", "lp", phenomenon=value),
    ):
        with pytest.raises(UserError, match="Unknown|No results"):
            call()
    # no effect: same rows, same files, the view still there
    assert store.query("SELECT count(*) AS n FROM results").n[0] == n_before
    assert _snapshot(results_dir) == before


def test_names_that_look_like_sql_are_plain_values(store):
    # a model and a benchmark / paradigm literally named like SQL work as any other name
    evil = store.rows(EVIL_MODEL, "blimp", "lp")
    assert len(evil) == 1 and evil.model[0] == EVIL_MODEL
    user = store.rows(MODEL, USER_BENCH, "lp", paradigm=USER_PARADIGM)
    assert len(user) == 1 and user.paradigm[0] == USER_PARADIGM and user.correct[0] == 0.0
    # and select nothing else
    assert len(store.rows(MODEL, "blimp", "lp")) == 8


def test_connection_reads_only_its_folders(store, tmp_path):
    outside = tmp_path / "outside.csv"
    outside.write_text("a\n1\n")
    with pytest.raises(duckdb.Error):
        store.query(f"SELECT * FROM read_csv('{outside}')")
    with pytest.raises(duckdb.Error):
        store.query(f"COPY (SELECT 1) TO '{tmp_path / 'written.csv'}'")
    assert not (tmp_path / "written.csv").exists()
    with pytest.raises(duckdb.Error):
        store.query("SET enable_external_access = true")


def test_refresh_sees_new_files(tmp_path):
    with Store(tmp_path) as s:
        assert s.models() == []
        df = toy_rows()
        df = df[df.method == "lp"].assign(model="late-model")
        for c in ("len_good", "len_bad", "len_diff"):
            df[c] = df[c].astype("int32")
        df.to_parquet(tmp_path / "late-model__blimp.parquet", index=False)
        (tmp_path / ".late-model__climp.parquet.123.tmp").write_text("half a file")
        (tmp_path / "broken__blimp.parquet").write_text("not parquet")
        pd.DataFrame({"model": ["x"], "score": [1.0]}).to_parquet(tmp_path / "other__blimp.parquet")
        s.refresh()
        assert s.models() == ["late-model"] and s.benchmarks("late-model") == ["blimp"]
        assert set(s.skipped_files) == {"broken__blimp.parquet", "other__blimp.parquet"}
        assert "missing columns" in s.skipped_files["other__blimp.parquet"]


def test_a_run_s_summaries_are_computed_again_when_its_file_changes(tmp_path):
    """Store.derived keeps a run's summary until refresh: the accuracies then follow the new file."""
    from accapp.analysis.accuracy import accuracy_overall
    from accapp.analysis.length import accuracy_by_length

    df = toy_rows()
    df = df[df.method == "lp"]
    df.to_parquet(tmp_path / f"{MODEL}__blimp.parquet", index=False)
    with Store(tmp_path) as s:
        before = accuracy_overall(s, MODEL, "blimp", ["lp"]).accuracy.iloc[0]
        assert accuracy_overall(s, MODEL, "blimp", ["lp"]).accuracy.iloc[0] == before  # from the summary
        by_len = accuracy_by_length(s, MODEL, "blimp", ["lp"], clip=0).accuracy.iloc[0]
        assert before < 100 and by_len < 100
        df.assign(score_good=df.score_bad + 1.0).to_parquet(tmp_path / f"{MODEL}__blimp.parquet", index=False)
        s.refresh()  # every pair now right under the papers' rule
        assert accuracy_overall(s, MODEL, "blimp", ["lp"]).accuracy.iloc[0] == 100.0
        assert accuracy_by_length(s, MODEL, "blimp", ["lp"], clip=0).accuracy.iloc[0] == 100.0


def test_files_lacking_optional_columns(tmp_path):
    df = toy_rows()
    df = df[df.method == "lp"].drop(columns=["prediction", "variant", "len_good", "len_bad", "len_diff"])
    df.to_parquet(tmp_path / "old__blimp.parquet", index=False)
    with Store(tmp_path) as s:
        rows = s.rows(MODEL, "blimp", "lp")
        assert len(rows) == 8 and set(rows.variant) == {""} and rows.len_diff.isna().all()


def test_published_views(store):
    human = store.published("blimp2020_human")
    assert len(human) == 67 and "source" in human.columns
    with pytest.raises(UserError, match="Unknown published table"):
        store.published("nope; DROP VIEW results")


# ------------------------------------------------------------------ report CLI
def _run_cli(argv, capsys):
    from accapp.cli import main

    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_report_json(results_dir, capsys):
    rc, out, err = _run_cli(["report", "--benchmark", "blimp", "--model", MODEL, "--format", "json",
                             "--results", str(results_dir)], capsys)
    assert rc == 0, err
    rows = json.loads(out)
    separation = {r["method"]: r for r in rows if r.get("measure") == "separation_auc"}
    assert set(separation) == {"lp", "slor"} and separation["slor"]["auc"] == 1.0  # every string pooled
    assert (separation["lp"]["strings"], separation["lp"]["n_good"]) == (16, 8)
    rows = [r for r in rows if "measure" not in r]
    assert all(set(r) >= {"method", "template", "pairs", "ties", "accuracy", "by_phenomenon"} for r in rows)
    by = {(r["method"], r["template"]): r for r in rows}
    assert set(by) == {
        ("lp", "-"), ("slor", "-"), ("ens_mix_p3", "-"),
        ("in_template_lp", "1"), ("in_template_lp", "2"), ("in_template_lp", "mean"), ("in_template_lp", "sd"),
        ("in_template_lp", "max"),
        ("yes_no_prob_comp", "1"), ("yes_no_prob_comp", "2"), ("yes_no_prob_comp", "mean"), ("yes_no_prob_comp", "sd"),
        ("yes_no_prob_comp", "max"),
        ("ab_prompting", "1"), ("ab_prompting", "mean"), ("ab_prompting", "sd"), ("ab_prompting", "max"),
    }
    # lp: paradigms A 1/2, B 2/2, C 2/4 -> (50 + 100 + 50) / 3 = 66.6667; one tie (c3)
    assert by[("lp", "-")] == {"method": "lp", "template": "-", "pairs": 8, "ties": 1, "accuracy": 66.6667,
                               "accuracy_ties_wrong": 66.6667, "left_out": 0,
                               "by_phenomenon": {"island_effects": 50.0, "subject_verb_agreement": 66.6667}}
    # in_template_lp: t1 75.0, t2 66.6667 -> mean 70.8333, sd 8.3333 / sqrt(2) = 5.8926, max 75.0 (template 1)
    assert by[("in_template_lp", "mean")]["accuracy"] == 70.8333
    assert by[("in_template_lp", "sd")]["accuracy"] == 5.8926
    assert by[("in_template_lp", "max")]["accuracy"] == 75.0
    assert by[("in_template_lp", "max")]["best_template"] == "1"
    assert by[("in_template_lp", "max")]["by_phenomenon"] == {"island_effects": 100.0, "subject_verb_agreement": 66.6667}
    # one A/B template: sd over one template is undefined -> null
    assert by[("ab_prompting", "sd")]["accuracy"] is None


def test_report_table_and_errors(results_dir, capsys):
    rc, out, _ = _run_cli(["report", "--benchmark", "blimp", "--model", MODEL, "--results", str(results_dir)], capsys)
    assert rc == 0 and "in_template_lp" in out and "max(1)" in out
    rc, _, err = _run_cli(["report", "--benchmark", "climp", "--model", MODEL, "--results", str(results_dir)], capsys)
    assert rc == 2 and "No results for model 'toy-model' on benchmark 'climp'" in err
    rc, _, err = _run_cli(["report", "--benchmark", "blimp", "--model", "nope", "--results", str(results_dir)], capsys)
    assert rc == 2 and "Unknown model 'nope'" in err
    rc, _, err = _run_cli(["report", "--benchmark", "blimp", "--results", str(results_dir)], capsys)
    assert rc == 2 and "Give --model" in err
    rc, _, err = _run_cli(["report", "--benchmark", "blimp", "--model", MODEL, "--results",
                           str(results_dir / "missing")], capsys)
    assert rc == 2 and "not found" in err


def test_a_mistyped_file_and_a_corrupt_manifest_leave_the_rest_working(tmp_path):
    """A file whose numbers are text would break every query through the view's CAST: it is
    skipped and listed; a corrupt manifest reads as none, and is listed too (issue 22, item 5)."""
    write_results(tmp_path)
    df = toy_rows()
    df = df[df.method == "lp"].assign(model="typo-model")
    df["score_good"] = df["score_good"].map(lambda x: f"{x:.3f} nats")  # text where a number belongs
    df.to_parquet(tmp_path / "typo-model__blimp.parquet", index=False)
    (tmp_path / f"{MODEL}__blimp.manifest.json").write_text("{not json", encoding="utf-8")
    with Store(tmp_path) as s:
        assert "typo-model" not in s.models()
        assert "column score_good is VARCHAR, not DOUBLE" in s.skipped_files["typo-model__blimp.parquet"]
        assert len(s.rows(MODEL, "blimp", "lp")) == 8  # the good files still answer
        assert s.query("SELECT avg(score_good) AS m FROM results").m.notna().all()
        assert s.manifest(MODEL, "blimp") == {}
        assert "unreadable manifest" in s.skipped_files[f"{MODEL}__blimp.manifest.json"]
