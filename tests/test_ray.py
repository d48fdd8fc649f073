"""The benchmark runner on Ray (issue 21), on a local Ray with two CPU slots and two workers that
each load a model from a folder (a tiny Llama with SmolLM2's tokenizer, tests/any_models.py: what is
tested is the distribution of the work, not the weights): the rows equal the serial runner's, score for score; a worker killed
mid-run is restarted and every unit completes; a driver killed mid-run and run again finishes with
nothing lost and nothing duplicated. Also, without Ray: a method that raises is recorded as its
units' failure while the run goes on, and a missing Ray gives a message that says what to install."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from accapp.engine import Engine, make_scorer
from accapp.errors import UserError
from accapp.runner.runner import run_benchmark

ROOT = Path(__file__).resolve().parents[1]
METHODS = ["lp", "in_template_lp"]  # in-template LP: the template prefix cache is in play
PARADIGMS = ["adjunct_island", "anaphor_gender_agreement", "wh_island"]
SAMPLE = {"per_paradigm": 6, "seed": 0, "paradigms": PARADIGMS}  # 18 pairs, 18 units
BLOCK = 2  # 9 blocks: enough to kill something mid-run


def units(out: Path) -> dict[Path, pd.DataFrame]:
    return {p.relative_to(out): pd.read_parquet(p) for p in sorted(out.rglob("*.parquet"))}


def assert_same_rows(a: Path, b: Path, exact: bool = True) -> None:
    ua, ub = units(a), units(b)
    assert list(ua) == list(ub) and len(ua) == len(PARADIGMS) * 6  # lp + 5 in-template templates a paradigm
    for name in ua:
        if exact:
            pd.testing.assert_frame_equal(ua[name], ub[name], check_exact=True)
        else:  # another block split: float32 batching moves scores by far less than 1e-4 nats
            pd.testing.assert_frame_equal(ua[name], ub[name], check_exact=False, rtol=0, atol=1e-4)


@pytest.fixture(scope="module")
def ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    """The folder every worker loads the model from, as a researcher's own checkpoint."""
    from tests import any_models

    return str(any_models.llama_folder(tmp_path_factory.mktemp("ray-model")))


def manifest_of(out: Path) -> Path:
    """The run's manifest.json under an output folder (out/<model>/blimp/)."""
    found = list(out.rglob("manifest.json"))
    assert len(found) <= 1, found
    return found[0] if found else out / "no-manifest-yet" / "manifest.json"


@pytest.fixture(scope="module")
def serial_run(model, tmp_path_factory):
    """The serial runner on the sample, on one torch thread: a Ray worker's threads are its CPU
    slots (1 here), and BLAS may sum in another order on another thread count."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = tmp_path_factory.mktemp("serial")
        from accapp.engine import build_engine

        summary = run_benchmark(build_engine(model), "blimp", METHODS, out, **SAMPLE, block_size=BLOCK, progress=False)
    finally:
        torch.set_num_threads(threads)
    assert summary["units_written"] == 18 and summary["blocks"] == 9
    return out


def run_ray(model: str, out: Path, **kwargs) -> dict:
    from accapp.runner.ray_runner import run_benchmark_ray

    return run_benchmark_ray({"model": model}, "blimp", METHODS, out, **SAMPLE, workers=2, block_size=BLOCK,
                             progress=False, **kwargs)


@pytest.mark.slow
def test_two_workers_write_the_serial_runners_rows(ray, model, serial_run, tmp_path):
    pids = set()
    summary = run_ray(model, tmp_path, on_result=lambda info: pids.add(info["pid"]))
    assert len(pids) == 2  # both workers scored blocks
    assert summary["units_written"] == 18 and summary["units_failed"] == 0 and summary["pairs_scored"] == 18
    assert_same_rows(serial_run, tmp_path)
    manifest = json.loads(manifest_of(tmp_path).read_text())
    assert manifest["block_size"] == BLOCK and manifest["methods"] == METHODS
    again = run_ray(model, tmp_path)  # a rerun of a finished run scores nothing
    assert again["units_written"] == 0 and again["pairs_scored"] == 0 and again["units_skipped"] == 18


@pytest.mark.slow
def test_a_killed_worker_is_restarted_and_every_unit_completes(ray, model, serial_run, tmp_path):
    killed = []

    def kill_once(info):
        if not killed:  # the worker that sent this block holds the next one: kill it mid-block
            os.kill(info["pid"], signal.SIGKILL)
            killed.append(info["pid"])

    summary = run_ray(model, tmp_path, on_result=kill_once)
    assert killed and summary["worker_restarts"] >= 1
    assert summary["units_failed"] == 0 and summary["pairs_scored"] == 18
    assert_same_rows(serial_run, tmp_path)  # the retried block is the same block: the same scores


@pytest.mark.slow
@pytest.mark.process
def test_a_killed_driver_resumes_losing_and_duplicating_nothing(ray, model, serial_run, tmp_path):
    address = ray.get_runtime_context().gcs_address
    cmd = [sys.executable, "-m", "accapp", "bench", "--model", model, "--benchmark", "blimp", "--methods", ",".join(METHODS),
           "--per-paradigm", "6", "--seed", "0", "--paradigms", ",".join(PARADIGMS), "--out", str(tmp_path),
           "--block-size", str(BLOCK), "--ray", address, "--workers", "2"]
    log = tmp_path / "driver.log"
    with open(log, "wb") as f:
        driver = subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        # The manifest takes compute_seconds once a whole block's units are written: kill the driver
        # then (a kill between a block's unit files would leave its pairs to score again).
        while not (manifest_of(tmp_path).exists() and "compute_seconds" in json.loads(manifest_of(tmp_path).read_text())):
            assert driver.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.05)
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
    finally:
        if driver.poll() is None:
            driver.kill()
    done_before = sum(len(df) for df in units(tmp_path).values())
    assert 0 < done_before < 18 * 6  # some rows written (18 pairs x 6 units), the run not finished

    summary = run_ray(model, tmp_path)
    assert summary["units_failed"] == 0
    assert 0 < summary["pairs_scored"] < 18  # what the killed driver finished was kept, not scored again
    for name, df in units(tmp_path).items():
        assert not df.duplicated(["pair_id", "variant"]).any(), name
    # Pairs the rerun scored came in other blocks than the serial run's: equal within float32 batching.
    assert_same_rows(serial_run, tmp_path, exact=False)


def test_a_method_that_raises_fails_its_units_and_the_run_goes_on(tiny_llama, tmp_path, monkeypatch):
    from accapp.methods import all_methods

    def boom(pair, ctx, res):
        raise RuntimeError("mean_lp broke")

    monkeypatch.setattr(all_methods()["mean_lp"], "score", boom)
    file = tmp_path / "pairs.csv"
    pd.DataFrame({"good": ["The dog barks.", "The cats sleep.", "Who left?", "She is here."],
                  "bad": ["The dog bark.", "The cats sleeps.", "Who left it?", "She are here."],
                  "paradigm": ["agr", "agr", "wh", "wh"]}).to_csv(file, index=False)
    engine = Engine(make_scorer(tiny_llama))
    out = tmp_path / "runs"
    summary = run_benchmark(engine, str(file), ["lp", "mean_lp"], out, progress=False)
    assert summary["units_failed"] == 2 and summary["units_written"] == 2
    failed = json.loads(Path(summary["failed_file"]).read_text())
    assert {(u["paradigm"], u["method"]) for u in failed} == {("agr", "mean_lp"), ("wh", "mean_lp")}
    assert all("RuntimeError: mean_lp broke" in u["error"] and len(u["pair_ids"]) == 2 for u in failed)
    assert sorted(p.parent.name for p in out.rglob("*.parquet")) == ["lp", "lp"]
    monkeypatch.undo()  # fixed: the rerun scores what failed, and lists nothing
    again = run_benchmark(engine, str(file), ["lp", "mean_lp"], out, progress=False)
    assert again["units_failed"] == 0 and again["units_written"] == 2  # LP's units were done
    assert json.loads(Path(summary["failed_file"]).read_text()) == []


def test_without_ray_the_message_says_what_to_install(monkeypatch):
    from accapp.runner import ray_runner

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(UserError, match="requirements-ray.txt"):
        ray_runner.import_ray()


def test_the_serial_runner_and_the_cli_do_not_import_ray():
    code = "import sys, accapp.cli, accapp.cli.bench, accapp.runner.runner, accapp.runner.ray_runner; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
