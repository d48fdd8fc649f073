"""Pairs that are no pairs (issue 35, part 3): a pair whose two sentences are the same after the
project's normalisation (surrounding whitespace stripped, as errors.validate_sentence and the
Probe tab's warning do) is scored, flagged "identical", warned about and left out of accuracy, in
every entry point: `score`, `bench FILE` (the runner's rows), accapp.score_pairs, /probe's JSON and
file scoring. Repeated pairs in a file are counted and reported.

The fast tests run on the tiny random Llama (what is tested is the flag, not the model); the
command line ones on the real SmolLM2 (slow), as a user runs them.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from accapp.engine import Engine, make_scorer
from accapp.schema import FLAG_IDENTICAL, IDENTICAL_WARNING, duplicate_pairs, pair_flag
from tests.cli_in_process import run_cli

SAME = ("The cat sat.", "  The cat sat. ")  # identical once stripped
PAIRS = [("The dogs bark.", "The dogs barks."), SAME, ("The dogs bark.", "The dogs barks. "), ("Who left?", "Who left it?")]


@pytest.fixture(scope="module")
def engine(tiny_llama):
    return Engine(make_scorer(tiny_llama))


def test_the_flag_and_the_repeats_by_hand():
    assert pair_flag(*SAME) == FLAG_IDENTICAL
    assert pair_flag("The cat sat.", "The cat sat") == ""  # a different string is a pair, however close
    assert pair_flag("The cat sat.", "the cat sat.") == ""  # case is the project's meaning: not normalised away
    assert duplicate_pairs(PAIRS) == (1, 1)  # the third repeats the first (after stripping)
    assert duplicate_pairs([SAME, SAME, SAME]) == (2, 1)


def test_runner_rows_are_flagged_and_the_summary_counts(engine, tmp_path):
    file = tmp_path / "mine.csv"
    pd.DataFrame(PAIRS, columns=["good", "bad"]).to_csv(file, index=False)
    from accapp.runner.runner import consolidate, run_benchmark

    out = tmp_path / "runs"
    summary = run_benchmark(engine, str(file), "lp,yes_no_prob_comp", out, progress=False)
    assert summary["pairs_identical"] == 1 and summary["pairs_duplicated"] == 1
    manifest = json.loads((out / "smollm2-135m-instruct" / "mine" / "manifest.json").read_text())
    assert manifest["pairs_identical"] == 1 and manifest["pairs_duplicated"] == 1
    (path,) = consolidate(out, tmp_path / "results")
    rows = pd.read_parquet(path)
    assert set(rows.loc[rows.pair_id == "1", "flag"]) == {FLAG_IDENTICAL}
    assert (rows.loc[rows.pair_id != "1", "flag"] == "").all()
    # left out of accuracy, and counted as left out
    from accapp.analysis.accuracy import STRICT, TIES, accuracy_overall, left_out
    from accapp.store import Store

    with Store(tmp_path / "results") as store:
        gone = left_out(store, "smollm2-135m-instruct", "mine")
        assert dict(zip(gone.method, gone.pairs)) == {"lp": 1, "yes_no_prob_comp": 1}
        for rule in (STRICT, TIES):
            acc = accuracy_overall(store, "smollm2-135m-instruct", "mine", ["lp"], rule=rule)
            assert int(acc.pairs.iloc[0]) == 3  # 4 pairs, 1 left out
        lp = rows[(rows.method == "lp") & (rows.flag == "")]
        strict = accuracy_overall(store, "smollm2-135m-instruct", "mine", ["lp"], rule=STRICT).accuracy.iloc[0]
        assert strict == pytest.approx(100 * (lp.score_good > lp.score_bad).mean())


def test_score_pairs_warns_and_flags(engine, monkeypatch):
    import accapp.public

    monkeypatch.setattr(accapp.public, "_engine", lambda *a, **options: engine)
    with pytest.warns(UserWarning) as caught:
        df = accapp.score_pairs(PAIRS, "smollm2-135m-instruct", ["lp"], progress=False)
    texts = [str(w.message) for w in caught]
    assert any(t.startswith("Pair 1: ") and IDENTICAL_WARNING in t for t in texts)
    assert any("1 pair repeats an earlier pair" in t for t in texts)
    assert list(df.flag) == ["", FLAG_IDENTICAL, "", ""]
    assert df.attrs["warnings"] == texts
    assert df.loc[1, "verdict"] == "tie"  # scored all the same: the same sentence can only tie


def test_probe_json_flags_and_warns(engine):
    from accapp.service import verdicts
    from accapp.service.probe import probe_json

    result = engine.score_pair(*SAME, ["lp"])
    answer = probe_json("smollm2-135m-instruct", result)
    assert answer["flag"] == FLAG_IDENTICAL
    assert IDENTICAL_WARNING in verdicts.warnings(*SAME, 3, 3, ["en"], "en")  # the /probe answer's warnings
    assert probe_json("smollm2-135m-instruct", engine.score_pair(*PAIRS[0], ["lp"]))["flag"] == ""


def test_file_scoring_flags_counts_and_leaves_out(engine):
    from accapp.service import score_file as svc

    pairs = pd.DataFrame([("a", *p) for p in PAIRS], columns=["phenomenon", "good", "bad"])
    scored = svc.finish(svc.scored_steps(pairs, "smollm2-135m-instruct", ["lp"], run=svc.direct(engine)))
    wide = scored.wide()
    assert list(wide["flag"]) == ["", FLAG_IDENTICAL, "repeats row 1", ""]
    long = svc.long_frame(scored)
    assert list(long["flag"]) == ["", FLAG_IDENTICAL, "repeats row 1", ""]
    summary = svc.phenomenon_summary(long, ["lp"])
    row = summary.iloc[0]
    assert row["pairs"] == 3 and row["left_out"] == 1  # the repeat is counted, the identical pair left out
    ok = long[long["flag"] != FLAG_IDENTICAL]
    assert row["accuracy_percent"] == pytest.approx(100 * (ok.score_good > ok.score_bad).mean(), abs=0.5)  # rounded (issue 34)
    assert svc.flag_counts(scored.base) == {"identical": 1, "repeated": 1}
    notes = svc.flag_notes(wide)
    assert len(notes) == 2 and "row 2" in notes[0] and "left out" in notes[0] and "1 row repeat" in notes[1]


@pytest.mark.slow
def test_score_command_warns():
    out = run_cli("score", "--good", "The cat sat.", "--bad", "The cat sat. ", "--methods", "lp", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["flag"] == FLAG_IDENTICAL and data["warnings"] == [IDENTICAL_WARNING]
    assert IDENTICAL_WARNING in out.stderr
    table = run_cli("score", "--good", "The cat sat.", "--bad", "The cat sat.", "--methods", "lp")
    assert table.returncode == 0 and f"warning: {IDENTICAL_WARNING}" in table.stdout
    plain = run_cli("score", "--good", "The cat sat.", "--bad", "The cat sit.", "--methods", "lp", "--format", "json")
    assert json.loads(plain.stdout)["warnings"] == [] and "warning" not in plain.stderr


@pytest.mark.slow
def test_bench_file_reports_identical_and_repeated_pairs(tmp_path):
    file = tmp_path / "mine.csv"
    pd.DataFrame(PAIRS, columns=["good", "bad"]).to_csv(file, index=False)
    out = run_cli("bench", "--model", "smollm2-135m-instruct", "--benchmark", str(file), "--methods", "lp",
                  "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    assert "pairs with identical sentences: 1" in out.stdout and "duplicated pairs: 1" in out.stdout
    unit = pd.read_parquet(next((tmp_path / "runs").rglob("units/*/lp/*.parquet")))
    assert dict(zip(unit.pair_id, unit.flag)) == {"0": "", "1": FLAG_IDENTICAL, "2": "", "3": ""}
