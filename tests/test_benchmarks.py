"""Benchmark loaders and the resumable, kill-safe runner."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from accapp.benchmarks import load_benchmark, parse_pairs, stratified_sample
from accapp.errors import UserError
from tests.toy_benchmark import write_toy_benchmark


def test_blimp_loader_counts(blimp):
    assert len(blimp) == 67_000
    assert blimp.paradigm.nunique() == 67
    assert blimp.phenomenon.nunique() == 12
    assert "s-selection" not in set(blimp.phenomenon)
    assert set(blimp[blimp.paradigm.isin(["animate_subject_trans", "animate_subject_passive"])].phenomenon) == {"argument_structure"}
    assert (blimp.good == blimp.bad).sum() == 7


def test_climp_loader_counts(climp):
    assert len(climp) == 16_000
    assert climp.paradigm.nunique() == 16
    assert climp.phenomenon.nunique() == 9
    ba = climp[climp.paradigm == "ba_construction"]
    assert len(ba) == 1000 and ba.good.str.contains("把").all() and ba.bad.str.contains("被").all()
    assert climp.good.str.endswith("。").all()


def test_user_file_loads_through_the_same_path(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("sentence_good,sentence_bad,paradigm\nThe cat sleeps.,The cat sleep.,agr\nA b.,A c.,agr\n", encoding="utf-8")
    df = load_benchmark(str(path))
    assert list(df.columns) == ["benchmark", "paradigm", "phenomenon", "pair_id", "good", "bad"]
    assert df.benchmark.tolist() == ["mine", "mine"] and df.paradigm.tolist() == ["agr", "agr"]
    jsonl = parse_pairs(b'{"good": "x y.", "bad": "y x."}\n', "p.jsonl")
    assert jsonl.good.tolist() == ["x y."]
    with pytest.raises(UserError, match="good-sentence column"):
        parse_pairs(b"a,b\n1,2\n", "p.csv")
    with pytest.raises(UserError, match="UTF-8"):
        parse_pairs("good,bad\nä,ö\n".encode("latin-1"), "p.csv")


def test_stratified_sample_is_seeded_and_nested(blimp):
    a = stratified_sample(blimp, 10, seed=0)
    b = stratified_sample(blimp, 30, seed=0)
    assert len(a) == 670 and len(b) == 2010
    assert a.groupby("paradigm").size().eq(10).all()
    assert set(zip(a.paradigm, a.pair_id)) <= set(zip(b.paradigm, b.pair_id))
    assert a.equals(stratified_sample(blimp, 10, seed=0))
    assert not a.equals(stratified_sample(blimp, 10, seed=1))


@pytest.mark.slow
def test_identical_blimp_pairs_are_ties_not_wins(smollm, blimp):
    from accapp.engine import Engine
    from accapp.scoring.api import Pair
    from accapp.scoring.causal import CausalScorer

    same = blimp[blimp.good == blimp.bad]
    results = Engine(CausalScorer(smollm), "en").score_pairs([Pair(g, b) for g, b in zip(same.good, same.bad)], ["lp", "in_template_lp"])
    verdicts = {r["verdict"] for res in results for r in res.rows}
    assert verdicts == {"tie"}


def _bench(out: Path, bench_file: Path):
    return ["bench", "--model", "smollm2-135m-instruct", "--benchmark", str(bench_file),
            "--methods", "lp,in_template_lp,yes_no_prob_comp", "--out", str(out), "--batch-size", "8"]


def _in_process(args):
    """`python -m accapp ARGS` in this process (tests/cli_in_process.py), with one thread as OMP_NUM_THREADS=1 gave."""
    from tests.cli_in_process import run_cli

    return run_cli(*args, threads=1)


def _units(out: Path) -> dict:
    return {p.relative_to(out): pd.read_parquet(p) for p in sorted(out.rglob("*.parquet"))}


@pytest.mark.slow
@pytest.mark.process
def test_run_killed_midway_then_resumed_equals_uninterrupted(tmp_path):
    bench_file = write_toy_benchmark(tmp_path / "toy.csv")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    full = tmp_path / "full"
    assert _in_process(_bench(full, bench_file)).returncode == 0

    killed = tmp_path / "killed"  # a process of its own: it is killed
    proc = subprocess.Popen([sys.executable, "-m", "accapp", *_bench(killed, bench_file)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while time.time() < deadline and not list(killed.rglob("*.parquet")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = _units(killed)  # every file that exists is whole (readable) after a kill
    assert 0 < len(partial) < len(_units(full))

    again = _in_process(_bench(killed, bench_file))
    assert again.returncode == 0, again.stderr
    a, b = _units(full), _units(killed)
    assert a.keys() == b.keys()
    for key in a:
        # Same rows and verdicts; the scores to float32 accumulation: the runner scores blocks cut
        # across paradigms (issue 21), and a resumed run's remaining pairs form other blocks.
        pd.testing.assert_frame_equal(a[key], b[key], check_exact=False, atol=1e-4, rtol=0)
        assert a[key]["correct"].tolist() == b[key]["correct"].tolist()

    third = _in_process(_bench(killed, bench_file))
    assert "units written: 0" in third.stdout  # resumable: nothing left to do


@pytest.mark.slow
def test_resume_from_shipped_results_and_merge_runs_of_two_sizes(tmp_path):
    """runs/ is not committed: a new machine resumes from the consolidated file alone. A run of
    more pairs for fewer methods merges into it; the manifest says how many pairs each method has.
    A run consolidates only its own benchmark (another one's unfinished run stays in runs/)."""
    import json
    import shutil

    bench_file = write_toy_benchmark(tmp_path / "toy.csv", ("p1", "p2"), 4, ids=True)  # ids restart in every paradigm
    runs, shipped = tmp_path / "runs", tmp_path / "shipped"

    def bench(n, methods, file=bench_file, consolidate=True):
        cmd = ["bench", "--model", "smollm2-135m-instruct", "--benchmark", str(file),
               "--methods", methods, "--per-paradigm", str(n), "--out", str(runs), "--batch-size", "8"]
        cmd += ["--consolidate-to", str(shipped)] if consolidate else []
        out = _in_process(cmd)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout

    other = tmp_path / "other.csv"
    other.write_text("good,bad,paradigm\nThe cat sleeps.,The cat sleep.,p1\n", encoding="utf-8")
    bench(1, "lp", other, consolidate=False)  # another benchmark's run, not (yet) to be shipped
    bench(2, "lp,in_template_lp")
    assert sorted(p.name for p in shipped.glob("*.parquet")) == ["smollm2-135m-instruct__toy.parquet"]
    first = pd.read_parquet(shipped / "smollm2-135m-instruct__toy.parquet")
    shutil.rmtree(runs)  # a fresh clone: only the shipped results are there
    out = bench(2, "lp,in_template_lp")
    assert "units written: 0" in out and "unit files restored" in out
    pd.testing.assert_frame_equal(first, pd.read_parquet(shipped / "smollm2-135m-instruct__toy.parquet"))

    bench(4, "lp")  # more pairs for one method: only the new pairs are scored
    merged = pd.read_parquet(shipped / "smollm2-135m-instruct__toy.parquet")
    assert len(merged[merged.method == "lp"][["paradigm", "pair_id"]].drop_duplicates()) == 8
    assert len(merged[merged.method == "in_template_lp"][["paradigm", "pair_id"]].drop_duplicates()) == 4
    old_lp = first[first.method == "lp"].set_index(["paradigm", "pair_id"]).score_good
    new_lp = merged[merged.method == "lp"].set_index(["paradigm", "pair_id"]).score_good
    assert (new_lp.loc[old_lp.index] == old_lp).all()  # nested sample: earlier pairs kept as they were
    man = json.loads((shipped / "smollm2-135m-instruct__toy.manifest.json").read_text())
    assert man["per_paradigm_by_method"] == {"in_template_lp": 2, "lp": 4}
    assert man["paradigms_by_method"] == {"in_template_lp": 2, "lp": 2}
    assert man["pairs_by_method"] == {"in_template_lp": 4, "lp": 8}  # 2 paradigms, ids restart in each
    assert set(man["methods"]) == {"lp", "in_template_lp"} and set(man["templates"]) == {"lp", "in_template_lp"}
