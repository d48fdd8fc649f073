"""Issue 34, item 4: the headline names where the two sentences differ (never a word they share,
such as the full stop after the verb), what that region contributes, and the spill-over after it
apart. Checked on every gallery pair (accapp/data/gallery.json)."""

from __future__ import annotations

import math

import pytest

from accapp.methods.base import MethodScore
from accapp.service import gallery, verdicts
from accapp.words import split_words

PAIRS = [(p["id"], p["good"], p["bad"]) for p in gallery.load()]


def _shared_ends(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many words the two sentences share at the start, and then at the end (computed here
    by plain comparison, not by the app's alignment)."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def _check_named(good_words: list[str], bad_words: list[str], head: dict) -> None:
    """Every word the headline names is a word where the sentences differ: a word of its sentence
    outside the words both share at the start and at the end; a one-word swap names that swap."""
    assert head["where_words"], head
    lead, tail = _shared_ends(good_words, bad_words)
    inner_good, inner_bad = good_words[lead:len(good_words) - tail], bad_words[lead:len(bad_words) - tail]
    for label in head["where_words"]:
        parts = label.split(" / ")
        if len(parts) == 2:
            assert parts[0] in inner_good and parts[1] in inner_bad and parts[0] != parts[1], (label, head)
        else:
            assert parts[0] in inner_good + inner_bad, (label, head)
    if len(good_words) == len(bad_words):
        swapped = [i for i, (g, b) in enumerate(zip(good_words, bad_words)) if g != b]
        if len(swapped) == 1:
            i = swapped[0]
            assert head["where"] == f"{good_words[i]} / {bad_words[i]}"
    assert f"at “{head['where']}”" in head["text"]


@pytest.mark.parametrize("pid,good,bad", PAIRS, ids=[p[0] for p in PAIRS])
def test_named_word_differs_on_every_gallery_pair(pid, good, bad):
    """With the project's words and made-up surprisals that make a shared word (the last, often
    '.') the largest difference, the named word is still one where the sentences differ."""
    g, b = [w.text for w in split_words(good)], [w.text for w in split_words(bad)]
    words = {"good": [{"word": w, "logprob": -1.0} for w in g],
             "bad": [{"word": w, "logprob": -1.0 - (9.0 if i == len(b) - 1 else 0.1)} for i, w in enumerate(b)]}
    head = verdicts.headline("causal", [MethodScore("lp", "-", -5.0, -6.0)], words, "bits")
    _check_named(g, b, head)


def test_media_pair_by_hand():
    """The pair of the report: the verb favours the acceptable sentence, the words after it the
    unacceptable one. The headline names the verb with its own contribution and the spill-over
    apart, in the page's unit."""
    good = [{"word": w, "logprob": lp} for w, lp in
            [("These", -9.0), ("media", -12.0), ("disgust", -14.0), ("Andrea", -16.0), (".", -1.0)]]
    bad = [{"word": w, "logprob": lp} for w, lp in
           [("These", -9.0), ("media", -12.0), ("disgusts", -14.0 - 0.59 * math.log(2)), ("Andrea", -15.5), (".", -0.5)]]
    head = verdicts.headline("causal", [MethodScore("lp", "-", -52.0, -51.4)], {"good": good, "bad": bad}, "bits")
    assert head["where"] == "disgust / disgusts"
    assert head["region_delta"] == pytest.approx(0.59 * math.log(2))
    assert head["after_delta"] == pytest.approx(-0.5)  # the spill-over: the next word, Andrea
    assert head["text"] == ("LP prefers the unacceptable sentence by 0.9 bits. Where the sentences differ, at "
                            "“disgust / disgusts”, the unacceptable sentence is 0.59 bits more surprising; in the "
                            f"spill-over (the next word, “Andrea”), {0.5 / math.log(2):.2f} bits less surprising.")
    nats = verdicts.headline_text(head, "nats")
    assert f"{0.59 * math.log(2):.2f} nats more surprising" in nats and "0.50 nats less surprising" in nats


def test_region_at_the_end_has_no_spill_over():
    words = {"good": [{"word": "Keith", "logprob": -10.0}, {"word": "learns", "logprob": -8.0}],
             "bad": [{"word": "Keith", "logprob": -10.0}, {"word": "disliked", "logprob": -9.0}]}
    head = verdicts.headline("causal", [MethodScore("lp", "-", -18.0, -19.0)], words, "nats")
    assert head["where"] == "learns / disliked" and "spill-over" not in head["text"]


@pytest.mark.slow
def test_named_word_differs_with_smollm2_on_every_gallery_pair(smollm):
    """The same with SmolLM2's own word surprisals, the headline as the probe builds it."""
    from accapp.engine import Engine
    from accapp.scoring.causal import CausalScorer

    engine = Engine(CausalScorer(smollm))
    pairs = [engine.check_pair(good, bad) for _, good, bad in PAIRS]
    for (pid, good, bad), result in zip(PAIRS, engine.score_pairs(pairs, ["lp"], words=True), strict=True):
        head = verdicts.headline("causal", result.scores, result.words, "bits")
        g, b = [w["word"] for w in result.words["good"]], [w["word"] for w in result.words["bad"]]
        _check_named(g, b, head)
        if pid == "agr-2":  # the report's pair: it once named "."
            assert head["where"] == "disgust / disgusts" and "“.”" not in head["text"]
