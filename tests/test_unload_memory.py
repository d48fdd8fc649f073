"""Unloading a model gives its memory back (issue 33, part 7): the model thread keeps no reference to
its last job, and in the running app, after visitors switch models under a memory budget, resident
memory stays within the budget plus the app's own base and only the loaded model's weights stay mapped."""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


class Weights:  # stands for a model's tensors: anything a job is handed
    pass


def test_model_thread_lets_go_of_its_last_job():
    from accapp.service.host import INTERACTIVE, ModelThread

    worker, weights = ModelThread(), Weights()
    alive = weakref.ref(weights)
    assert worker.submit(INTERACTIVE, lambda w: type(w).__name__, weights).result(timeout=10) == "Weights"
    del weights
    gc.collect()
    assert alive() is None  # before the fix the idle thread's frame held the job's arguments


def test_release_freed_memory_asks_the_allocator():
    from accapp.models.release import release_freed_memory

    assert release_freed_memory() is (sys.platform.startswith("linux"))


@pytest.mark.slow
@pytest.mark.process  # starts python app.py
def test_switching_models_stays_within_the_budget_plus_the_base(capsys):
    from model_switch_memory import run

    rep = run("1800MB", ["smollm2-135m-instruct", "gemma3-270m", "smollm2-135m-instruct"])
    for step in rep["steps"]:
        print(f"after {step['model']}: {step['rss_mb']} MB resident (limit {rep['limit_mb']} MB)")
        assert step["rss_mb"] <= rep["limit_mb"], rep
        assert len(step["mapped"]) == 1 and step["model"] in next(iter(step["mapped"])), step["mapped"]
