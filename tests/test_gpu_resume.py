"""A whole benchmark over two GPU leases (issue 32, item 4; docs/gpu.md), rehearsed on the CPU with a tiny
random Llama from a folder and a toy benchmark: the first lease's processes stop short, merge_full.py
consolidates what they did (units short of pairs listed, not called whole), the second lease's processes
resume from that file (scripts/gpu/resume_full.py) and score only what it lacks, and merge_full.py
--previous joins both into the whole benchmark, its compute seconds counted once. The result has every
row of one uninterrupted run, with the same verdicts."""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from accapp.files import safe_name
from tests.cli_in_process import run_cli
from tests.toy_benchmark import write_toy_benchmark

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "gpu"))
from resume_full import process_folder  # noqa: E402 - the GPU scripts are not a package

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
METHODS = "lp,mean_lp,in_template_lp"
KEYS = ["paradigm", "pair_id", "method", "template", "variant"]


def _script(name: str, *args, ok: bool = True) -> subprocess.CompletedProcess:
    """A script of scripts/gpu/ run as `python3 scripts/gpu/NAME ARGS` would run it, in this process (its
    imports are this process's: a fresh interpreter a call cost most of this test's time)."""
    out, err, code = io.StringIO(), io.StringIO(), 0
    argv = sys.argv
    sys.argv = [name, *map(str, args)]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(str(ROOT / "scripts" / "gpu" / name), run_name="__main__")
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
        err.write("" if stop.code is None or isinstance(stop.code, int) else str(stop.code))
    finally:
        sys.argv = argv
    done = subprocess.CompletedProcess(sys.argv, code, out.getvalue(), err.getvalue())
    assert (done.returncode == 0) == ok, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    from tests import any_models

    root = tmp_path_factory.mktemp("resume")
    model = str(any_models.llama_folder(root))
    return root, model, write_toy_benchmark(root / "toy.csv", per_paradigm=4, ids=True)


def _lease(setting, model_id: str, runs: Path, per_paradigm: dict[int, int], procs: int = 2) -> None:
    """The processes of one lease (device.sh full-start, here one after another): process k on its share of
    the paradigms (resume_full.py --lists), stopping after per_paradigm[k] pairs a paradigm (absent: all)."""
    root, model, bench = setting
    lists = _script("resume_full.py", "--lists", "--benchmark", bench, "--procs", procs).stdout.split()
    assert lists == ["p1,p3", "p2"]
    for k, paradigms in enumerate(lists):
        args = ["bench", "--model", model, "--benchmark", str(bench), "--methods", METHODS, "--dtype", "fp32",
                "--paradigms", paradigms, "--block-size", "4", "--out", str(process_folder(runs, model_id, bench, k))]
        if k in per_paradigm:
            args += ["--per-paradigm", str(per_paradigm[k])]
        out = run_cli(*args, threads=1)
        assert out.returncode == 0, out.stderr[-3000:]


def _manifest(folder: Path) -> dict:
    (path,) = folder.rglob("manifest.json")
    return json.loads(path.read_text())


def _merge(runs: Path, model_id: str, bench: Path, out: Path, *extra) -> dict:
    done = _script("merge_full.py", "--runs", runs, "--model", model_id, "--benchmark", bench, "--out", out,
                   "--shipped", out / "none", *extra)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_whole_benchmark_over_two_leases_equals_one_run(setting, tmp_path):
    root, model, bench = setting
    # One uninterrupted run, one process: what the two leases must come to.
    whole = run_cli("bench", "--model", model, "--benchmark", str(bench), "--methods", METHODS, "--dtype", "fp32",
                    "--block-size", "4", "--out", str(tmp_path / "one"), "--consolidate-to", str(tmp_path / "one-file"),
                    threads=1)
    assert whole.returncode == 0, whole.stderr[-3000:]
    (one_path,) = (tmp_path / "one-file").glob("*.parquet")
    one = pd.read_parquet(one_path)
    model_id = one.model.iloc[0]  # a folder model's id is its path
    name = f"{safe_name(model_id)}__toy"

    # Lease 1: process 0 finishes its paradigms (p1, p3), process 1 stops after 2 of p2's 4 pairs.
    first_runs = tmp_path / "lease1"
    _lease(setting, model_id, first_runs, {1: 2})
    report = _merge(first_runs, model_id, bench, tmp_path / "merged1")
    assert report["units_missing"] == 7 and report["pairs"] == 10  # p2's LP, MeanLP and 5 in-template LP units
    merged1 = tmp_path / "merged1" / f"{name}.parquet"
    man1 = json.loads(merged1.with_name(f"{name}.manifest.json").read_text())
    assert "whole_benchmark" not in man1 and man1["leases"] == 1 and len(man1["processes"]) == 2

    # Lease 2 carries the merged file: each process gets back its share's units, and scores only what they lack.
    second_runs = tmp_path / "lease2"
    restored = _script("resume_full.py", "--from", merged1, "--runs", second_runs, "--model", model_id,
                       "--benchmark", bench, "--procs", 2)
    assert "restored 21 unit files into 2 process folders" in restored.stdout  # 3 paradigms x 7 units
    assert all("compute_seconds" not in _manifest(f) for f in second_runs.iterdir())  # merge_full adds lease 1's once
    _lease(setting, model_id, second_runs, {})
    seconds = [_manifest(process_folder(second_runs, model_id, bench, k))["compute_seconds"] for k in (0, 1)]
    report = _merge(second_runs, model_id, bench, tmp_path / "merged2", "--previous", merged1)
    assert report["units_missing"] == 0 and report["pairs"] == 12
    merged2 = tmp_path / "merged2" / f"{name}.parquet"
    man2 = json.loads(merged2.with_name(f"{name}.manifest.json").read_text())
    assert man2["whole_benchmark"] and man2["leases"] == 2 and len(man2["processes"]) == 4
    assert man2["compute_seconds"] == pytest.approx(man1["compute_seconds"] + sum(seconds), abs=0.2)
    assert man2["started"] == man1["started"]

    # Every row of the one run, once, with its verdict; the scores within the blocks' float32 noise.
    got = pd.read_parquet(merged2)
    assert len(got) == len(one) and not got.duplicated(KEYS).any()
    both = one.merge(got, on=KEYS, suffixes=("_one", "_two"), validate="one_to_one")
    assert (both.correct_one == both.correct_two).all() and (both.tie_one == both.tie_two).all()
    assert (both.score_good_one - both.score_good_two).abs().max() < 1e-4
    assert (both.score_bad_one - both.score_bad_two).abs().max() < 1e-4

    # Shipping it (merge_full.py --ship-file, what comes after the lease): the unfinished file is refused; the
    # whole one replaces the shipped sample, whose scores are kept.
    shipped, samples = tmp_path / "shipped", tmp_path / "samples"
    shipped.mkdir()
    for f in (merged1, merged1.with_name(f"{name}.manifest.json")):
        (shipped / f.name).write_bytes(f.read_bytes())  # the lease-1 file stands for a shipped sample
    refused = _script("merge_full.py", "--ship-file", merged1, "--ship", shipped, "--samples", samples, ok=False)
    assert "does not say whole_benchmark" in refused.stderr
    _script("merge_full.py", "--ship-file", merged2, "--ship", shipped, "--samples", samples)
    assert (shipped / f"{name}.parquet").read_bytes() == merged2.read_bytes()
    kept = pd.read_parquet(samples / f"{name}.parquet")
    assert len(kept) == len(pd.read_parquet(merged1)) and list(kept.columns) == KEYS + ["score_good", "score_bad"]
