"""The app's figure builders (accapp.ui.plots): data in, figure out, user text escaped."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from accapp.ui import common, plots

XSS = "<img src=x onerror=alert(1)>"


def _tok(text, lp, start=0):
    return {"token": text, "start": start, "end": start + len(text), "logprob": lp}


def test_align_tokens_insertion_and_replacement():
    good = ["These", " casser", "oles", " disgust", " Kay", "la", "."]
    bad = ["These", " casser", "oles", " disgust", "s", " Kay", "la", "."]
    cols = plots.align_tokens(good, bad)
    assert [c.differs for c in cols].count(True) == 1
    ins = next(c for c in cols if c.differs)
    assert ins.good is None and bad[ins.bad] == "s"
    # every token of each sentence appears exactly once, in order
    assert [c.good for c in cols if c.good is not None] == list(range(len(good)))
    assert [c.bad for c in cols if c.bad is not None] == list(range(len(bad)))

    cols = plots.align_tokens(["The", " dog", " barks"], ["The", " dogs", " bark", " loud"])
    assert [(c.good, c.bad, c.differs) for c in cols] == [(0, 0, False), (1, 1, True), (2, 2, True), (None, 3, True)]
    assert all(not c.differs for c in plots.align_tokens(["a", "b"], ["a", "b"]))


def test_surprisal_units_and_highlight():
    toks = {"good": [_tok("The", -math.log(2)), _tok(" dog", -2 * math.log(2))],
            "bad": [_tok("The", -math.log(2)), _tok(" dogs", -3 * math.log(2))]}
    fig = plots.surprisal_figure(toks, "bits")
    good_bar, bad_bar = fig.data
    assert list(good_bar.y) == pytest.approx([1.0, 2.0])
    assert list(bad_bar.y) == pytest.approx([1.0, 3.0])
    assert list(good_bar.marker.opacity) == [0.45, 1.0]  # the differing token stands out
    assert "3.0 bits in all" in fig.layout.annotations[0].text
    nats = plots.surprisal_figure(toks, "nats")
    assert list(nats.data[1].y) == pytest.approx([math.log(2), 3 * math.log(2)])
    shapes = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(shapes) == 2  # one band per row at the differing column
    assert [(s.xref, s.yref, s.x0, s.x1) for s in shapes] == [("x", "y domain", 0.5, 1.5), ("x2", "y2 domain", 0.5, 1.5)]


def test_bands_cover_each_run_of_differing_columns_and_signs_read_well():
    """One band a run of adjacent differing columns (drawn as plotly's add_vrect drew one a column), and a
    difference that rounds to zero reads +0.0, not -0.0."""
    assert plots.differing_runs([False, True, True, False, True]) == [(1, 2), (4, 4)]
    assert plots.differing_runs([]) == [] and plots.differing_runs([False]) == []
    assert plots.band(1, 2)["x0"] == 0.5 and plots.band(1, 2)["x1"] == 2.5
    assert [plots.signed(x) for x in (-0.02, 2.76, -1.04, 0.0)] == ["+0.0", "+2.8", "-1.0", "+0.0"]
    strip = {"columns": [{"good": "a", "bad": "a", "delta": 0.0, "differs": False},
                         {"good": "is", "bad": "are", "delta": 1.9, "differs": True},
                         {"good": "on", "bad": "on", "delta": -0.01, "differs": False}],
             "region": (1, 1), "region_delta": 1.9, "after_delta": -0.01}
    fig = plots.difference_figure(strip, "nats")
    assert "spill-over (the next word): +0.0 nats" in fig.layout.title.text
    rect, line = fig.layout.shapes  # the band behind the region, then the zero line over the plot's width
    assert (rect.type, rect.x0, rect.x1, line.type, line.y0, line.y1) == ("rect", 0.5, 1.5, "line", 0, 0)
    with pytest.raises(ValueError):
        plots.to_unit(-1.0, "hartleys")


def test_user_text_is_escaped_everywhere_in_the_figure():
    toks = {"good": [_tok(XSS, -1.0)], "bad": [_tok("fine", -2.0)]}
    fig = plots.surprisal_figure(toks, "bits", labels=(XSS, "bad"))
    text = fig.to_json()
    assert "<img" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in fig.layout.xaxis.ticktext[0]
    assert "&lt;img" in fig.layout.annotations[0].text
    assert "&lt;img" in fig.data[0].hovertext[0]
    assert plots.esc('"a" & <b>') == "&quot;a&quot; &amp; &lt;b&gt;"
    assert plots.esc is common.esc  # one escaping for HTML and figures


def test_token_labels():
    assert plots.token_label(" dog") == "dog"
    assert plots.token_label(" ") == "␣"
    assert plots.token_label("") == "…"  # a byte piece continuing the previous character


def _detail(words_inflated=True):
    tokens = []
    for i, (tok, word, wi) in enumerate([("Kay", "Kayla", 0), ("la", "Kayla", 0), (".", ".", 1)]):
        tokens.append({"index": i, "token": tok, "word": word, "word_index": wi,
                       "logprob": {"original": -1.0, "word_l2r": -2.0 - i, "whole_word": -2.5, "sentence_l2r": -3.0},
                       "masked": {"original": [i], "word_l2r": [i], "whole_word": [i], "sentence_l2r": [i]}})
    words = [{"index": 0, "text": "Kayla", "tokens": [0, 1], "inflation": 3.0, "inflated": words_inflated},
             {"index": 1, "text": ".", "tokens": [2], "inflation": 0.0, "inflated": False}]
    return {"text": "Kayla.", "variants": ["original", "word_l2r", "whole_word", "sentence_l2r"], "tokens": tokens,
            "words": words, "scores": {}}


def test_pll_figure_marks_inflated_words():
    fig = plots.pll_figure({"good": _detail(True), "bad": _detail(False)}, "nats")
    names = [t.name for t in fig.data]
    assert names[:4] == ["PLL-original", "PLL-word-l2r", "PLL-whole-word", "PLL-sentence-l2r"]
    assert len(fig.data) == 8 and sum(t.showlegend for t in fig.data) == 4
    assert list(fig.data[1].y) == pytest.approx([2.0, 3.0, 4.0])
    notes = [a.text for a in fig.layout.annotations if "inflated by" in a.text]
    assert notes == ["“Kayla”<br>inflated by 3.0 nats"]  # only the good sentence's word
    assert "1 inflated multi-token word" in fig.layout.annotations[0].text
    bits = plots.pll_figure({"good": _detail(True)}, "bits")
    assert any("inflated by 4.3 bits" in a.text for a in bits.layout.annotations)


def test_pll_figure_from_a_tiny_masked_lm():
    """The real masked engine's detail goes straight into the figure (tiny random BERT fixture)."""
    import torch
    from masked_fixtures import tiny_bert, wordpiece_tokenizer

    from accapp.engine import Engine
    from accapp.scoring.masked import MaskedScorer

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        tok = wordpiece_tokenizer()
        engine = Engine(MaskedScorer(tiny_bert(tok), tok, batch_size=32))
        result = engine.score_pair("These casseroles disgust Kayla.", "These casseroles disgusts Kayla.")
    finally:
        torch.set_num_threads(threads)
    details = {k: v.to_dict() for k, v in result.detail.items()}
    fig = plots.pll_figure(details, "bits")
    n_good = len(details["good"]["tokens"])
    assert len(fig.data[0].x) == n_good
    inflated = [w for w in details["good"]["words"] + details["bad"]["words"] if w["inflated"]]
    bands = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(bands) == len(inflated)


def test_phenomenon_figure_labels_published_sources():
    ours = pd.DataFrame({"model": "m", "method": ["lp", "lp"], "template": "-", "phenomenon": ["binding", "ellipsis"],
                         "accuracy": [70.0, 80.0], "pairs": [10, 20]})
    pub = pd.DataFrame({"model": "human", "method": "human", "phenomenon": ["binding", "ellipsis", "quantifiers"],
                        "accuracy": [87.0, 85.0, 86.6], "source": "Warstadt et al. 2020, BLiMP repo"})
    fig = plots.phenomenon_figure(ours, pub, "t")
    # legend entries wrap between words to fit a phone (issue 34, item 6)
    assert [t.name.replace("<br>", " ") for t in fig.data] == ["LP", "Humans (published: Warstadt et al. 2020)"]
    assert list(fig.data[0].y) == ["binding", "ellipsis", "quantifiers"]
    assert pd.isna(fig.data[0].x[2]) and fig.data[1].x[2] == pytest.approx(86.6)
    only_pub = plots.phenomenon_figure(pd.DataFrame(), pub)
    assert len(only_pub.data) == 1 and fig.layout.showlegend
    assert "No results" in plots.phenomenon_figure(pd.DataFrame(), pd.DataFrame()).layout.annotations[0].text


def test_length_paradigm_and_bar_figures():
    by_len = pd.DataFrame({"method": "lp", "template": "-", "len_diff": [-1, 0, 1], "label": ["<=-1", "0", ">=1"],
                           "n": [3, 4, 1], "accuracy": [33.3, 75.0, 100.0]})
    bias = pd.DataFrame({"method": ["lp"], "template": ["-"], "r": [0.25]})
    pub = pd.DataFrame({"method": ["lp"], "point_biserial_r": [-0.1], "source": ["Ide et al. 2025, Table 4"]})
    fig = plots.length_figure(by_len, bias, pub)
    assert "r = +0.250" in fig.data[0].name and "published r = -0.100" in fig.data[0].name
    assert list(fig.layout.xaxis.ticktext) == ["&lt;=-1", "0", "&gt;=1"]

    para = pd.DataFrame({"method": "lp", "template": "-", "paradigm": ["a", "b"], "phenomenon": ["x", "y"],
                         "pairs": [5, 5], "accuracy": [90.0, 40.0]})
    human = pd.DataFrame({"paradigm": ["a", "b"], "accuracy": [95.0, 85.0], "source": "Warstadt et al. 2020, x"})
    fig = plots.paradigm_figure(para, human)
    assert list(fig.data[0].y) == ["b", "a"]  # sorted by accuracy
    assert fig.data[1].name.startswith("Humans (published")

    df = pd.DataFrame({"x": ["none", "relative_clause"], "acc": [90.0, 70.0], "g": "lp"})
    fig = plots.grouped_bar_figure(df, "x", "acc", "g", reference={"published 50": 50.0})
    assert len(fig.data) == 1 and fig.layout.shapes
    assert plots.grouped_bar_figure(pd.DataFrame(), "x", "acc", "g").layout.annotations
    assert plots.short_source("Ide et al. 2025, Table 3a") == "Ide et al. 2025"


def test_phenomenon_labels_wrap_to_a_third_of_a_phone():
    """Issue 34 item 6: the phenomena's words on short lines (a phone's plot gave them 60 % of its width)."""
    phen = ["determiner-noun agreement", "subject-verb agreement", "filler-gap dependency", "NPI licensing"]
    ours = pd.DataFrame({"model": "m", "method": "lp", "template": "-", "phenomenon": phen,
                         "accuracy": [70.0, 80.0, 60.0, 75.0], "pairs": 10})
    fig = plots.phenomenon_figure(ours, None, "Accuracy by phenomenon · BLiMP · SmolLM2-135M-Instruct (smollm2-135m-instruct)")
    ticks = list(fig.layout.yaxis.ticktext)
    assert [t.replace("<br>", " ") for t in ticks] == sorted(phen) and list(fig.layout.yaxis.tickvals) == sorted(phen)
    assert max(len(line) for t in ticks for line in t.split("<br>")) <= plots.LABEL_WIDTH
    assert "determiner-noun<br>agreement" in ticks
    assert all(len(line) <= plots.TITLE_WIDTH for line in fig.layout.title.text.split("<br>"))
    assert plots.wrap_label("a &#x27;b&#x27; c", 5) == "a &#x27;b&#x27;<br>c"  # an entity counts as one character
    assert plots.wrap_label("supercalifragilistic word", 5) == "supercalifragilistic<br>word"
