"""The benchmark runner on a user's file, on a tiny random Llama-style model (fast tier): every
pair goes through the engine's check_pair as `score` does, and a pair that fails is recorded
with its error while the run goes on; a rerun removes what a killed run left half-written."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pandas as pd
import pytest

from accapp.engine import Engine, make_scorer
from accapp.files import temp_path
from accapp.runner.runner import run_benchmark


@pytest.fixture()
def engine(tiny_llama):
    return Engine(make_scorer(tiny_llama))


def test_user_file_pairs_are_checked_like_score_and_failures_recorded(engine, tmp_path):
    rows = pd.DataFrame({
        "good": ["  The dog barks. ", "", "The cat sleeps.", "x" * 401],
        "bad": ["The dog bark.", "The dog bark.", "The cat sleep.", "The cat sleep."],
    })
    file = tmp_path / "mine.csv"
    rows.to_csv(file, index=False)
    out = tmp_path / "runs"
    summary = run_benchmark(engine, str(file), "lp,mean_lp,pen_lp", out, progress=False)
    assert summary["pairs_failed"] == 2
    errors = json.loads((out / "smollm2-135m-instruct" / "mine" / "errors.json").read_text())
    assert [(e["pair_id"], "empty" in e["error"] or "limit" in e["error"]) for e in errors] == [("1", True), ("3", True)]
    units = {p.parent.name: pd.read_parquet(p) for p in (out / "smollm2-135m-instruct" / "mine" / "units").rglob("*.parquet")}
    assert set(units) == {"lp", "mean_lp", "pen_lp"}
    lp = units["lp"].set_index("pair_id")
    assert list(lp.index) == ["0", "2"]
    # the cell with surrounding spaces is scored exactly as `score` scores it (stripped)
    alone = engine.score_pair("  The dog barks. ", "The dog bark.", ["lp"])
    assert lp.loc["0", "good"] == "The dog barks."
    assert lp.loc["0", "score_good"] == alone.scores[0].score_good
    assert lp.loc["0", "score_bad"] == alone.scores[0].score_bad

    again = run_benchmark(engine, str(file), "lp,mean_lp,pen_lp", out, progress=False)
    assert again["units_written"] == 0 and again["pairs_failed"] == 2  # done; the bad rows are retried, not lost


def _dead_pid() -> int:
    """The pid of a process killed with kill -9 (as a run killed midway)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    return proc.pid


def test_a_rerun_removes_the_temporary_files_of_killed_runs_only(engine, tmp_path):
    file = tmp_path / "mine.csv"
    pd.DataFrame({"good": ["The dog barks."], "bad": ["The dog bark."]}).to_csv(file, index=False)
    out = tmp_path / "runs"
    run_benchmark(engine, str(file), "lp", out, progress=False)
    unit = next((out / "smollm2-135m-instruct" / "mine" / "units").rglob("*.parquet"))
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # another run, still writing
    try:
        stale = temp_path(unit, _dead_pid())
        stale_manifest = temp_path(out / "smollm2-135m-instruct" / "mine" / "manifest.json", _dead_pid())
        live = temp_path(unit, alive.pid)
        for p in (stale, stale_manifest, live):
            p.write_bytes(b"half a file")
        again = run_benchmark(engine, str(file), "lp", out, progress=False)
        assert again["units_written"] == 0  # nothing to redo: the unit's own file is whole
        assert not stale.exists() and not stale_manifest.exists()
        assert live.exists()  # a live process's file is left alone
    finally:
        alive.kill()
        alive.wait(timeout=10)


def test_consolidated_scores_are_float32_and_the_verdicts_those_made_in_float64(tmp_path):
    """A consolidated file stores the scores as float32, byte-split (runner.STORED_FLOAT32), and keeps
    every verdict the unit files made in float64, also where float32's rounding alone would make the
    two scores equal."""
    import numpy as np
    import pyarrow.parquet as pq

    from accapp.runner.runner import STORED_FLOAT32, consolidate, unit_path
    from accapp.schema import ROW_COLUMNS

    runs, model, bench = tmp_path / "runs", "toy-model", "toy"
    rng = np.random.default_rng(0)
    good = -rng.uniform(5, 300, 50)
    bad = good - rng.uniform(1e-3, 5, 50)
    bad[0] = good[0] - 1e-6  # equal once rounded to float32 (its spacing at ~100 nats is 7.6e-6)
    frame = pd.DataFrame({c: "" for c in ROW_COLUMNS}, index=range(50)).assign(
        model=model, benchmark=bench, paradigm="p", phenomenon="ph", pair_id=[str(i) for i in range(50)],
        method="lp", template="-", variant="", score_good=good, score_bad=bad, correct=1.0, tie=False,  # good > bad
        len_good=5, len_bad=5, len_diff=0)
    assert np.float32(good[0]) == np.float32(bad[0])
    path = unit_path(runs, model, bench, "p", "lp", "-")
    path.parent.mkdir(parents=True)
    frame[ROW_COLUMNS].to_parquet(path, index=False)
    (runs / model / bench / "manifest.json").write_text(json.dumps({"model": model, "benchmark": bench}))

    (out,) = consolidate(runs, tmp_path / "results")
    meta = pq.ParquetFile(out).metadata
    columns = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i) for i in range(meta.num_columns)}
    for c in STORED_FLOAT32:
        assert columns[c].physical_type == "FLOAT" and "BYTE_STREAM_SPLIT" in columns[c].encodings
    back = pd.read_parquet(out).sort_values("pair_id", key=lambda s: s.astype(int)).reset_index(drop=True)
    assert (back.score_good.to_numpy() == good.astype(np.float32)).all()
    assert (back.score_bad.to_numpy() == bad.astype(np.float32)).all()
    assert back.correct.tolist() == frame.correct.tolist() and not back.tie.any()  # made in float64, kept
    assert json.loads(out.with_name("toy-model__toy.manifest.json").read_text())["stored_scores"].startswith("float32")


def test_unit_files_are_written_once_complete_and_an_interrupted_run_keeps_what_it_scored(engine, tmp_path, monkeypatch):
    """A unit's file is written when the unit is complete, not after every block that adds to it, and whatever the
    blocks gave every WRITE_EVERY_S; a run stopped midway (Ctrl-C) writes what its blocks gave before it stops,
    and the rerun scores only the rest, to the same files as a run never stopped."""
    from accapp.methods import all_methods
    from accapp.runner import runner
    from tests.toy_benchmark import write_toy_benchmark

    file = write_toy_benchmark(tmp_path / "toy.csv", ("p1", "p2"), 6, ids=True)  # 3 blocks of 2 a paradigm
    methods = "lp,mean_lp"

    def run(out, **kwargs):
        writes = []
        summary = run_benchmark(engine, str(file), methods, out, progress=False, block_size=2,
                                on_unit=lambda: writes.append(1), **kwargs)
        return summary, len(writes)

    def files(out):
        return {p.relative_to(out): pd.read_parquet(p) for p in sorted(out.rglob("*.parquet"))}

    monkeypatch.setattr(runner, "WRITE_EVERY_S", 1e9)
    summary, writes = run(tmp_path / "whole")
    assert summary["blocks"] == 6 and summary["units_written"] == 4 and writes == 4  # each unit once
    whole = files(tmp_path / "whole")
    assert [len(df) for df in whole.values()] == [6] * 4

    monkeypatch.setattr(runner, "WRITE_EVERY_S", 0.0)
    summary, writes = run(tmp_path / "every")
    assert writes == 12  # every unit a block touched, after each block
    assert all(a.equals(b) for a, b in zip(files(tmp_path / "every").values(), whole.values()))

    monkeypatch.setattr(runner, "WRITE_EVERY_S", 1e9)
    mean_lp = all_methods()["mean_lp"]
    score = mean_lp.score

    def stopped(pair, ctx, res):
        if pair.good == "The dog4 p1 barks.":  # p1's third block
            raise KeyboardInterrupt
        return score(pair, ctx, res)

    monkeypatch.setattr(mean_lp, "score", stopped)
    out = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        run(out)
    kept = files(out)
    assert len(kept) == 2 and all(sorted(df.pair_id) == ["0", "1", "2", "3"] for df in kept.values())
    assert "compute_seconds" in json.loads(next(out.rglob("manifest.json")).read_text())
    monkeypatch.setattr(mean_lp, "score", score)
    summary, _ = run(out)
    assert summary["pairs_scored"] == 8  # p1's last block and p2
    again = files(out)
    assert again.keys() == whole.keys() and all(again[k].equals(whole[k]) for k in whole)


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_run_stopped_by_a_signal_writes_what_it_scored(tmp_path, stop):
    """`accapp bench` stopped with SIGINT (Ctrl-C; scripts/gpu/device.sh's finish) or SIGTERM writes the rows of
    the blocks it scored since its last write, though the unit they belong to is not complete, and exits 130;
    also started as a shell starts a background job (`nohup ... &`: SIGINT ignored), as the GPU runs are."""
    import time

    from tests import any_models

    model = any_models.llama_folder(tmp_path)
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "accapp", "bench", "--model", str(model), "--benchmark", "blimp", "--methods", "lp",
           "--paradigms", "adjunct_island,anaphor_gender_agreement,animate_subject_passive", "--per-paradigm", "500",
           "--block-size", "16", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 300
        while not list(out.rglob("*.parquet")):  # the first paradigm complete: its unit written
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.0)  # some blocks of the next paradigm, not written yet (WRITE_EVERY_S)
        proc.send_signal(stop)
        assert proc.wait(timeout=60) == 130, proc.stderr.read().decode(errors="replace")[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    rows = [len(pd.read_parquet(p)) for p in out.rglob("*.parquet")]
    partial = [n for n in rows if n != 500]  # the paradigm it was scoring: its unit not complete
    assert len(rows) >= 2 and len(partial) == 1 and 0 < partial[0] < 500
