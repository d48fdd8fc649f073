"""The file-job queue (accapp.service.file_jobs, issue 33) with real threads: the order jobs are
admitted and started in, their places, the refusals (a visitor's second job, a full queue, both
with their messages), a job that leaves (done or stopped) freeing its place or slot for the next,
and the uploads the queue's jobs still need. Fast tier: no model, no server."""

from __future__ import annotations

import threading
import time

import pytest

from accapp.errors import UserError
from accapp.service.file_jobs import FileQueue

WAIT = 10.0  # the longest any wait below may take before the test fails


def _until(condition, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_jobs_start_in_order_of_arrival_and_wait_with_their_places():
    q = FileQueue(concurrency=2, queue_max=3, per_visitor=1)
    jobs = [q.admit(s) for s in "abcde"]
    assert [j.position for j in jobs] == [0, 0, 1, 2, 3]
    assert q.counts() == {"running": 2, "waiting": 3}
    assert [(j["session"], j["state"], j["position"]) for j in q.jobs()] == [
        ("a", "running", 0), ("b", "running", 0), ("c", "waiting", 1), ("d", "waiting", 2), ("e", "waiting", 3)]
    assert [j.wait_turn(0) for j in jobs] == [True, True, False, False, False]
    jobs[1].leave()  # a running job ends: the first waiting one starts, the others move up
    assert jobs[1].position is None and jobs[1].cancelled
    assert [j.position for j in jobs[2:]] == [0, 1, 2] and jobs[2].wait_turn(0)
    jobs[3].leave()  # a waiting one leaves: those behind it move up
    jobs[3].leave()  # twice: nothing more
    assert [j.position for j in jobs] == [0, None, 0, None, 1]
    assert q.counts() == {"running": 2, "waiting": 1}


def test_a_visitors_second_job_is_refused_saying_where_the_first_stands():
    q = FileQueue(concurrency=1, queue_max=4, per_visitor=1)
    q.admit("a")
    q.admit("b")
    q.admit("c")
    assert q.refusal("a").startswith("Your file is being scored now: one file at a time per visitor")
    assert q.refusal("c").startswith("Your file is number 2 in the queue: one file at a time per visitor")
    with pytest.raises(UserError, match="Your file is number 2 in the queue"):
        q.admit("c")
    assert q.counts() == {"running": 1, "waiting": 2}  # a refused job takes no place
    assert q.refusal("d") is None and q.refusal(None) is None
    q.admit(None), q.admit(None)  # no session (a direct call): no per-visitor limit
    two = FileQueue(concurrency=1, queue_max=4, per_visitor=2)
    two.admit("a"), two.admit("a")
    with pytest.raises(UserError, match="Your file is being scored now"):  # where the first one stands
        two.admit("a")


def test_a_full_queue_refuses_with_the_number_waiting():
    q = FileQueue(concurrency=2, queue_max=2, per_visitor=1)
    first = [q.admit(s) for s in "abcd"]
    message = "2 files are waiting to be scored, the most this app queues"
    assert q.refusal("e").startswith(message)
    with pytest.raises(UserError, match=message):
        q.admit("e")
    first[0].leave()  # a place frees: the next visitor is admitted (and waits last)
    assert q.admit("e").position == 2
    none_waiting = FileQueue(concurrency=1, queue_max=0, per_visitor=1)
    job = none_waiting.admit("a")  # a free slot: runs at once
    with pytest.raises(UserError, match="0 files are waiting"):
        none_waiting.admit("b")
    job.leave()
    assert none_waiting.admit("b").position == 0


def test_threads_run_one_at_a_time_in_order_and_a_stop_frees_the_slot_for_the_next():
    """Real worker threads, as the app's handlers: each admitted, waiting its turn a short while at
    a time, running until told to end. A running job stopped from outside (its cancel event) ends
    at its next step; a waiting one stopped leaves at once; each time the next waiting job starts."""
    q = FileQueue(concurrency=1, queue_max=8, per_visitor=1)
    started, outcome, end = [], {}, {s: threading.Event() for s in "abcde"}
    handles: dict[str, object] = {}

    def worker(session: str) -> None:
        try:
            with q.job(session) as job:
                handles[session] = job
                while not job.wait_turn(0.05):
                    pass
                started.append(session)
                while not end[session].wait(0.02):  # the job's steps
                    if job.cancelled:
                        outcome[session] = "stopped while running"
                        return
            outcome[session] = "done"
        except UserError as exc:
            outcome[session] = str(exc)

    threads = {}
    for s in "abcde":
        threads[s] = threading.Thread(target=worker, args=(s,), daemon=True)
        threads[s].start()
        assert _until(lambda s=s: s in handles)  # admitted in this order
    assert _until(lambda: started == ["a"])
    assert [handles[s].position for s in "abcde"] == [0, 1, 2, 3, 4]

    end["a"].set()  # a finishes: b starts
    assert _until(lambda: started == ["a", "b"]) and outcome.get("a") == "done"
    handles["d"].leave()  # a waiting job stopped: it leaves at once, e moves up
    assert _until(lambda: "d" in outcome) and outcome["d"] == "The file job was stopped before it started."
    assert [handles[s].position for s in "bcde"] == [0, 1, None, 2]
    handles["b"].leave()  # the running job stopped: its slot goes to c at once, b ends at its next step
    assert _until(lambda: started == ["a", "b", "c"])
    assert _until(lambda: "b" in outcome) and outcome["b"] == "stopped while running"
    end["c"].set()
    assert _until(lambda: started == ["a", "b", "c", "e"])
    end["e"].set()
    for t in threads.values():
        t.join(WAIT)
    assert started == ["a", "b", "c", "e"] and q.counts() == {"running": 0, "waiting": 0}


def test_jobs_sent_at_the_same_moment_keep_the_bounds():
    """Twenty visitors at once, and one visitor sending five at once: never more admitted than the
    bounds allow (the check and the admission are one step)."""
    q = FileQueue(concurrency=2, queue_max=3, per_visitor=1)
    gate, results = threading.Barrier(25), []

    def send(session: str) -> None:
        gate.wait()
        try:
            q.admit(session)
            results.append("in")
        except UserError:
            results.append("refused")

    threads = [threading.Thread(target=send, args=(f"v{k}",)) for k in range(20)]
    threads += [threading.Thread(target=send, args=("same",)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert results.count("in") == 5 and results.count("refused") == 20
    sessions = [j["session"] for j in q.jobs()]
    assert len(sessions) == len(set(sessions)) == 5


def test_an_upload_is_not_removed_while_a_job_in_the_queue_needs_it(tmp_path):
    shared, own = tmp_path / "same-hash" / "pairs.csv", tmp_path / "own.csv"
    shared.parent.mkdir()
    shared.write_text("good,bad\n")
    own.write_text("good,bad\n")
    q = FileQueue(concurrency=1, queue_max=2, per_visitor=1)
    running = q.admit("a", [str(shared)])
    waiting = q.admit("b", [shared, None])  # the same file (identical uploads share a path); None is no upload
    mine = q.admit("c", [str(own)])
    assert q.uploads_in_use() == {str(shared.resolve()), str(own.resolve())}
    assert q.uploads_in_use(exclude=mine) == {str(shared.resolve())}

    def remove(path: str) -> bool:
        from pathlib import Path

        Path(path).unlink()
        return True

    running.leave()
    assert not q.remove_unless_in_use(shared, remove) and shared.exists()  # b still needs it
    mine.leave()
    assert q.remove_unless_in_use(own, remove) and not own.exists()
    waiting.leave()
    assert q.remove_unless_in_use(shared, remove) and not shared.exists()
