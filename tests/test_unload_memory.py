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


# Run in a fresh process: the allocator's state is then the test's own. In a test worker that had run about
# 400 other tests, the trim gave back 138 of the 200 MB, twice, where a fresh process gives back all of it.
CHURN = """
import json, time
from accapp.models.release import resident_mb
from accapp.service.host import IDLE_TRIM_S, INTERACTIVE, ModelThread

def block():  # written, not calloc'ed: calloc leaves fresh pages untouched, and so not resident
    return bytearray(b"\\x01") * (1 << 20)

def churn():  # 200 MB in 1 MB blocks, freed in turn: what a batch's activations leave behind
    first = block()
    del first  # freed from mmap: later blocks of this size come from the heap and stay there
    blocks = [block() for _ in range(200)]
    blocks.reverse()  # freed from the last, so the top of the heap is not simply handed back
    del blocks[1:]
    return resident_mb("RssAnon")

worker = ModelThread()
before = resident_mb("RssAnon")
held = worker.submit(INTERACTIVE, churn).result(timeout=30)
time.sleep(IDLE_TRIM_S + 1.0)
print(json.dumps({"before": before, "held": held, "after": resident_mb("RssAnon")}))
"""


@pytest.mark.process  # a fresh python
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator: RssAnon in /proc")
def test_model_thread_gives_freed_memory_back_once_idle():
    """A job's freed temporaries stay in glibc's heap (its mmap threshold rises to the size of the first
    freed block), until the idle model thread gives them back: IDLE_TRIM_S after its last job."""
    import json
    import subprocess

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", CHURN], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    mb = json.loads(out.stdout.strip().splitlines()[-1])
    before, held, after = mb["before"], mb["held"], mb["after"]
    print(f"anonymous memory: {before:.0f} MB before the job, {held:.0f} MB after it, {after:.0f} MB once idle")
    assert held - before > 150  # the freed blocks were resident when the job ended
    assert held - after > 150


@pytest.mark.slow
@pytest.mark.process  # starts python app.py
def test_switching_models_stays_within_the_budget_plus_the_base(capsys):
    from model_switch_memory import run

    rep = run("1800MB", ["smollm2-135m-instruct", "gemma3-270m", "smollm2-135m-instruct"])
    for step in rep["steps"]:
        print(f"after {step['model']}: {step['rss_mb']} MB resident (limit {rep['limit_mb']} MB)")
        assert step["rss_mb"] <= rep["limit_mb"], rep
        assert len(step["mapped"]) == 1 and step["model"] in next(iter(step["mapped"])), step["mapped"]
