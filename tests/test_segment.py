"""Chinese words by jieba (issue 34 item 8; accapp/segment.py): the word view groups Chinese
characters into words, keeps a character view, and each word's surprisal is the sum of its
tokens' surprisals, so the words of a sentence add up to the sentence's total, as for English."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from accapp.engine import Engine, make_scorer
from accapp.scoring.word_prob import word_records
from accapp.segment import characters, group_records, needs_segmenting, segmented_note, segmenter_name
from accapp.words import split_words

GALLERY = json.loads((Path(__file__).resolve().parents[1] / "accapp" / "data" / "gallery.json").read_text("utf-8"))
TABLE = "桌子上有一本书。"  # hand-made: "there is a book on the table"
# The words a reader of Chinese expects (checked by hand; jieba agrees): 桌子 and 自行车 are one word.
EXPECTED = {
    TABLE: ["桌子", "上", "有", "一", "本书", "。"],
    "孙莹莹正在扔一辆自行车。": ["孙", "莹莹", "正在", "扔", "一辆", "自行车", "。"],  # CLiMP classifier:1 (gallery cl-1)
    "孙莹莹正在扔一架自行车。": ["孙", "莹莹", "正在", "扔", "一架", "自行车", "。"],
    "王鑫把自行车扔了。": ["王鑫", "把", "自行车", "扔", "了", "。"],  # CLiMP ba_construction:1 (gallery ba-1)
    "王鑫被自行车扔了。": ["王鑫", "被", "自行车", "扔", "了", "。"],
    "章鱼被清洗了。": ["章鱼", "被", "清洗", "了", "。"],  # CLiMP passive_formal:108 (gallery ba-4)
    "章鱼被蒸发了。": ["章鱼", "被", "蒸发", "了", "。"],
}
ENGLISH = ["These casseroles disgust Kayla.", "I don't think Kayla's well-known friends bought 3,000 souvenirs."]


def _gallery(ident: str) -> dict:
    return next(g for g in GALLERY if g["id"] == ident)


from tests.threads import one_thread  # noqa: E402,F401 - autouse: one torch thread for this module


# ---- the grouping alone, on made-up numbers ----------------------------------------------
def test_gallery_sentences_are_the_expected_ones():
    for ident in ("cl-1", "ba-1", "ba-4"):
        g = _gallery(ident)
        assert g["source"].startswith("climp:") and g["good"] in EXPECTED and g["bad"] in EXPECTED


def test_table_by_hand():
    """One token a character, made-up log-probs: 桌子 is one word whose values are the sums of 桌's
    and 子's; the character view gives the characters back."""
    offsets = [(i, i + 1) for i in range(len(TABLE))]
    lps = [-1.0, -0.5, -2.0, -0.25, -3.0, -0.75, -4.0, -0.125]
    bnd = [0.0] * (len(lps) + 1)  # after a Chinese character every token begins a word: P(B) = 1
    words = group_records(TABLE, word_records(TABLE, offsets, lps, bnd))
    assert [w["word"] for w in words] == EXPECTED[TABLE]
    table = words[0]
    assert table["tokens"] == [0, 1] and table["logprob_sum"] == -1.5 and table["logprob"] == -1.5
    assert table["surprisal_bits"] == pytest.approx(1.5 / math.log(2)) and table["segmenter"] == "jieba"
    assert [c["word"] for c in table["characters"]] == ["桌", "子"]
    assert words[4]["word"] == "本书" and words[4]["logprob_sum"] == -0.75 - 4.0
    assert [w["index"] for w in words] == list(range(6))
    assert sum(w["logprob_sum"] for w in words) == sum(lps)
    chars = characters(words)
    assert [c["word"] for c in chars] == list(TABLE) and [c["index"] for c in chars] == list(range(len(TABLE)))
    assert [c["logprob_sum"] for c in chars] == lps and not any("characters" in c for c in chars)


def test_token_straddling_two_words_counts_once():
    """One token for 子上 (it straddles 桌子 | 上): words.py gives it to 子 (one character each, the
    leftmost on a tie), so it counts in 桌子; 上 owns no token and gets 0, and the sentence's
    total is still the sum of the tokens."""
    offsets = [(0, 1), (1, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8)]
    lps = [-1.0, -2.0, -0.5, -0.25, -3.0, -0.75, -0.125]
    words = group_records(TABLE, word_records(TABLE, offsets, lps))
    assert [w["word"] for w in words] == EXPECTED[TABLE]
    assert words[0]["tokens"] == [0, 1] and words[0]["logprob_sum"] == -3.0
    assert words[1]["tokens"] == [] and words[1]["no_token"] and words[1]["logprob"] == 0.0
    assert sum(w["logprob_sum"] for w in words) == pytest.approx(sum(lps), abs=0)


def test_leading_space_correction_telescopes_over_a_word():
    """A grouped word's corrected log-prob is its tokens' sum + boundary[b] - boundary[a], as if
    words.py had made it one word: the characters' corrections add up."""
    text = "他们好"
    offsets, lps, bnd = [(0, 1), (1, 2), (2, 3)], [-5.0, -1.0, -2.0], [0.0, -0.3, -0.1, -0.2]
    words = group_records(text, word_records(text, offsets, lps, bnd))
    assert [w["word"] for w in words] == ["他们", "好"]
    assert words[0]["logprob"] == pytest.approx(-6.0 + (-0.1) - 0.0)
    assert sum(w["logprob"] for w in words) == pytest.approx(sum(lps) + bnd[-1])


def test_english_and_japanese_are_left_alone():
    for text in ENGLISH:
        offsets = [(w.start, w.end) for w in split_words(text)]
        recs = word_records(text, offsets, [-1.0] * len(offsets))
        assert group_records(text, recs) is recs and characters(recs) == recs
    assert not needs_segmenting("これは本です。") and needs_segmenting(TABLE)
    assert segmented_note({"good": word_records(ENGLISH[0], [(0, 5)], [-1.0])}) == ""


def test_segmenter_works_offline_and_is_named():
    """jieba's dictionary is inside the package: the first segmentation needs no network (the
    test box has none) and the page names the segmenter and its version."""
    import jieba

    assert segmenter_name().startswith(f"jieba {jieba.__version__}")
    words = group_records(TABLE, word_records(TABLE, [(i, i + 1) for i in range(8)], [-1.0] * 8))
    note = segmented_note({"good": words})
    assert "jieba" in note and "characters" in note


# ---- the engine on tiny models: the probe's words --------------------------------------
def _parts(recs: list[dict]) -> list[str]:
    """The words of a sentence's units, a unit a token joined counted as the words it joined."""
    return [p for w in recs for p in (w.get("joined") or [w["word"]])]


@pytest.mark.parametrize("name", ["tiny_llama", "tiny_gemma"])
def test_engine_words_are_jieba_words_and_add_up(name, request):
    """Byte-level BPE (SmolLM2's tokenizer: a Chinese character is several byte pieces) and
    SentencePiece (Gemma's: a piece may hold several characters). Words as expected; each word's
    plain sum is the sum of its tokens' log-probs; the words add up to the sentence's LP (the LP
    method's own score); English is unchanged. Where one token crosses two words they are one unit
    (its ``joined`` words), so that no unit lacks a token of its own."""
    lm = request.getfixturevalue(name)
    engine = Engine(make_scorer(lm))
    texts = list(EXPECTED) + ENGLISH
    words = engine.word_scores(texts)
    for text, (tokens, _) in zip(texts, engine.token_scores(texts)):
        recs = words[text]
        assert not any(w["no_token"] for w in recs)
        if text in EXPECTED:
            assert _parts(recs) == EXPECTED[text]
            assert "".join(c["word"] for c in characters(recs)) == text.replace(" ", "")
        else:
            assert _parts(recs) == [w.text for w in split_words(text)]
            assert not any("characters" in w for w in recs if not w.get("joined"))
        owned = sorted(t for w in recs for t in w["tokens"])
        assert owned == list(range(len(tokens)))  # every token in exactly one word
        for w in recs:
            assert w["logprob_sum"] == pytest.approx(sum(tokens[t]["logprob"] for t in w["tokens"]), abs=1e-9)
        total = sum(t["logprob"] for t in tokens)
        assert sum(w["logprob_sum"] for w in recs) == pytest.approx(total, abs=1e-6)
        assert sum(c["logprob_sum"] for c in characters(recs)) == pytest.approx(total, abs=1e-6)
    good, bad = _gallery("cl-1")["good"], _gallery("cl-1")["bad"]
    (result,) = engine.score_pairs([engine.check_pair(good, bad)], ["lp"], words=True)
    lp = next(s for s in result.scores if s.method == "lp")
    for key, score in (("good", lp.score_good), ("bad", lp.score_bad)):
        assert _parts(result.words[key]) == EXPECTED[good if key == "good" else bad]
        assert sum(w["logprob_sum"] for w in result.words[key]) == pytest.approx(float(score), abs=1e-4)


# ---- the page: which segmenter, and the character view --------------------------------
def test_page_names_the_segmenter_and_has_a_character_view(tiny_gemma):
    """The Probe tab's figure in the words view shows jieba's words and its note names jieba; the
    "characters" view shows one character a word, both adding up to the same total; a share link
    keeps the view."""
    from accapp.ui import links
    from accapp.ui import probe as ui

    engine = Engine(make_scorer(tiny_gemma))
    words = engine.word_scores([TABLE, "我买了一只书。"])
    tokens = {k: t for k, (t, _) in zip(("good", "bad"), engine.token_scores([TABLE, "我买了一只书。"]))}
    report = {"words": {"good": words[TABLE], "bad": words["我买了一只书。"]}, "tokens": tokens,
              "word_rule": engine.word_rule}
    note = ui.view_note(report, "words")
    assert "jieba 0.42.1" in note and "characters" in note
    assert "one character a word" in ui.view_note(report, "characters")
    fig_words, fig_chars = ui._word_figure(report, "bits", "words"), ui._word_figure(report, "bits", "characters")
    chars = ui.char_words(report)["good"]  # one character a unit, save the characters one of Gemma's pieces covers
    assert "".join(c["word"] for c in chars) == TABLE and not any(c["no_token"] for c in chars)
    assert len(fig_chars.data[0].x) == len(chars) and len(fig_words.data[0].x) == len(report["words"]["good"])  # good row
    if any(c.get("joined") for c in chars):
        assert "Shown as one unit where one of the model's tokens covers two words" in ui.view_note(report, "characters")
    assert "characters" in ui.VIEWS and tuple(ui.VIEWS) == links.VIEWS
    english = {"words": {"good": [], "bad": []}, "tokens": tokens, "word_rule": engine.word_rule}
    assert "jieba" not in ui.view_note(english, "words")


# ---- a pair cut consistently; no unit without a token ----------------------------------------
GOOD_CL, BAD_CL = "他买了一本书。", "他买了一张书。"  # jieba alone: 了/一/本书 against 了一张/书


def test_a_pair_is_segmented_consistently():
    """jieba alone sets 本书 against 一张; cut as a pair, the shared text is cut the same way in both
    and the classifier stands against the classifier."""
    from accapp.segment import chinese_spans, pair_spans
    from accapp.service.verdicts import align_words

    assert [GOOD_CL[a:b] for a, b in chinese_spans(GOOD_CL)] == ["他", "买", "了", "一", "本书", "。"]
    assert [BAD_CL[a:b] for a, b in chinese_spans(BAD_CL)] == ["他", "买", "了", "一张", "书", "。"]
    sg, sb = pair_spans(GOOD_CL, BAD_CL)
    one = [(i, i + 1) for i in range(len(GOOD_CL))]
    good = group_records(GOOD_CL, word_records(GOOD_CL, one, [-1.0] * len(one)), sg)
    bad = group_records(BAD_CL, word_records(BAD_CL, one, [-1.0] * len(one)), sb)
    assert [w["word"] for w in good] == ["他", "买", "了", "一", "本", "书", "。"]
    assert [w["word"] for w in bad] == ["他", "买", "了", "一", "张", "书", "。"]
    differ = [(good[g]["word"], bad[b]["word"]) for g, b, d in align_words(good, bad) if d]
    assert differ == [("本", "张")]
    # a word both sentences keep whole stays whole (桌子 / 椅子), and a sentence without Han is untouched
    sg, sb = pair_spans("我坐在桌子上。", "我坐在椅子上。")
    assert ("我坐在桌子上。"[sg[2][0]:sg[2][1]], "我坐在椅子上。"[sb[2][0]:sb[2][1]]) == ("桌子", "椅子")


def test_a_token_crossing_a_word_boundary_makes_one_unit():
    """One token for 了一 (it crosses 了 | 一): the two are one unit, its surprisal the token's, no unit
    is left without a token, the page says so, and the sentence's total is unchanged."""
    from accapp.segment import joined_note, merge_crossing

    offsets = [(0, 1), (1, 2), (2, 4), (4, 5), (5, 6), (6, 7)]
    lps = [-1.0, -2.0, -3.0, -0.5, -0.25, -0.125]
    words = group_records(GOOD_CL, word_records(GOOD_CL, offsets, lps))
    assert [w["word"] for w in words] == ["他", "买", "了", "一", "本书", "。"] and words[3]["no_token"]
    merged = merge_crossing(GOOD_CL, words, offsets)
    assert [w["word"] for w in merged] == ["他", "买", "了一", "本书", "。"]
    assert merged[2]["joined"] == ["了", "一"] and merged[2]["tokens"] == [2] and merged[2]["logprob_sum"] == -3.0
    assert not any(w["no_token"] for w in merged) and [w["index"] for w in merged] == list(range(5))
    assert sum(w["logprob_sum"] for w in merged) == sum(lps)
    assert "“了一” (了 + 一)" in joined_note({"good": merged}) and joined_note({"good": words}) == ""
    chars = characters(merged, offsets)  # the character view keeps the token's characters together
    assert [c["word"] for c in chars] == ["他", "买", "了一", "本", "书", "。"] and not any(c["no_token"] for c in chars)
    assert merge_crossing(GOOD_CL, words, [(i, i + 1) for i in range(7)]) is words  # no token crosses: as it was
