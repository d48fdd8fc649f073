"""The critical region (issue 34, item 13) and the many-pairs box (item 15): parsing the brackets and
the pasted lines (units), and the region's sums against the word view's own per-word surprisals,
through the probe (/probe's service.probe_api and the tab's staged probe) on the tiny random-weight
Llama with SmolLM2's tokenizer; the many-pairs table and its CSV (service/export.py)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping

import pytest

from accapp.engine import Engine
from accapp.errors import UserError
from accapp.models import DEFAULT_MODEL
from accapp.scoring.causal import CausalScorer
from accapp.service import export, many_pairs, region
from accapp.service import host as state
from accapp.service import probe as svc
from accapp.ui import links, region_view
from accapp.ui import many_pairs as many_ui
from accapp.ui import probe as probe_ui

GOOD, BAD = "These casseroles disgust Kayla.", "These casseroles disgusts Kayla."
LN2 = math.log(2)


# ------------------------------------------------------------------------------------------ brackets
@pytest.mark.parametrize("text, clean, span", [
    ("These casseroles [[disgust]] Kayla.", GOOD, (17, 24)),
    ("[[These casseroles]] disgust Kayla.", GOOD, (0, 16)),
    ("  These casseroles disgust [[Kayla.]]  ", GOOD, (25, 31)),
    ("These casseroles [[ disgust ]] Kayla.", "These casseroles  disgust  Kayla.", (18, 25)),
    ("他们[[喜欢]]这本书。", "他们喜欢这本书。", (2, 4)),
    (GOOD, GOOD, None),
])
def test_brackets_are_stripped_and_their_span_kept(text, clean, span):
    got = region.parse(text)
    assert (got.text, got.span) == (clean, span)
    if span:
        assert region.marked(got.text, got.span).replace(" ", "") == text.strip().replace(" ", "")


@pytest.mark.parametrize("text, said", [
    ("These [[casseroles disgust Kayla.", "unmatched bracket"),
    ("These ]]casseroles[[ disgust.", "unmatched bracket"),
    ("These [[casseroles]] [[disgust]] Kayla.", "more than one region"),
    ("These [[ ]] casseroles.", "is empty"),
    ("These [[cass [[eroles]] x]].", "cannot nest"),
])
def test_bad_brackets_get_a_clear_message(text, said):
    with pytest.raises(UserError, match=said):
        region.parse(text, "acceptable sentence")


def test_a_region_marked_once_is_carried_by_word_position():
    good, bad, spans = region.split_pair("These casseroles [[disgust]] Kayla.", BAD)
    assert (good, bad) == (GOOD, BAD) and bad[slice(*spans["bad"])] == "disgusts"
    good, bad, spans = region.split_pair(GOOD, "These [[casseroles disgusts]] Kayla.")
    assert good[slice(*spans["good"])] == "casseroles disgust"
    with pytest.raises(UserError, match="mark it in both"):
        region.split_pair("The cat [[sleeps]].", "The cat is sleep.")
    assert region.split_pair(GOOD, BAD) == (GOOD, BAD, None)


def test_region_sums_of_hand_made_words():
    words = [{"word": w, "start": a, "end": b, "logprob": lp} for w, a, b, lp in
             [("A", 0, 1, -1.0), ("big", 2, 5, -2.0), ("dog", 6, 9, -3.0), (".", 9, 10, -0.5)]]
    side = region.side_report(words, (2, 9))
    assert side["region"]["words"] == ["big", "dog"] and side["region"]["surprisal_nats"] == pytest.approx(5.0)
    assert side["region"]["surprisal_bits"] == pytest.approx(5.0 / LN2)
    assert side["spillover"]["words"] == ["."] and side["spillover"]["surprisal_nats"] == pytest.approx(0.5)
    assert region.side_report(words, (9, 10))["spillover"] is None  # the region ends the sentence


# ------------------------------------------------------------------------------------------ pasted lines
def test_pasted_lines_are_read_and_bad_lines_kept_with_their_error():
    text = f"{GOOD}\t{BAD}\n\n  \r\nThe cat sleeps.\tThe cat sleep.\r\nno tab here\na\tb\tc\n"
    lines = many_pairs.parse_lines(text, limit=10)
    assert [(ln.number, ln.good, ln.bad) for ln in lines[:2]] == [(1, GOOD, BAD), (4, "The cat sleeps.", "The cat sleep.")]
    assert "Line 5 has no tab" in lines[2].error and "Line 6 has 2 tabs" in lines[3].error


def test_pasted_lines_are_bounded():
    with pytest.raises(UserError, match="at most 3 are probed at once"):
        many_pairs.parse_lines("\n".join(f"a{i}\tb{i}" for i in range(4)), limit=3)
    with pytest.raises(UserError, match="Paste at least one pair"):
        many_pairs.parse_lines(" \n ")
    assert many_pairs.max_lines() == 50  # the setting's default (accapp/settings.py)


def test_the_bound_is_a_setting(monkeypatch):
    monkeypatch.setenv("ACCAPP_MANY_PAIRS_MAX", "2")
    with pytest.raises(UserError, match="3 pairs; at most 2"):
        many_pairs.parse_lines("a\tb\nc\td\ne\tf")


# ------------------------------------------------------------------------------------------ through the probe
@pytest.fixture()
def tiny_state(tiny_llama, tmp_path):
    """The model host with the tiny Llama (SmolLM2's tokenizer and spec) as the default model."""
    st = state.AppState(results_dir=tmp_path)
    st.register_engine(DEFAULT_MODEL, Engine(CausalScorer(tiny_llama)))
    state.set_state(st)
    yield st
    state.set_state(None)


def _check_sums(report):
    """Region and spill-over sums equal the sums of the word view's per-word surprisals."""
    reg = report["region"]
    for side in ("good", "bad"):
        words = report["words"][side]
        for part in ("region", "spillover"):
            r = reg[side][part]
            assert [words[i]["word"] for i in r["word_indices"]] == r["words"]
            assert r["surprisal_bits"] == pytest.approx(sum(words[i]["surprisal_bits"] for i in r["word_indices"]), abs=1e-9)
            assert r["surprisal_nats"] == pytest.approx(sum(words[i]["surprisal_nats"] for i in r["word_indices"]), abs=1e-9)
        assert reg[side]["spillover"]["word_indices"] == [reg[side]["region"]["word_indices"][-1] + 1]
    assert reg["difference"]["region"]["surprisal_bits"] == pytest.approx(
        reg["bad"]["region"]["surprisal_bits"] - reg["good"]["region"]["surprisal_bits"])


def test_probe_api_reports_the_region_and_the_context(tiny_state):
    out = svc.probe_api(DEFAULT_MODEL, "These [[casseroles disgust]] Kayla.", "These [[casseroles disgusts]] Kayla.",
                        ["lp", "in_template_lp"], context="Kayla cooked all week.")
    assert (out["good"], out["bad"]) == (GOOD, BAD)  # the brackets were never scored
    assert out["region"]["good"]["region"]["words"] == ["casseroles", "disgust"]
    assert out["region"]["bad"]["spillover"]["words"] == ["Kayla"] and out["region"]["spillover_words"] == 1
    _check_sums(out)
    assert out["context"]["conditioned"] == ["lp"] and out["context"]["not_applied"] == ["in_template_lp"]
    # the same pair without brackets: the same scores, no region
    plain = svc.probe_api(DEFAULT_MODEL, GOOD, BAD, ["lp", "in_template_lp"], context="Kayla cooked all week.")
    assert plain["region"] is None
    assert plain["verdicts"][0]["score_good"] == pytest.approx(out["verdicts"][0]["score_good"], abs=1e-4)
    assert region.marked_pair(out) == ("These [[casseroles disgust]] Kayla.", "These [[casseroles disgusts]] Kayla.")


def test_the_probe_tab_shows_the_region_in_its_unit(tiny_state):
    *_, last = probe_ui.run_probe("These casseroles [[disgust]] Kayla.", BAD, DEFAULT_MODEL, "", ["lp", "mean_lp"],
                                  "nats", "words", "lp", None, None, "Kayla cooked all week.")
    saved = next(o for o in last if isinstance(o, Mapping) and "reports" in o)  # the tab's saved state (read-only)
    report = saved["reports"][0]
    _check_sums(report)
    html = region_view.extras_html(saved, "nats")
    nats = report["region"]["good"]["region"]["surprisal_nats"]
    assert f"{nats:.2f} nats" in html and "disgusts" in html and "Spill-over</abbr> (next 1 word)" in html
    assert "In the region you marked, at “disgust / disgusts”" in report["headline"]["text"]
    assert "Kayla cooked all week." in html and "Scored after it: LP, MeanLP" in html
    assert f"{nats / LN2:.2f} bits" in region_view.extras_html(saved, "bits")


def test_the_export_and_the_link_keep_context_and_region(tiny_state):
    out = svc.probe_api(DEFAULT_MODEL, "These casseroles [[disgust]] Kayla.", BAD, ["lp"], context="Kayla cooked.")
    extras = {"prompts": {}, "provenance": {"model": DEFAULT_MODEL}}
    record = export.export_record([out], [extras], "")
    assert record["context"]["text"] == "Kayla cooked." and record["models"][0]["region"] == out["region"]
    rows = list(csv.DictReader(io.StringIO(export.csv_text(record))))
    kinds = [r["record"] for r in rows]
    assert kinds.count("region") == 2 and kinds.count("spillover") == 2 and kinds.count("context") == 1
    reg = next(r for r in rows if r["record"] == "region" and r["sentence"] == "bad")
    assert reg["item"] == "disgusts" and float(reg["surprisal_bits"]) == pytest.approx(
        out["region"]["bad"]["region"]["surprisal_bits"])
    # the link: context and the region (back in brackets) survive the round trip
    good, bad = region.marked_pair(out)
    values = {"good": good, "bad": bad, "model": DEFAULT_MODEL, "model2": "", "methods": ["lp"], "unit": "bits",
              "view": "words", "context": "Kayla cooked."}
    back = links.probe_values(links.parse_query(links.probe_query(values)))
    assert back == dict(values, bad="These casseroles [[disgusts]] Kayla.")
    assert region.split_pair(back["good"], back["bad"])[2] == region.split_pair(good, bad)[2]


def test_many_pairs_table_and_csv(tiny_state):
    text = (f"{GOOD}\t{BAD}\nThe cat [[sleeps]].\tThe cat [[sleep]].\nno tab\n"
            "The [[dog barks.\tThe dog bark.")
    seen = []
    outs = list(many_ui.run_many(text, DEFAULT_MODEL, ["lp"], "bits", "", progress=lambda *a, **k: seen.append(a)))
    status, frame, download = outs[-1]
    assert "Probed 4 pairs; 2 could not be probed" in status
    assert list(frame["Line"]) == [1, 2, 3, 4] and len(seen) == 4
    first = frame.iloc[0]
    assert first["Headline"].startswith("LP prefers") and first["Verdict"] in ("good", "bad", "tie")
    assert "no tab" in frame.iloc[2]["Error"] and "Line 4" in frame.iloc[3]["Error"]
    assert "unmatched bracket" in frame.iloc[3]["Error"]
    assert frame.iloc[1]["Region: bad − good surprisal (bits)"] != ""
    # the CSV: BOM, every line, margins in both units, the same numbers as a probe of the line alone
    raw = open(download["value"], "rb").read()
    assert raw.startswith(b"\xef\xbb\xbf")
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    assert [r["line"] for r in rows] == ["1", "2", "3", "4"] and list(rows[0]) == many_pairs.COLUMNS
    alone = svc.probe_api(DEFAULT_MODEL, GOOD, BAD, ["lp"])
    assert float(rows[0]["margin_nats"]) == pytest.approx(alone["headline"]["margin"], abs=1e-4)
    assert float(rows[0]["margin_bits"]) == pytest.approx(alone["headline"]["margin"] / LN2, abs=1e-4)


def test_many_pairs_over_the_bound_is_a_message(tiny_state, monkeypatch):
    monkeypatch.setenv("ACCAPP_MANY_PAIRS_MAX", "1")
    (status, frame, _), = list(many_ui.run_many("a b.\tc d.\ne f.\tg h.", DEFAULT_MODEL, ["lp"], "bits", ""))
    assert "2 pairs; at most 1" in status and frame is None and "Traceback" not in status


# clicked: a click on a word of the per-word figure (issue 34, item 13)
S = "These casseroles disgust Kayla."


def test_click_marks_a_word():
    assert region.clicked(S, (17, 24)) == "These casseroles [[disgust]] Kayla."


def test_click_replaces_a_marked_region():
    assert region.clicked("These [[casseroles]] disgust Kayla.", (25, 30)) == "These casseroles disgust [[Kayla]]."


def test_click_beside_the_region_grows_it():
    assert region.clicked("These [[casseroles]] disgust Kayla.", (17, 24)) == "These [[casseroles disgust]] Kayla."
    assert region.clicked("These [[casseroles]] disgust Kayla.", (0, 5)) == "[[These casseroles]] disgust Kayla."
    assert region.clicked("These [[casseroles disgust]] Kayla.", (25, 30)) == "These [[casseroles disgust Kayla]]."


def test_click_on_the_sole_marked_word_removes_it():
    assert region.clicked("These casseroles [[disgust]] Kayla.", (17, 24)) == S


def test_click_inside_a_longer_region_narrows_it():
    assert region.clicked("These [[casseroles disgust]] Kayla.", (17, 24)) == "These casseroles [[disgust]] Kayla."


def test_stale_or_invalid_span_leaves_the_sentence():
    for span in [(17, 23), (40, 45), (5, 6), (3, 1), ("x", 2), None, (-1, 5)]:
        assert region.clicked("These casseroles [[disgust]] Kayla.", span) == "These casseroles [[disgust]] Kayla."
    assert region.clicked("These [[casseroles disgust Kayla.", (0, 5)) == "These [[casseroles disgust Kayla."


def test_click_offsets_are_into_the_stripped_sentence():
    # the offsets are the scored sentence's (no brackets, no leading spaces)
    assert region.clicked("  [[These]] casseroles disgust Kayla.", (17, 24)) == "These casseroles [[disgust]] Kayla."


def test_click_chinese():
    assert region.clicked("这些桌子很干净。", (2, 4)) == "这些[[桌子]]很干净。"
    assert region.clicked("这些[[桌子]]很干净。", (4, 5)) == "这些[[桌子很]]干净。"
    assert region.clicked("这些[[桌子]]很干净。", (2, 4)) == "这些桌子很干净。"
