"""scripts/cpu_halves.py: a long CPU run split over two processes ships only whole units, keeps every row
shipped before unchanged (or, in a shipped sample's unit run again whole, within its tie tolerance), counts
each process's compute seconds once, and resumes where the shipped file ends.
The halves run in this process here (the runner with the tiny Llama), as the script's processes would."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import cpu_halves  # noqa: E402

from tests.toy_benchmark import write_toy_benchmark  # noqa: E402


def test_finished_paradigms_need_every_method_on_every_wanted_pair():
    wanted = pd.DataFrame({"paradigm": ["a", "a", "b", "b"], "pair_id": ["1", "2", "1", "2"]})
    rows = pd.DataFrame({"paradigm": ["a"] * 4 + ["b"] * 3, "method": ["lp", "lp", "slor", "slor", "lp", "lp", "slor"],
                         "pair_id": ["1", "2", "1", "2", "1", "2", "1"]})
    assert cpu_halves.finished_paradigms(rows, wanted, ["lp", "slor"]) == {"a"}  # b lacks slor on pair 2
    assert cpu_halves.finished_paradigms(rows, wanted, ["lp"]) == {"a", "b"}
    assert cpu_halves.finished_paradigms(rows.iloc[:0], wanted, ["lp"]) == set()


def _run_halves(engine, bench, halves, work, shipped_dir, per_paradigm=None):
    """What `start`'s two processes do: restore the shipped units (accapp bench --consolidate-to), run their paradigms."""
    from accapp.runner.runner import restore_units, run_benchmark

    for half, paradigms in enumerate(halves):
        runs = cpu_halves.folders(work, bench, engine.lm.spec.id, half)[0]
        restore_units(cpu_halves.shipped_file(shipped_dir, bench, engine.lm.spec.id), runs)
        if paradigms:
            run_benchmark(engine, bench, ["lp", "mean_lp"], runs, paradigms=paradigms, progress=False,
                          per_paradigm=per_paradigm)


def test_ship_keeps_whole_paradigms_and_every_shipped_row(tmp_path, tiny_llama):
    from accapp.engine import Engine, make_scorer

    engine = Engine(make_scorer(tiny_llama))
    model = tiny_llama.spec.id
    bench = str(write_toy_benchmark(tmp_path / "toy.csv", ("p1", "p2", "p3", "p4"), 3, ids=True))
    work, shipped_dir = tmp_path / "work", tmp_path / "shipped"
    work.mkdir()

    halves = cpu_halves.write_plan(work, bench, model, "lp,mean_lp", None, 0, shipped_dir)
    assert halves == [["p1", "p3"], ["p2", "p4"]]
    _run_halves(engine, bench, halves, work, shipped_dir)
    # the first half stopped halfway through p1's LP: one of its pairs is missing from the unit
    unit = cpu_halves.run_folder(work, bench, model, 0) / "units" / "p1" / "lp" / "-.parquet"
    pd.read_parquet(unit).iloc[:2].to_parquet(unit)
    first_run = cpu_halves.run_folder(work, bench, model, 0) / "manifest.json"
    record = json.loads(first_run.read_text())
    record["compute_seconds"] += 50.0  # as a real run records (a tiny model's can round to 0.0 s on a fast machine)
    first_run.write_text(json.dumps(record))
    seconds = sum(json.loads((cpu_halves.run_folder(work, bench, model, h) / "manifest.json").read_text())["compute_seconds"]
                  for h in (0, 1))

    figures = cpu_halves.merge_and_ship(work, bench, model, shipped_dir)
    assert figures["finished"] == ["p2", "p3", "p4"]
    shipped = cpu_halves.shipped_file(shipped_dir, bench, model)
    rows = pd.read_parquet(shipped)
    assert len(rows[rows.paradigm != "p1"]) == 3 * 3 * 2
    assert list(rows[rows.paradigm == "p1"].method.unique()) == ["mean_lp"]  # p1's whole unit ships, its half LP not
    manifest = json.loads(cpu_halves.manifest_beside(shipped).read_text())
    assert manifest["compute_seconds"] == pytest.approx(seconds, abs=0.2)
    assert (shipped_dir / "smollm2-135m-instruct__toy.separation.json").exists()

    # the next session: only p1 is left; its run resumes from the shipped file and adds p1 alone; it is stopped
    # once (its seconds so far stay in the run folder) and started again before any ship
    halves = cpu_halves.write_plan(work, bench, model, "lp,mean_lp", None, 0, shipped_dir)
    assert halves == [["p1"], []]
    first = json.loads(cpu_halves.plan_file(work, bench, model).read_text())["earlier"]
    _run_halves(engine, bench, halves, work, shipped_dir)
    stopped = cpu_halves.run_folder(work, bench, model, 0) / "manifest.json"
    record = json.loads(stopped.read_text())
    record["compute_seconds"] += 100.0  # as a long run stopped part way records (a tiny model's rounds to 0.0 s)
    stopped.write_text(json.dumps(record))
    assert cpu_halves.write_plan(work, bench, model, "lp,mean_lp", None, 0, shipped_dir) == [["p1"], []]
    assert json.loads(cpu_halves.plan_file(work, bench, model).read_text())["earlier"] == first  # not the stopped run's
    _run_halves(engine, bench, halves, work, shipped_dir)
    again = cpu_halves.merge_and_ship(work, bench, model, shipped_dir)
    assert again["finished"] == ["p1", "p2", "p3", "p4"] and again["rows_added"] == 3
    merged = pd.read_parquet(shipped)
    key = ["paradigm", "method", "pair_id"]
    assert merged.merge(rows, on=key, suffixes=("", "_before")).eval("score_good == score_good_before").all()
    later = json.loads(cpu_halves.manifest_beside(shipped).read_text())["compute_seconds"]
    plan = json.loads(cpu_halves.plan_file(work, bench, model).read_text())
    added = sum(json.loads((cpu_halves.run_folder(work, bench, model, h) / "manifest.json").read_text())["compute_seconds"]
                - plan["earlier"][h] for h in (0, 1))
    assert 100 <= added < 160 and plan["earlier"][0] >= 50  # half 0's folder already counted the first run's seconds
    # the second run's seconds added once to what was shipped, not the first run's again (later ~ 2 x seconds)
    assert later == pytest.approx(manifest["compute_seconds"] + added, abs=0.2)

    # a shipped score that changed in a run folder stops the ship: nothing is written
    unit = cpu_halves.run_folder(work, bench, model, 0) / "units" / "p2" / "lp" / "-.parquet"
    df = pd.read_parquet(unit)
    df.loc[0, "score_good"] += 1.0
    df.to_parquet(unit)
    before = shipped.read_bytes()
    with pytest.raises(SystemExit, match="scores changed"):
        cpu_halves.merge_and_ship(work, bench, model, shipped_dir)
    assert shipped.read_bytes() == before


def test_a_shipped_sample_run_whole_ships_the_whole_units_and_allows_only_float_noise(tmp_path, tiny_llama):
    """A shipped sample (2 pairs a paradigm), then the same methods on every pair: each half runs its paradigms' units
    again whole, while the other half restored the shipped sample's units of the same names; the whole unit ships.
    The sample's pairs, scored again beside others, may move by float noise within their tie tolerance, never more."""
    from accapp.engine import Engine, make_scorer

    engine = Engine(make_scorer(tiny_llama))
    model = tiny_llama.spec.id
    bench = str(write_toy_benchmark(tmp_path / "toy.csv", ("p1", "p2", "p3", "p4"), 4, ids=True))
    work, shipped_dir = tmp_path / "work", tmp_path / "shipped"
    work.mkdir()
    halves = cpu_halves.write_plan(work, bench, model, "lp,mean_lp", 2, 0, shipped_dir)
    _run_halves(engine, bench, halves, work, shipped_dir, per_paradigm=2)
    assert cpu_halves.merge_and_ship(work, bench, model, shipped_dir)["finished"] == ["p1", "p2", "p3", "p4"]
    shipped = cpu_halves.shipped_file(shipped_dir, bench, model)
    sample = pd.read_parquet(shipped)
    assert len(sample) == 4 * 2 * 2

    halves = cpu_halves.write_plan(work, bench, model, "lp,mean_lp", None, 0, shipped_dir)
    assert halves == [["p1", "p3"], ["p2", "p4"]]  # a unit of 2 pairs is not whole: every paradigm runs again
    _run_halves(engine, bench, halves, work, shipped_dir)
    half0_p2 = cpu_halves.run_folder(work, bench, model, 0) / "units" / "p2" / "lp" / "-.parquet"
    assert len(pd.read_parquet(half0_p2)) == 2  # half 0 holds p2's sample unit, restored; half 1 ran p2 whole
    unit = cpu_halves.run_folder(work, bench, model, 1) / "units" / "p2" / "lp" / "-.parquet"
    whole = pd.read_parquet(unit)
    sampled = whole.pair_id.astype(str).isin(sample[sample.paradigm == "p2"].pair_id.astype(str))
    noise = whole.copy()
    noise.loc[sampled, "score_good"] *= 1 + 1e-7  # float32 noise: far inside LP's tie tolerance
    noise.to_parquet(unit)
    figures = cpu_halves.merge_and_ship(work, bench, model, shipped_dir, dry_run=True)
    assert figures["finished"] == ["p1", "p2", "p3", "p4"] and figures["rows_added"] == 4 * 2 * 2

    far = whole.copy()
    far.loc[sampled, "score_good"] += 0.01  # beyond LP's tolerance (about 1e-5 x the score): a defect, not noise
    far.to_parquet(unit)
    with pytest.raises(SystemExit, match="2 scores changed"):
        cpu_halves.merge_and_ship(work, bench, model, shipped_dir, dry_run=True)
    whole.to_parquet(unit)
    cpu_halves.merge_and_ship(work, bench, model, shipped_dir)
    rows = pd.read_parquet(shipped)
    assert len(rows) == 4 * 4 * 2 and rows.groupby(["paradigm", "method"]).size().eq(4).all()


def test_consolidation_counts_the_paradigms_each_method_has_whole(tmp_path, tiny_llama):
    """What the status line reads to tell a run of every pair from a sample (accapp.service.explore._whole_methods):
    per method, the paradigms it has and those it has every pair of, against the built-in benchmark's own."""
    from accapp.engine import Engine, make_scorer
    from accapp.runner.runner import consolidate, manifest_beside, run_benchmark

    engine = Engine(make_scorer(tiny_llama))
    small = ["center_embed", "center_embed_mod"]  # SyntaxGym's two smallest suites, 28 pairs each
    out = tmp_path / "runs"
    run_benchmark(engine, "syntaxgym", ["lp"], out, paradigms=small, progress=False)  # every pair of both
    run_benchmark(engine, "syntaxgym", ["mean_lp"], out, per_paradigm=3, paradigms=small, progress=False)  # a sample
    (path,) = consolidate(out, tmp_path / "results")
    manifest = json.loads(manifest_beside(path).read_text())
    assert manifest["pairs_by_method"] == {"lp": 56, "mean_lp": 6}
    assert manifest["paradigms_by_method"] == {"lp": 2, "mean_lp": 2}
    assert manifest["complete_paradigms_by_method"] == {"lp": 2, "mean_lp": 0}
