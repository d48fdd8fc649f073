"""Every score of every method, and every token's log-prob, on the golden pairs is what main
computed before the one-engine redesign (tests/golden/scores.json, recorded by
tests/golden/record.py at dd0bdfd): the redesign moved code, not numbers. Re-recorded on purpose
for issue 23 (the authors' answer token for Gemma's base prompts: 47 of 90 A/B and 29 of 45 Yes/No
verdicts of the golden pairs changed; case-aware unigrams for SLOR and the unigram Bayes factor;
Hu & Levy's per-order answers in the predictions; the tie rule; in-template scores moved by float
noise only, at most 6.2e-5 nats). Re-recorded again for the tie tolerance 2^-12 (was 2^-14): 6
verdicts whose score gap lies between the two tolerances became ties, one A/B answer became a tie,
and one Gemma pair's ensembles lost two P votes with them; no other field changed, and no score
moved by more than 5.6e-5 relative (this machine's float32 against the old recording's).
Re-ruled for issue 35 without rescoring (the scores are the recording's): every verdict by its
method's own tie rule (accapp/methods/ties.py), the one A/B answer that was a tie read strictly
(the likelier letter, as Ide et al. read it), and the ensembles' votes as strict predictions (one
Gemma pair's four ensembles got back the two P votes the 2^-12 move took); the commit lists each
change.

Numbers agree to float32 noise (2e-4 nats, or relative 2e-5 where larger), not bit for bit: CI
machines differ in CPU (Intel, AMD EPYC), and float32 sums run through different kernels there
differ in the last bits (measured on an AMD EPYC against the recording: up to 5.6e-5 nats on
SmolLM2's in-template means and per-token log-probs, 7.4e-5 on a Gemma score of -7.34, 1e-6 on the tiny BERT). Every verdict,
prediction, method, template and token string is compared exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden.record import tiny_masked

from accapp.engine import Engine, make_scorer
from accapp.scoring.api import Pair

GOLDEN = Path(__file__).parent / "golden"
RECORDED = json.loads((GOLDEN / "scores.json").read_text(encoding="utf-8"))
PAIRS = json.loads((GOLDEN / "pairs.json").read_text(encoding="utf-8"))


def _pairs(language: str) -> list[Pair]:
    return [Pair(p["good"], p["bad"]) for p in PAIRS if (p["benchmark"] == "climp") == (language == "zh")]


def _engine(name: str, request) -> Engine:
    if name.startswith("tiny-"):
        from accapp.scoring.masked import MaskedScorer

        return Engine(MaskedScorer(*tiny_masked(name)))
    lm = request.getfixturevalue({"smollm2-135m-instruct": "smollm", "gemma3-270m": "gemma"}[name])
    return Engine(make_scorer(lm))


def _check(key: str, request) -> None:
    name, language = key.split("|")
    results = _engine(name, request).score_pairs(_pairs(language), None, language)
    want = RECORDED[key]
    assert len(results) == len(want)
    for got, exp in zip(results, want):
        assert (got.pair.good, got.pair.bad) == (exp["good"], exp["bad"])
        assert _same(got.rows, exp["rows"]), (got.rows, exp["rows"])
        assert _same(got.tokens, exp["tokens"]), (got.tokens, exp["tokens"])


def _same(got, want) -> bool:
    """Equal structure and strings; floats to float32 noise (abs 2e-4, rel 2e-5)."""
    if isinstance(want, float) or isinstance(got, float):
        return isinstance(got, (int, float)) and got == pytest.approx(want, rel=2e-5, abs=2e-4)
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(map(_same, got, want))
    return got == want


@pytest.mark.parametrize("key", [k for k in RECORDED if k.startswith("tiny-")])
def test_masked_golden_scores_unchanged(key, request):
    _check(key, request)


@pytest.mark.slow
@pytest.mark.parametrize("key", [k for k in RECORDED if not k.startswith("tiny-")])
def test_causal_golden_scores_unchanged(key, request):
    _check(key, request)
