"""The probe and file-scoring service and the tabs' logic without a browser or a real model: fake
engines, the toy results store, the tiny masked-LM fixture; one slow test fails a real SmolLM2
engine. (The browser and API tests start the real app.)"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from pathlib import Path

import gradio as gr
import pandas as pd
import pytest

from accapp.engine import Engine, PairResult
from accapp.errors import UserError, validate_sentence
from accapp.methods.base import Answers, MethodScore
from accapp.models import DEFAULT_MODEL
from accapp.scoring.api import Pair
from accapp.service import host as state
from accapp.service import probe as svc
from accapp.service import score_file as file_svc
from accapp.service.explore import ENSEMBLE_ORDER
from accapp.store import Store
from accapp.ui import about, explore, probe, probe_view, score_file
from accapp.ui.common import OOM_MESSAGE, esc, friendly
from tests.fixtures.results_small import MODEL as TOY
from tests.fixtures.results_small import toy_rows, write_results

XSS = "<img src=x onerror=alert(1)>"


class FakeEngine:
    """Stands in for accapp.engine.Engine: deterministic scores, no model."""

    kind = "causal"
    word_rule = "sum of the word's tokens (fake)"

    def __init__(self, fail_on: str | None = None, exc: Exception | None = None):
        self.fail_on, self.exc, self.calls = fail_on, exc, 0

    def check_pair(self, good, bad, meta=None):
        return Pair(validate_sentence(good, "acceptable sentence"), validate_sentence(bad, "unacceptable sentence"), meta or {})

    check_pairs = Engine.check_pairs  # the real loop over rows, on the fake's check_pair

    def unavailable_for(self, methods):  # the fake runs every method it is asked for
        return {}

    def _scores(self, pair):
        g, b = -float(len(pair.good)), -float(len(pair.bad))
        return [
            MethodScore("lp", "-", g, b),
            MethodScore("yes_no_prob_comp", "1", 0.4, 0.6),
            MethodScore("mean_lp", "-", -1.0, -2.0),
            MethodScore("ab_prompting", "1", -0.3, -1.2, "good=A", Answers(letter="A")),
            MethodScore("ens_mix_p3", "-", 0.7, 0.3, answers=Answers(p_votes=2, l_votes=4)),
        ]

    def score_pairs(self, pairs, methods=None, language=None, words=False, topk=0):  # topk: a fake expects nothing
        self.calls += 1
        out = []
        for p in pairs:
            if self.exc is not None:
                raise self.exc
            if self.fail_on and self.fail_on in p.good:
                raise RuntimeError("boom")
            toks = {k: [{"token": w, "start": 0, "end": len(w), "logprob": -1.5} for w in s.split()]
                    for k, s in (("good", p.good), ("bad", p.bad))}
            wanted = svc.probe_methods("causal", methods)
            found = {"good": self.word_scores([p.good])[p.good], "bad": self.word_scores([p.bad])[p.bad]} if words else None
            out.append(PairResult(p, toks, [s for s in self._scores(p) if s.method in wanted], len(toks["good"]),
                                  len(toks["bad"]), words=found))
        return out

    def word_scores(self, texts):
        """One word per space-separated piece, each -1.5 nats (the fake's tokens)."""
        out = {}
        for t in texts:
            at, words = 0, []
            for i, w in enumerate(t.split()):
                start = t.index(w, at)
                at = start + len(w)
                words.append({"index": i, "word": w, "start": start, "end": at, "tokens": [i], "logprob": -1.5,
                              "logprob_sum": -1.5})
            out[t] = words
        return out

    def score_pair(self, good, bad, methods=None, language=None):
        return self.score_pairs([self.check_pair(good, bad)], methods, language)[0]

    def prompts_for(self, pair, method_id, language=None):
        return [{"kind": "scored string", "text": "<|endoftext|>" + pair.good}]


@pytest.fixture()
def toy_dir(tmp_path):
    """The toy results, plus a copy of them under the default model's id (so a probe finds a run)."""
    write_results(tmp_path)
    rows = toy_rows()
    rows["model"] = DEFAULT_MODEL
    for c in ("len_good", "len_bad", "len_diff"):
        rows[c] = rows[c].astype("int32")
    rows.to_parquet(tmp_path / f"{DEFAULT_MODEL}__blimp.parquet", index=False)
    return tmp_path


@pytest.fixture()
def app_state(toy_dir):
    st = state.AppState(results_dir=toy_dir)
    st.register_engine(DEFAULT_MODEL, FakeEngine())
    state.set_state(st)
    yield st
    state.set_state(None)


# ------------------------------------------------------------------------------------------ service
def test_majority_and_verdict_records():
    scores = FakeEngine()._scores(Pair("a b c", "a b c d e"))
    maj = svc.majority(scores)
    assert maj == {"verdict": "good", "good": 3, "bad": 1, "tie": 0, "judgments": 4}  # the ensemble row is no vote
    recs = svc.verdict_records(scores)
    by = {r["method"]: r for r in recs}
    assert by["yes_no_prob_comp"]["agrees_with_majority"] is False
    assert by["lp"]["agrees_with_majority"] is True and by["ens_mix_p3"]["agrees_with_majority"] is None
    assert by["ens_mix_p3"]["votes"] == "7/10 draws pick good · P votes 2/5, L votes 4/5"
    assert by["ens_mix_p3"]["prediction"] == "P votes 2/5, L votes 4/5"  # the results files' text, unchanged
    assert by["ab_prompting"]["votes"] == "answered A" and by["ab_prompting"]["prediction"] == "A"
    assert by["lp"]["difference"] == pytest.approx(4.0)  # -5 - (-9)
    assert list(by["lp"]) == ["method", "name", "family", "template", "variant", "score_good", "score_bad",
                              "difference", "verdict", "agrees_with_majority", "prediction", "votes"]
    judged = MethodScore("meta_instruct", "judgment", -0.5, -0.7, answers=Answers(good="Yes", bad="No"))
    (rec,) = svc.verdict_records([judged])
    assert rec["votes"] == "good → Yes, bad → No" and rec["prediction"] == "good:Yes bad:No"
    assert rec["agrees_with_majority"] is True and rec["family"] == "metalinguistic prompting"
    df = probe_view.verdict_frame(recs, unit="bits")
    assert list(df.columns) == probe_view.table_columns("bits")
    assert df.loc[df.Method == "Yes/No prob comp", "Score: good"].item() == 0.4  # a probability stays one
    assert df.loc[df.Method == "MeanLP", "Unit"].item() == "bits/token"
    assert df.loc[df.Method == "LP", "Good − bad"].item() == pytest.approx(4.0 / 0.6931471805599453)
    html = probe_view.styled(df).to_html()
    assert "color: #1864ab" in html


def test_probe_methods_are_checked_before_any_model():
    assert svc.probe_methods("causal", None) == svc.probe_methods("causal", ["all"]) == svc.probe_methods("causal", "all")
    assert svc.probe_methods("masked", None) == ["pll_original", "pll_word_l2r", "pll_whole_word", "pll_sentence_l2r"]
    assert svc.probe_methods("causal", "lp, mean_lp,lp") == ["lp", "mean_lp"]
    with pytest.raises(UserError, match="Pick at least one method"):
        svc.probe_methods("causal", [])
    with pytest.raises(UserError, match="need a masked LM"):
        svc.check_probe("causal", "a", "b", ["pll_original"])
    with pytest.raises(UserError, match="unacceptable sentence is empty"):
        svc.check_probe("causal", "a", " ", ["lp"])
    result = svc.probe(FakeEngine(), "The dogs bark.", "The dogs barks.", "lp")
    out = svc.probe_json("m", result)
    assert set(out) == {"model", "good", "bad", "flag", "majority", "verdicts", "tokens"} and out["model"] == "m"
    assert svc.language_mismatch(["en"], "他走了。", "走了他。") == "zh" and svc.language_mismatch(["en"], "a", "b") is None


def test_pair_rows_by_id_then_by_sentences(toy_dir):
    store = Store(toy_dir)
    rows = store.rows(TOY, "blimp", ["lp"])
    first = rows.iloc[0]
    meta = {k: str(first[k]) for k in ("benchmark", "paradigm", "phenomenon", "pair_id")}
    by_id = svc.pair_rows(store, TOY, meta, "", "")
    assert len(by_id) and set(by_id.pair_id) == {meta["pair_id"]} and set(by_id.paradigm) == {meta["paradigm"]}
    by_text = svc.pair_rows(store, TOY, None, f" {first.good} ", first.bad)
    assert set(by_text.pair_id) == {meta["pair_id"]}
    assert svc.pair_rows(store, TOY, dict(meta, pair_id="nope"), first.good, first.bad).pair_id.tolist() == by_text.pair_id.tolist()
    assert store.pair_rows(TOY, good="x' OR 1=1 --", bad="y").empty  # a bound value, not SQL
    with pytest.raises(ValueError):
        store.pair_rows(TOY, benchmark="blimp")


def test_ui_writes_no_sql():
    """The UI lays out and wires; queries live in the store (imports: tests/test_import_direction.py)."""
    for path in sorted(Path("accapp/ui").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not any(w in text for w in ("SELECT ", ".query(", "FROM results")), f"{path} writes SQL"


# ------------------------------------------------------------------------------------------ probe


def run(*args, model2="", view="words", unit="bits"):
    """The probe's last yield, as a dict of its outputs (run_probe is a generator: one yield a stage)."""
    good, bad, model, methods = args
    outs = list(probe.run_probe(good, bad, model, model2, methods, unit, view, "lp", None))
    names = ["status", "view_line", "head", "fig", "diff", "votes", "col_b", "head_b", "fig_b", "diff_b", "votes_b",
             "pll", "table", "saved", "meta", "label", "context"]
    return [dict(zip(names, o)) for o in outs]


def test_run_probe_in_stages_with_benchmark_context(app_state):
    stages = run("The dogs bark.", "The dogs barks.", DEFAULT_MODEL, ["lp", "yes_no_prob_comp", "ab_prompting"])
    assert len(stages) == 3  # the "scoring" state, the sentence-probability stage, the prompting stage
    first, mid, out = stages
    assert "Scoring" in first["status"] and first["head"] == ""  # old results cleared at once
    assert "Still computing the prompting methods" in mid["status"] and "LP prefers the acceptable" in mid["head"]
    assert out["status"] == "" and "LP prefers the acceptable sentence by 1.4 bits" in out["head"]  # (14 − 15) nats
    assert "One vote per method" in out["head"] and "The dogs barks" in out["head"]
    df = out["table"]["value"].data
    assert out["table"]["column_widths"] == probe_view.judgment_widths(list(df.columns))
    assert "Run: this pair" in df.columns and probe_view.RUN_ACCURACY in df.columns
    assert df.loc[df.Method == "LP", "Run: this pair"].item() == "right"
    assert "Score: good" in df.columns
    assert df.loc[df.Method == "LP", "Score: good"].item() == pytest.approx(-14 / 0.6931471805599453)
    assert df.loc[df.Method == "Yes/No prob comp", "Unit"].item() == "P(Yes)"
    shown = out["table"]["value"].to_html()  # the run's accuracy to a tenth, as everywhere (issue 34 item 7: not "66.700000")
    assert "66.7<" in shown and "66.700000" not in shown
    # the vote table: each difference with its own unit, whatever the column mixes
    votes = probe_view.votes_html(out["saved"]["reports"][0], "bits")
    assert "Good − bad (mean over its judgments, in its unit)" in votes and "(bits," not in votes
    assert re.search(r"<td data-label='Good − bad' class='acc-num'>[+-][0-9.e+-]+ bits</td>", votes)
    assert re.search(r"<td data-label='Good − bad' class='acc-num'>[+-][0-9.e+-]+ P\(Yes\)</td>", votes)
    assert "a tie or no vote counts half" in votes  # why it can differ from Explore's by a tenth
    assert out["pll"]["visible"] is False and out["col_b"]["visible"] is False
    assert out["meta"]["paradigm"] == "regular_plural_subject_verb_agreement_1"
    ctx = probe.context_after(DEFAULT_MODEL, "lp", out["meta"], "The dogs bark.", "The dogs barks.", out["saved"])
    assert "66.7 %" in ctx and "right" in ctx  # lp on subject_verb_agreement in the toy run: 4 of 6
    assert out["context"] == ctx  # the probe's last stage fills the benchmark box itself (issue 34: from any tab)
    assert first["context"] == "" and mid["context"] == {"__type__": "update"}
    saved = out["saved"]
    assert saved["reports"][0]["tokens"]["good"][0]["token"] == "The"
    again = probe.replot(saved, "nats", "tokens")
    assert again[2].data[0].y[0] == pytest.approx(1.5)  # the figure, per token, in nats
    assert "LP prefers the acceptable sentence by 1.0 nats" in again[1]
    words = probe.replot(saved, "bits", "words")
    assert list(words[2].layout.xaxis.ticktext) == ["The", "dogs", "<b>bark.</b>"]  # the word that differs in bold


def test_probe_escapes_user_text(app_state):
    out = run(f"These {XSS} casseroles.", "These casseroles.", DEFAULT_MODEL, ["lp"])[-1]
    assert "<img" not in out["head"] and "&lt;img src=x onerror=alert(1)&gt;" in out["head"]
    assert "<img" not in out["fig"].to_json()


def test_probe_errors_are_messages_and_clear_old_results(app_state):
    def error_of(*args):
        (out,) = run(*args)
        assert out["head"] == "" and out["fig"] is None and out["table"] is None and out["saved"] is None
        assert "Nothing scored" in out["status"] and "Traceback" not in out["status"]
        return out["status"]

    assert "acceptable sentence is empty" in error_of("   ", "The dogs barks.", DEFAULT_MODEL, ["lp"])
    assert "Pick at least one method" not in error_of("a" * 401, "b", DEFAULT_MODEL, ["lp"])
    assert "401 characters long; the limit is 400" in error_of("a" * 401, "b", DEFAULT_MODEL, ["lp"])
    assert "Unknown model" in error_of("a", "b", "no-such-model", ["lp"])
    import torch

    app_state.register_engine(DEFAULT_MODEL, FakeEngine(exc=torch.OutOfMemoryError("CUDA out of memory")))
    assert esc(OOM_MESSAGE) in run("a", "b", DEFAULT_MODEL, ["lp"])[-1]["status"]
    app_state.register_engine(DEFAULT_MODEL, FakeEngine(exc=KeyError("x")))
    assert "Something went wrong (KeyError" in run("a", "b", DEFAULT_MODEL, ["lp"])[-1]["status"]


def test_a_newer_probe_stops_the_older_one(app_state):
    class Request:
        session_hash = "visitor-1"

    gen = probe.run_probe("The dogs bark.", "The dogs barks.", DEFAULT_MODEL, "", ["lp", "ab_prompting"], "bits", "words",
                          "lp", None, Request())
    next(gen)  # scoring...
    newer = probe.run_probe("The cats purr.", "The cats purrs.", DEFAULT_MODEL, "", ["lp"], "bits", "words", "lp", None,
                            Request())
    next(newer)  # the visitor asked again
    assert list(gen) == []  # the older probe stops at its next stage, leaving the page to the newer one
    assert "The cats purr." in list(newer)[-1][2]



def test_stop_ends_the_probe_and_has_the_last_word(app_state):
    """Stop after the first stage: the next stage is not drawn, and the probe's own last yield says
    Stopped, so no stage that reaches the page after the Stop button's note can overwrite it."""
    class Request:
        session_hash = "visitor-stop"

    gen = probe.run_probe("The dogs bark.", "The dogs barks.", DEFAULT_MODEL, "", ["lp", "ab_prompting"], "bits", "words",
                          "lp", None, Request())
    next(gen)  # scoring...
    first = next(gen)  # LP's stage, with the prompting stage still to come
    assert "Still computing" in first[0]
    assert "Stopped" in probe.stop_probe(Request())
    rest = list(gen)
    assert len(rest) == 1 and "Stopped" in rest[0][0] and len(rest[0]) == len(first)
    assert all(out == gr.update() for out in rest[0][1:])  # what the first stage drew stays
    # a probe after the Stop runs whole; another visitor's Stop touches nothing of theirs
    outs = list(probe.run_probe("The dogs bark.", "The dogs barks.", DEFAULT_MODEL, "", ["lp", "ab_prompting"], "bits",
                                "words", "lp", None, Request()))
    assert "Stopped" not in outs[-1][0] and "Still computing" not in outs[-1][0]
    probe.LATEST.stop("someone else")
    assert probe.LATEST.is_latest("visitor-stop", probe.LATEST.start("visitor-stop"))

def test_probe_api_is_json(app_state):
    out = probe.probe_api("The dogs bark.", "The dogs barks.", DEFAULT_MODEL, ["lp", "mean_lp"])
    assert json.loads(json.dumps(out)) == out
    assert out["majority"]["verdict"] == "good" and {r["method"] for r in out["verdicts"]} >= {"lp", "mean_lp"}
    assert out["headline"]["method"] == "lp" and out["headline"]["verdict"] == "good" and out["warnings"] == []
    assert out["headline"]["margin"] == pytest.approx(1.0) and "by 1.4 bits" in out["headline"]["text"]
    assert [w["word"] for w in out["words"]["bad"]] == ["The", "dogs", "barks."]
    assert out["words"]["good"][0]["surprisal_bits"] == pytest.approx(1.5 / 0.6931471805599453)
    assert [m["method"] for m in out["methods"]] == ["lp", "mean_lp"]
    # the toy run (8 BLiMP pairs) cannot show LP above chance: it does not vote, and says why;
    # MeanLP has no run to judge it by, and votes
    assert out["agreement"] == {"good": 1, "bad": 0, "none": 0, "not_voting": 1, "verdict": "good"}
    assert "includes chance, 50 %" in out["methods"][0]["unreliable_reason"] and out["methods"][1]["reliable"] is None
    assert out["reliability"]["lp"]["pairs"] == 8 and out["reliability_benchmark"] == "blimp"
    assert {f["family"] for f in out["families"]} == {"sentence probability"}
    assert probe.probe_api("The dogs bark.", "The dogs barks.", DEFAULT_MODEL, "lp,mean_lp")["good"] == "The dogs bark."
    with pytest.raises(gr.Error, match="unacceptable sentence is empty"):
        probe.probe_api("The dogs bark.", "")


def test_show_prompts_and_random_pairs(app_state):
    text = probe.show_prompts(DEFAULT_MODEL, "lp", "The dogs bark.", "The dogs barks.")
    assert "<|endoftext|>The dogs bark." in text
    meta = state.random_pair("blimp", "island_effects", "adjunct_island")
    assert meta["paradigm"] == "adjunct_island" and meta["good"] != meta["bad"]
    assert state.find_pair(meta["good"], meta["bad"])["pair_id"] == meta["pair_id"]
    assert state.find_pair("Not a benchmark sentence.", "Nor this.") is None
    z = state.random_pair("climp")
    assert z["benchmark"] == "climp"
    with pytest.raises(UserError):
        state.random_pair("blimp", "island_effects", "regular_plural_subject_verb_agreement_1")
    good, bad, meta2, label = probe.pick_random("blimp", state.ANY, state.ANY)
    assert good == meta2["good"] and "BLiMP" in label


def test_masked_probe_path_with_tiny_bert(toy_dir):
    """A masked LM in the probe: PLL table of four variants and the per-token PLL figure."""
    import torch
    from masked_fixtures import tiny_bert, wordpiece_tokenizer

    from accapp.engine import Engine
    from accapp.scoring.masked import MaskedScorer

    st = state.AppState(results_dir=toy_dir)
    tok = wordpiece_tokenizer()
    st.register_engine("bert-base-cased", Engine(MaskedScorer(tiny_bert(tok), tok, batch_size=32)))
    state.set_state(st)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        methods = [i for _, i in svc.method_choices("masked")]
        assert methods == ["pll_original", "pll_word_l2r", "pll_whole_word", "pll_sentence_l2r"]
        out = run("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", "bert-base-cased", methods)[-1]
        assert out["pll"]["visible"] is True and len(out["pll"]["value"].data) == 8
        assert list(out["table"]["value"].data["Method"]) == ["PLL-original", "PLL-word-l2r", "PLL-whole-word", "PLL-sentence-l2r"]
        assert "PLL-word-l2r prefers" in out["head"]  # the masked LM's headline method
        words = out["saved"]["reports"][0]["words"]["good"]
        assert [w["word"] for w in words] == ["These", "casseroles", "disgust", "Kayla", "."]
        ctx = probe.context_after("bert-base-cased", "lp", out["meta"], "These casseroles disgust Kayla.",
                                  "These casseroles disgusts Kayla.", out["saved"])
        assert "No precomputed BLiMP run of <b>PLL-word-l2r</b>" in ctx  # the masked default for the comparison
        again = probe.replot(out["saved"], "nats", "words")
        assert again[-2]["visible"] is True
        text = probe.show_prompts("bert-base-cased", "pll_whole_word", "These casseroles disgust Kayla.", "Kayla.")
        assert "[MASK]" in text
        upd = probe.on_model_change("bert-base-cased", ["lp"])
        assert upd[0]["value"] == methods and upd[1]["value"] == "pll_word_l2r"
    finally:
        torch.set_num_threads(threads)
        state.set_state(None)


# ------------------------------------------------------------------------------------------ score a file
def _csv(rows) -> bytes:
    return pd.DataFrame(rows, columns=["good", "bad"]).to_csv(index=False).encode()


def test_score_file_rows_and_errors(app_state, tmp_path):
    rows = [(f"The dog {i} barks.", f"The dog {i} bark.") for i in range(10)]
    rows[3] = ("", "The dog barks.")
    rows[7] = ("The dog barks.", "x" * 500)
    path = tmp_path / "pairs.csv"
    path.write_bytes(_csv(rows))
    steps = []
    methods = ["lp", "mean_lp", "ab_prompting", "yes_no_prob_comp"]
    out, df = score_file.score_upload(str(path), DEFAULT_MODEL, methods, lambda p, **kw: steps.append(p))
    assert len(df) == 10 and list(df["row"]) == list(range(1, 11))
    errors = df["error"].tolist()
    assert "empty" in errors[3] and "500 characters" in errors[7]
    assert sum(bool(e) for e in errors) == 2
    assert df.loc[0, "lp: verdict"] in ("good", "bad") and pd.isna(df.loc[3, "lp: score_good (nats)"])
    assert "ab_prompting [1, good=A]: verdict" in df.columns and "yes_no_prob_comp [1]: score_bad (P(Yes))" in df.columns
    assert steps[-1] == (10, 10)
    written = pd.read_csv(out, keep_default_na=False)
    assert len(written) == 10 and (written["error"] != "").sum() == 2
    assert not [p for p in Path(out).parent.iterdir() if p.name.startswith(".")]  # no temp file left


def test_score_file_isolates_a_failing_batch(app_state, tmp_path):
    app_state.register_engine(DEFAULT_MODEL, FakeEngine(fail_on="poison"))
    rows = [(f"Good {i}.", f"Bad {i}.") for i in range(12)]
    rows[5] = ("A poison pill.", "A pill.")
    df = score_file.score_frame(pd.DataFrame(rows, columns=["good", "bad"]), DEFAULT_MODEL, ["lp"])
    assert df["error"].tolist().count("") == 11
    assert "boom" in df.loc[5, "error"]


def test_score_file_bad_uploads(app_state, tmp_path):
    with pytest.raises(UserError, match="Upload a CSV"):
        score_file.score_upload(None, DEFAULT_MODEL, ["lp"])
    bad = tmp_path / "pairs.xlsx"
    bad.write_bytes(b"x")
    with pytest.raises(UserError, match="Unsupported file type"):
        score_file.score_upload(str(bad), DEFAULT_MODEL, ["lp"])
    nocol = tmp_path / "p.csv"
    nocol.write_text("first,second\na,b\n")
    with pytest.raises(UserError, match="good-sentence column"):
        score_file.score_upload(str(nocol), DEFAULT_MODEL, ["lp"])
    with pytest.raises(gr.Error, match="gone from the server"):
        list(score_file.run_score(str(tmp_path / "missing.csv"), DEFAULT_MODEL, ["lp"]))


def test_a_malformed_file_s_message_stays_on_the_page(app_state, tmp_path):
    """Issue 34 item 9: the tab's handler puts a refusal in the summary box (a toast disappears),
    clears the old results, and raises nothing."""
    nocol = tmp_path / "p.csv"
    nocol.write_text("first,second\na,b\n")
    out = list(score_file.run_score_in_page(str(nocol), DEFAULT_MODEL, ["lp"]))
    result, summary, preview, upload, phenomena = out[-1]
    assert "The file was not scored." in summary and "good-sentence column" in summary and "acc-note-bad" in summary
    assert result["visible"] is False and preview["visible"] is False and phenomena["visible"] is False
    gone = list(score_file.run_score_in_page(str(tmp_path / "missing.csv"), DEFAULT_MODEL, ["lp"]))
    assert "gone from the server" in gone[-1][1]


def test_a_file_job_waits_its_turn_showing_its_place_and_stop_takes_it_out(app_state, tmp_path):
    """The tab's handler in the app's file queue (accapp.service.file_jobs): with every slot taken it
    waits, showing its place; the visitor's second job is refused at once saying where the first
    stands; it runs once a slot frees; closed while it waits (Stop), it leaves the queue."""
    from accapp.service.file_jobs import file_queue

    queue, me = file_queue(), gr.Request(session_hash="me")
    path = tmp_path / "pairs.csv"
    path.write_bytes(_csv([("The dogs bark.", "The dogs barks.")]))
    blockers = [queue.admit(f"other-{k}") for k in range(queue.concurrency)]
    try:
        run = score_file.run_score(str(path), DEFAULT_MODEL, ["lp"], request=me)
        shown = next(run)
        assert "Waiting: number 1 in the queue…" in shown[1]
        assert queue.counts()["waiting"] == 1
        file_check = score_file.validate_job(str(path), DEFAULT_MODEL, ["lp"], request=me)[0]
        assert not file_check["is_valid"] and file_check["message"].startswith("Your file is number 1 in the queue")
        blockers.pop().leave()  # a slot frees: the job runs to its end
        last = list(run)[-1]
        assert "Scored <b>1</b> of 1 rows" in last[1] and queue.refusal("me") is None
        assert queue.counts() == {"running": len(blockers), "waiting": 0}

        blockers.append(queue.admit("other-again"))
        stopped = score_file.run_score(str(path), DEFAULT_MODEL, ["lp"], request=me)
        assert "Waiting: number 1" in next(stopped)[1]
        stopped.close()  # what Stop does: Gradio closes the handler's generator
        assert queue.counts() == {"running": len(blockers), "waiting": 0} and queue.refusal("me") is None
    finally:
        for job in blockers:
            job.leave()


def test_column_names():
    assert file_svc.column_name("lp", "-", "", "verdict") == "lp: verdict"
    assert file_svc.column_name("in_template_lp", "2", "", "score_good") == "in_template_lp [2]: score_good"
    assert file_svc.column_name("ab_prompting", "1", "good=B", "score_bad") == "ab_prompting [1, good=B]: score_bad"


def test_score_file_service_with_an_engine_in_hand():
    """The service runs without the app: run=direct(engine) calls the engine in place."""
    pairs = pd.DataFrame([("The dogs bark.", "The dogs barks."), ("", "x")], columns=["good", "bad"])
    df = file_svc.score_frame(pairs, DEFAULT_MODEL, ["lp", "yes_no_prob_comp", "mean_lp", "ab_prompting"],
                              run=file_svc.direct(FakeEngine()))
    assert df["error"].tolist()[0] == "" and "empty" in df["error"].tolist()[1]
    assert df.loc[0, "majority_verdict"] == "good" and df.loc[0, "judgments_for_good"] == 3
    assert df.loc[0, "ab_prompting [1, good=A]: verdict"] == "good" and df.loc[0, "tokens_good"] == 3
    with pytest.raises(UserError, match="Pick at least one method"):
        file_svc.score_frame(pairs, DEFAULT_MODEL, [], run=file_svc.direct(FakeEngine()))


def test_result_file_names_are_safe(app_state, tmp_path):
    path = tmp_path / ".odd name;rm -rf.csv"
    path.write_bytes(_csv([("The dogs bark.", "The dogs barks.")]))
    out, _ = score_file.score_upload(str(path), DEFAULT_MODEL, ["lp"])
    assert Path(out).name == f"odd_name_rm_-rf-scored-{DEFAULT_MODEL}.csv"


# ------------------------------------------------------------------------------------------ explore
def test_explore_render_with_results(app_state):
    out = explore.render("blimp", TOY, ["lp", "in_template_lp"], "best", False, "all", "lp")
    assert set(out) == set(explore.VIEWS)  # every view by name, none by position
    status, overall, phen, length, para_phen = out["status"], out["overall"], out["phenomenon"], out["length"], \
        out["paradigm_phenomena"]
    ens_tbl, wrong_note, wrong = out["ensembles_table"], out["wrong_note"], out["wrong"]
    assert "8 pairs in 3 of its 67 paradigms" in status  # a toy run of BLiMP: part of it, and it says so
    assert set(overall.Method) >= {"LP", "In-template LP", "human judgment"}  # the names every tab shows
    assert any(str(s).startswith("Ide et al. 2025") for s in overall.Source)
    names = [t.name for t in phen.data]
    assert "LP" in names and any(n.startswith("Humans (published") for n in names)
    assert "r = " in length.data[0].name
    assert set(para_phen["choices"]) >= {("all", "all"), ("island_effects", "island_effects")} or \
        "island_effects" in str(para_phen["choices"])
    # the settings in Ide et al.'s words, no ids (issue 34, item 7)
    assert "Ensemble Mix-P3" in set(ens_tbl.setting) and not set(ens_tbl.setting) & set(ENSEMBLE_ORDER)
    assert "In-template LP: best template (oracle)" in set(ens_tbl.setting)
    assert len(wrong) == 3 and set(wrong.Pair) == {"1", "3"}
    assert "Click a row" in wrong_note
    # issue 34 item 7: phenomena in words (ids the values), margins in bits with the unit in the header
    assert ("island effects", "island_effects") in para_phen["choices"]
    assert ("all phenomena", "all") == para_phen["choices"][0] and out["wrong_phenomena"]["choices"] == para_phen["choices"]
    raw = out["wrong_state"]  # the frame behind the table (its CSV, a row opening in the probe): ids and nats
    assert "Margin: good − bad (bits)" in wrong.columns and "Score: good (bits)" in wrong.columns
    assert wrong["Margin: good − bad (bits)"].tolist() == pytest.approx(
        [round(m / math.log(2), 4) for m in raw["Margin (good − bad)"]], abs=2e-4)
    assert not wrong.Phenomenon.str.contains("_").any() and raw.Phenomenon.str.contains("_").any()
    assert "in bits" in wrong_note
    for fig in (out["shuffle"], out["attractors"]):  # legends name methods as every tab does, never by id
        assert {t.name for t in fig.data} >= {"LP", "In-template LP [1]"}
    mean = explore.render("blimp", TOY, ["in_template_lp"], "mean", True, "island_effects", "in_template_lp")
    assert [t.name for t in mean["phenomenon"].data][0] == "In-template LP [mean]"
    both = explore.render("blimp", DEFAULT_MODEL, ["lp"], "best", False, "all", "lp", [TOY])
    assert {t.name for t in both["phenomenon"].data} >= {f"LP · {DEFAULT_MODEL}", f"LP · {TOY}"}
    assert set(both["overall"].Model) >= {DEFAULT_MODEL, TOY}
    t2 = explore.render("blimp", TOY, ["in_template_lp", "lp"], "2", False, "all", "in_template_lp")
    assert {t.name for t in t2["phenomenon"].data} >= {"In-template LP [2]", "LP"}


def test_explore_filters_and_evil_names(app_state):
    m, methods, wrong, also = explore.update_filters("blimp", None, None, None)
    assert also["value"] == [] and TOY in str(also["choices"])
    assert m["value"] == DEFAULT_MODEL and methods["value"] == ["lp", "in_template_lp", "yes_no_prob_comp"]
    evil = "evil'); DROP VIEW results; --"
    out = explore.render("blimp", evil, ["lp"], "best", False, "all", "lp")
    assert "evil&#x27;); DROP VIEW results; --" in out["status"]
    assert "<img" not in out["phenomenon"].to_json()


def test_explore_published_only(tmp_path):
    st = state.AppState(results_dir=tmp_path)
    state.set_state(st)
    try:
        m, methods, wrong, also = explore.update_filters("blimp", None, None, None)
        assert m["value"] is None and ("LP", "lp") in methods["choices"] and wrong["choices"] == []
        out = explore.render("blimp", None, None, "best", False, "all", None)
        assert "No results shipped for BLiMP yet with any model" in out["status"]
        # the legend entry wraps between words to fit a phone
        assert [t.name.replace("<br>", " ") for t in out["phenomenon"].data] == ["Humans (published: Warstadt et al. 2020)"]
        assert len(out["phenomenon"].data[0].x) == 12
        assert "Ide et al. 2025" in " ".join(out["overall"].Source)
        assert len(out["wrong"]) == 0
        climp = explore.render("climp", None, None, "best", False, "all", None)
        assert "No results shipped for CLiMP yet with any model" in climp["status"]
    finally:
        state.set_state(None)


def test_store_sees_new_result_files(tmp_path):
    st = state.AppState(results_dir=tmp_path)
    assert st.store().models("blimp") == []
    write_results(tmp_path)
    assert TOY in st.store().models("blimp")


# ------------------------------------------------------------------------------------------ about, state, app
def test_about_tables():
    assert all(f"`{m}`" in about.methods_md() for m in ("lp", "slor", "ens_l_only", "pll_sentence_l2r"))
    models = about.models_md()
    assert "Apache-2.0" in models and "Gemma Terms of Use" in models
    templates = about.templates_md()
    assert "Linguists would consider the sentence below" in templates and "MetaQuestionComplex" not in templates
    assert "meta\\_question\\_complex" in templates
    assert about.md("<b>|x|</b>") == "&lt;b&gt;\\|x\\|&lt;/b&gt;"
    assert "BLiMP" in about.benchmarks_md() and "Warstadt" in about.benchmarks_md()


def test_model_slots_serialise_one_model():
    st = state.AppState()
    active, peak = [0], [0]

    def work():
        with st.model_slot("m"):
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            time.sleep(0.05)
            active[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 1


def test_friendly_passes_gr_errors_through():
    @friendly
    def f(x):
        if x == 1:
            raise gr.Error("already nice")
        raise UserError("plain words")

    with pytest.raises(gr.Error, match="already nice"):
        f(1)
    with pytest.raises(gr.Error, match="plain words"):
        f(2)


def test_app_builds_with_api_endpoints_and_reads_the_environment(monkeypatch):
    from accapp.ui import app as ui_app

    demo = ui_app.build_app()
    names = {fn.api_name for fn in demo.fns.values()}
    assert {"probe", "score_file"} <= names
    seen = {}
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **kw: seen.update(kw))
    monkeypatch.setattr(ui_app, "_exit_on_sigterm", lambda: None)  # leave pytest's own signal handling alone
    monkeypatch.setenv("PORT", "7999")
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    monkeypatch.setenv("ACCAPP_PRELOAD", "0")
    ui_app.main()
    assert seen["server_port"] == 7999 and seen["server_name"] == "0.0.0.0" and seen["show_error"] is False
    monkeypatch.delenv("PORT")
    monkeypatch.delenv("GRADIO_SERVER_NAME")
    ui_app.main()
    assert seen["server_port"] == 7860 and seen["server_name"] == "127.0.0.1"
    assert Path("app.py").read_text().count("\n") < 12  # app.py stays tiny


@pytest.mark.slow
@pytest.mark.parametrize("failure", ["oom", "cuda"])
def test_model_failure_unloads_then_next_request_reloads(toy_dir, failure):
    """A real SmolLM2 engine whose forward pass fails once (out of memory, or a CUDA error):
    the request gets a message, the model is unloaded, and the next request loads it again
    and is answered."""
    import torch

    from accapp.ui.common import DEVICE_MESSAGE

    st = state.AppState(results_dir=toy_dir)
    state.set_state(st)
    try:
        engine = st.engine(DEFAULT_MODEL)
        exc = (torch.OutOfMemoryError("CUDA out of memory") if failure == "oom"
               else RuntimeError("CUDA error: an illegal memory access was encountered"))

        def fail(*a, **k):
            raise exc

        engine.scorer.score = fail  # the causal scorer's forward passes
        with pytest.raises(gr.Error) as info:
            probe.probe_api("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", DEFAULT_MODEL, ["lp"])
        assert info.value.message == (OOM_MESSAGE if failure == "oom" else DEVICE_MESSAGE)
        assert not st.is_loaded(DEFAULT_MODEL)
        out = probe.probe_api("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.", DEFAULT_MODEL, ["lp"])
        assert st.engine(DEFAULT_MODEL) is not engine
        assert out["verdicts"][0]["verdict"] == "good"
    finally:
        state.set_state(None)


def test_status_line_says_how_many_pairs_each_method_has(app_state, toy_dir):
    path = toy_dir / f"{TOY}__blimp.manifest.json"
    man = json.loads(path.read_text())
    man["per_paradigm_by_method"] = {"lp": 100, "in_template_lp": 100, "ab_prompting": 30}
    path.write_text(json.dumps(man))
    text = explore.status_html("blimp", TOY)
    assert "a seeded sample (seed 0) of at least 30 pairs per paradigm for every method, 100 for in_template_lp, lp" in text
    man["per_paradigm_by_method"] = {"lp": 10}
    path.write_text(json.dumps(man))
    assert "a seeded sample (seed 0) of at least 10 pairs per paradigm for every method ·" in explore.status_html("blimp", TOY)
    # a method with as many pairs as the benchmark has (BLiMP: 67,000) was scored on every pair, not a sample
    man["per_paradigm_by_method"] = {"lp": 1000, "slor": 1000, "ab_prompting": 30}
    man["pairs_by_method"] = {"lp": 67_000, "slor": 67_000, "ab_prompting": 2010}
    path.write_text(json.dumps(man))
    assert ("every pair for lp, slor; a seeded sample (seed 0) of at least 30 pairs per paradigm for every other method ·"
            in explore.status_html("blimp", TOY))
    man["per_paradigm_by_method"] = {"lp": 1000, "slor": 1000}
    man["pairs_by_method"] = {"lp": 67_000, "slor": 67_000}
    path.write_text(json.dumps(man))
    assert "every pair for every method ·" in explore.status_html("blimp", TOY)
    # a run of every pair in some paradigms (stopped part way and shipped): the consolidation counts, per
    # method, the paradigms it has whole; neither a sample nor the whole benchmark
    man["pairs_by_method"] = {"lp": 3000, "slor": 3000, "ab_prompting": 90}
    man["per_paradigm_by_method"] = {"lp": 1000, "slor": 1000, "ab_prompting": 30}
    man["paradigms_by_method"] = {"lp": 3, "slor": 3, "ab_prompting": 3}
    man["complete_paradigms_by_method"] = {"lp": 3, "slor": 3, "ab_prompting": 0}
    path.write_text(json.dumps(man))
    text = explore.status_html("blimp", TOY)
    assert "in 3 of its 67 paradigms · every pair for lp, slor; a seeded sample (seed 0) of at least 30" in text, text
    del man["complete_paradigms_by_method"]
    # a sample shipped before it reached every paradigm: the line says which methods lack paradigms
    n = len(pd.read_parquet(toy_dir / f"{TOY}__blimp.parquet").paradigm.unique())
    assert n > 1
    man["per_paradigm_by_method"] = {"lp": 100, "in_template_lp": 30, "ab_prompting": 30}
    man["pairs_by_method"] = {"lp": 100 * n, "in_template_lp": 30 * (n - 1), "ab_prompting": 30 * (n - 1)}
    man["paradigms_by_method"] = {"lp": n, "in_template_lp": n - 1, "ab_prompting": n - 1}
    path.write_text(json.dumps(man))
    text = explore.status_html("blimp", TOY)
    assert f"100 for lp; ab_prompting, in_template_lp: {n - 1} of the {n} paradigms only" in text, text
    man["paradigms_by_method"] = {"lp": n, "in_template_lp": n, "ab_prompting": n}
    path.write_text(json.dumps(man))
    assert "paradigms only" not in explore.status_html("blimp", TOY)


def test_identical_sentences_warning_comes_before_the_votes_and_says_why():
    """Issue 34 item 7: for identical sentences the warning comes first, and the votes' summary gives the
    right reason for the missing votes (every score ties), not a disagreement of templates."""
    from accapp.ui import probe_view

    def report(good, bad, warnings):
        return {"model": "m", "good": good, "bad": bad, "warnings": warnings,
                "agreement": {"verdict": "tie", "good": 0, "bad": 0, "none": 3, "not_voting": 0},
                "families": [{"family": "sentence probability", "good": 0, "bad": 0, "none": 3, "not_voting": 0}]}

    warn = "The two sentences are identical: every method can only tie, and no verdict means anything."
    shown = probe_view.headline_html(report("The dog barks.", "The dog barks.", [warn]))
    assert shown.index("acc-warning") < shown.index("acc-agree")
    assert "identical, so every score ties" in shown and "answer orders disagree" not in shown
    other = probe_view.headline_html(report("The dog barks.", "The dog bark.", []))
    assert "a tie, or their templates or answer orders disagree" in other


def test_identical_sentences_are_reported_before_any_method_runs():
    """The probe's first stage, before any model is asked, already says the two sentences are identical."""
    from accapp.schema import IDENTICAL_WARNING
    from accapp.service import probe as svc

    stages = svc.staged_probe("The dogs bark.", "The dogs bark.", [svc.DEFAULT_MODEL], ["lp"])
    first = next(stages)
    stages.close()
    assert first.saved is None and first.notice == IDENTICAL_WARNING
    other = svc.staged_probe("The dogs bark.", "The dogs barks.", [svc.DEFAULT_MODEL], ["lp"])
    assert next(other).notice == ""
    other.close()
