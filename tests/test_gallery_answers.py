"""The teaching gallery's shipped answers (assets/gallery_answers.json, made by scripts/gallery_answers.py):
every pair's, made with the model, methods and settings the app has now; a gallery click answers from
them without the model, and anything else runs it; a few of them against a fresh run of the same
stages with the real default model (slow)."""

from __future__ import annotations

import json
import math

import pytest

from accapp.errors import UserError
from accapp.methods import method_ids
from accapp.models import DEFAULT_MODEL
from accapp.service import gallery
from accapp.service import probe as svc
from accapp.service import probe_cache as pc

CHECKED = ("agr-1", "isl-2", "cl-1")  # a fresh run checks these: English agreement, an island, a Chinese classifier


@pytest.fixture(scope="module")
def shipped():
    return json.loads(pc.SHIPPED_PATH.read_text(encoding="utf-8"))


def plan(good, bad):
    request = svc.check_request(DEFAULT_MODEL, good, bad, method_ids("causal"), runnable_only=True)
    return [(list(methods), k == 0) for k, (_, methods) in enumerate(svc.stages(request.methods))]


def test_every_gallery_pair_has_answers_made_as_the_app_asks_now(shipped):
    from accapp.service.host import AppState

    pairs = gallery.load()
    assert set(shipped["pairs"]) == {p["id"] for p in pairs}
    # the model (id, revision, precision, parameters), the methods' fingerprint and the top-k the app has now:
    # when this fails, run `python scripts/gallery_answers.py` again
    now = pc.shipped_header(pc.model_key(DEFAULT_MODEL, AppState()))
    assert {k: shipped[k] for k in ("format", "model", "settings")} == now
    for p in pairs:
        entry = shipped["pairs"][p["id"]]
        assert (entry["good"], entry["bad"], entry["context"]) == (p["good"], p["bad"], "")
        assert [(s["methods"], s["with_words"]) for s in entry["stages"]] == plan(p["good"], p["bad"]), p["id"]
    assert pc.SHIPPED_PATH.stat().st_size < 4 * 1024 * 1024


def _scores(report_or_answer) -> dict:
    if isinstance(report_or_answer, dict):  # a report's verdict records
        return {(v["method"], str(v["template"]), v["variant"] or ""): (v["score_good"], v["score_bad"])
                for v in report_or_answer["verdicts"]}
    return {(s.method, str(s.template), s.variant or ""): (s.score_good, s.score_bad) for s in report_or_answer.scores}


@pytest.fixture
def no_model(monkeypatch):
    """The app's host, whose model never runs: each call to it is counted and refused."""
    from accapp.service import host

    state = host.AppState()
    calls = []

    def batched(model_id, fn, item):
        calls.append(item)
        raise UserError("the model ran")

    monkeypatch.setattr(state, "batched", batched)
    host.set_state(state)
    yield calls
    host.set_state(None)
    state.stop()


def test_a_gallery_click_answers_from_the_shipped_file_and_anything_else_runs_the_model(shipped, no_model, monkeypatch):
    from accapp.ui import gallery as tab
    from accapp.ui import probe as probe_tab

    pair = gallery.by_id(gallery.load(), "agr-1")
    good, bad, meta, _ = tab.probe_fill(pair)
    args = (good, bad, DEFAULT_MODEL, "", method_ids("causal"), "bits", "words", "lp", meta)
    tab.ANSWERS.kept.clear()

    def click():  # what the page runs after "Try it in the Probe tab"
        event = tab.probe_event({"fn": probe_tab.run_probe})
        return list(event["fn"](*args, None, ""))

    outs = click()
    assert no_model == []  # the model never ran
    report = outs[-1][tab.Answers.SAVED]["reports"][0]
    expected = {}
    for stage in shipped["pairs"]["agr-1"]["stages"]:
        expected.update(_scores(pc.decode(stage["answer"])[0]))
    assert _scores(report) == expected and len(expected) >= 19
    assert "shipped with the app" in report["ran_on"]["text"] and not report["pending"]
    again = click()  # the next student: the page as the first drew it, in one step
    assert len(again) == 1 and again[0][tab.Answers.SAVED] is outs[-1][tab.Answers.SAVED]
    assert no_model == []

    monkeypatch.setenv("ACCAPP_TOP_K", "3")  # a setting the answers were not made with: the model runs
    failed = click()
    assert len(no_model) == 1 and "the model ran" in failed[-1][0]
    monkeypatch.delenv("ACCAPP_TOP_K")
    with pytest.raises(UserError, match="the model ran"):  # methods it was not made with
        list(svc.staged_probe(good, bad, [DEFAULT_MODEL], ["lp", "mean_lp"]))
    assert len(no_model) == 2
    monkeypatch.setenv("ACCAPP_PROBE_CACHE", "0")  # cache and shipped answers off
    with pytest.raises(UserError, match="the model ran"):
        list(svc.staged_probe(good, bad, [DEFAULT_MODEL], method_ids("causal")))
    assert len(no_model) == 3


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-4)


@pytest.mark.slow  # the real SmolLM2
def test_shipped_answers_match_a_fresh_run_of_the_same_stages(shipped, smollm):
    from accapp.engine import build_engine
    from accapp.service.host import AppState

    engine = build_engine(smollm.spec.id, lm=smollm)
    state = AppState()
    state.register_engine(DEFAULT_MODEL, engine)
    m = shipped["model"]
    assert pc.model_key(DEFAULT_MODEL, state) == (m["id"], m["revision"], m["dtype"], m["quantization"], m["device"],
                                                  m["parameters"])  # the held model is the one shipped
    for pair_id in CHECKED:
        entry = shipped["pairs"][pair_id]
        for stage in entry["stages"]:
            old, words, rule, _ = pc.decode(stage["answer"])
            new, new_words, new_rule = svc.probe_stage(engine, entry["good"], entry["bad"], stage["methods"],
                                                       stage["with_words"])
            a, b = _scores(old), _scores(new)
            assert a.keys() == b.keys(), pair_id
            for k in a:
                assert _close(a[k][0], b[k][0]) and _close(a[k][1], b[k][1]), (pair_id, k, a[k], b[k])
            assert [s.verdict for s in old.scores] == [s.verdict for s in new.scores], pair_id
            for side in ("good", "bad"):
                assert [t["token"] for t in old.tokens[side]] == [t["token"] for t in new.tokens[side]]
                assert all(_close(x["logprob"], y["logprob"]) for x, y in zip(old.tokens[side], new.tokens[side]))
                if stage["with_words"]:
                    assert [w["word"] for w in words[side]] == [w["word"] for w in new_words[side]]
                    assert all(_close(x["logprob"], y["logprob"]) for x, y in zip(words[side], new_words[side]))
            assert rule == new_rule
    state.stop()
