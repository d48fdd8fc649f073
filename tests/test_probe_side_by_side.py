"""Side by side, each model's stages show as they finish (issue 34, defect 5): SmolLM2's answer must
not wait for Gemma's loading (80 s on a Space's first use). Two real models on a real model host:
SmolLM2 loaded (as the app preloads it), Gemma not yet. The test holds Gemma's load back (the pool's
one-load-at-a-time lock, which the real load takes) until SmolLM2's stages have shown, so "slow to
load" does not depend on the machine's speed; nothing of the probe is replaced."""

from __future__ import annotations

import queue
import threading

import pytest

from accapp.models import get_spec
from accapp.service import host as state
from accapp.service import probe as svc

pytestmark = pytest.mark.slow

FIRST, SECOND = "smollm2-135m-instruct", "gemma3-270m"
PAIR = ("The key to the cabinets is on the table.", "The key to the cabinets are on the table.")
METHODS = ["lp", "mean_lp", "yes_no_prob_comp"]  # two stages: sentence probability, then prompting
WAIT_S = 180  # a SmolLM2 stage on a busy machine
LOAD_WAIT_S = 900  # Gemma's load and a stage of it, on a busy 2-core machine


class Stages:
    """The probe's generator, read on a thread of its own: the next stage, or None when none came in time."""

    def __init__(self, gen) -> None:
        self.got: queue.Queue = queue.Queue()
        self.go: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(gen,), daemon=True).start()

    def _read(self, gen) -> None:
        try:
            while self.go.get():
                self.got.put(next(gen, StopIteration))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.got.put(exc)

    def next(self, seconds: float = WAIT_S):
        self.go.put(True)
        try:
            out = self.got.get(timeout=seconds)
        except queue.Empty:
            return None
        if isinstance(out, BaseException):
            raise out
        return out

    def rest(self, seconds: float = LOAD_WAIT_S) -> list:
        out = []
        while (stage := self.next(seconds)) is not StopIteration:
            assert stage is not None, "the probe stopped giving stages"
            out.append(stage)
        self.go.put(False)
        return out


def _scores(report: dict) -> list[tuple]:
    return [(v["method"], v["template"], v["variant"], v["score_good"], v["score_bad"]) for v in report["verdicts"]]


def test_first_model_shows_while_the_second_loads(tmp_path):
    st = state.AppState(results_dir=tmp_path)  # no precomputed results: the stages only
    state.set_state(st)
    try:
        with st.model(FIRST):
            pass  # loaded, as the app preloads its default model
        assert not st.is_loaded(SECOND)
        gemma = get_spec(SECOND).name
        st.pool._load.acquire()  # Gemma's load waits here until SmolLM2's stages have shown
        try:
            stages = Stages(svc.staged_probe(*PAIR, [FIRST, SECOND], METHODS))
            start = stages.next()
            assert start.saved is None and start.loading == [gemma]
            shown = []
            for _ in range(2):  # SmolLM2's two stages, each as it finishes
                stage = stages.next()
                assert stage is not None, "SmolLM2's stage waited for Gemma's loading"
                a, b = stage.saved["reports"]
                assert a["model"] == FIRST and b is None
                assert stage.loading == [gemma]  # said in Gemma's column meanwhile
                shown.append(stage)
            assert shown[0].first and a["headline"]["method"] == "lp"
            assert [v["method"] for v in shown[0].saved["reports"][0]["verdicts"]] == ["lp", "mean_lp"]
            assert shown[1].saved["reports"][0]["pending"] == []  # SmolLM2 done, prompting included
            assert shown[1].pending  # Gemma's stages still to come
            assert not st.is_loaded(SECOND)
        finally:
            st.pool._load.release()
        rest = stages.rest()  # Gemma loads now; its stages follow
        assert len(rest) == 2 and rest[0].first
        final = rest[-1]
        assert final.pending == [] and final.loading == []
        a, b = final.saved["reports"]
        assert a["model"] == FIRST and b["model"] == SECOND and b["pending"] == []
        # each model's numbers are its own: the same as probing it alone
        for report, model in ((a, FIRST), (b, SECOND)):
            alone = _scores(svc.probe_api(model, *PAIR, METHODS))
            got = _scores(report)
            assert [g[:3] for g in got] == [x[:3] for x in alone]
            assert [v for g in got for v in g[3:]] == pytest.approx([v for x in alone for v in x[3:]], abs=1e-4)
    finally:
        state.set_state(None)
