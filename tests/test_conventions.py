"""Scoring conventions (issue 23, items 2 and 6): the authors' prompt strings byte for byte, their
answer tokens, their start-token rule, and an independent re-implementation of their code.

Reads ../shared/data/templates_ide2025 (the authors' template files) to compare against; the
re-implementation below uses plain transformers calls only, as Ide et al.'s src/pred_by_prob.py
and src/prompting_yn.py do (github.com/Yusuke196/llm-acceptability)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from accapp.engine import build_engine
from accapp.methods.base import Context
from accapp.methods.prompting import ABPrompting, YesNoProbComp
from accapp.scoring import convention as conventions
from accapp.scoring.api import Pair

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "templates_ide2025"
PAIRS = [("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
         ("The cat that the dogs chase is asleep.", "The cat that the dogs chase are asleep."),
         ("Who should Derek hug after shocking Richard?", "Who should Derek hug Richard after shocking?")]


def test_conventions_are_data_and_unknown_is_an_error():
    known = conventions.conventions()
    assert set(known) == {"project", "authors", "authors_raw_logit"}
    assert conventions.get(None).id == "project"
    assert known["authors"].sentence_start("meta-llama/Meta-Llama-3-8B")
    assert known["authors"].sentence_start("mistralai/Mixtral-8x7B-v0.1")
    assert not known["authors"].sentence_start("google/gemma-3-270m")
    assert known["project"].sentence_start("google/gemma-3-270m")
    with pytest.raises(ValueError, match="unknown convention"):
        conventions.get("mine")


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/data")
@pytest.mark.parametrize("bench,lang,joiner", [("blimp", "en", " "), ("climp", "zh", "")])
def test_base_prompts_are_the_authors_strings(tiny_gemma, bench, lang, joiner):
    """Base models: system + segmenter + user template filled (src/dataset.py::_get_prompts), the user
    template ending in the code's "\\nAnswer: " suffix, byte for byte."""
    ctx = Context(tiny_gemma, lang)
    assert not ctx.chat
    good, bad = ("A cat sleeps.", "A cat sleep.") if lang == "en" else ("他走了。", "他走走了。")
    yn, ab = YesNoProbComp(), ABPrompting()
    for k in range(1, 6):
        spec = json.loads((SHARED / "prompts" / bench / f"template_{bench}_yn_{k}.json").read_text(encoding="utf-8"))
        if lang == "zh" and ctx.cache.get(("yes_no_zh_set",), [[None]])[0] is not None:
            pass
        want = spec["system_prompt"] + joiner + spec["user_template"].format(sentence=good)
        req = yn._req(ctx, yn.templates(ctx)[k - 1], good)
        if lang == "en":  # Chinese Yes/No set depends on the tokenizer (yn or yn-en files)
            assert req.prompt == want
        assert req.read == "vocabulary"
        spec = json.loads((SHARED / "prompts" / bench / f"template_{bench}_ab_{k}.json").read_text(encoding="utf-8"))
        want = spec["system_prompt"] + joiner + spec["user_template"].format(sentence_a=good, sentence_b=bad)
        req = ab._req(ctx, str(k), good, bad)
        assert req.prompt == want and req.read == "vocabulary"
        assert want.endswith("\nAnswer: ") or want.endswith("\n答案：")


_PASSES: dict = {}  # (model, input) -> what the reference read from its pass: both conventions check against one pass


def _their_logprobs(lm, ids: list[int]) -> np.ndarray:
    """src/pred_by_prob.py::_compute_logprobs_batch for one sequence: cross-entropy of each next token."""
    key = (lm.spec.id, tuple(ids))
    if key not in _PASSES:
        with torch.no_grad():
            logits = lm.model(torch.tensor([ids])).logits
        lp = -torch.nn.functional.cross_entropy(logits[0, :-1].float(), torch.tensor(ids[1:]), reduction="none")
        _PASSES[key] = lp.numpy().astype(np.float64)
    return _PASSES[key]


def _their_in_template_ids(tok, template: str, sentence: str, other: str) -> list[int]:
    """src/dataset.py::_preprocess_sentence: each part encoded on its own, no special tokens."""
    ids = []
    for part in [p for p in re.split(r"(\{sentence\}|\{other_sentence\})", template) if p]:
        text = sentence if part == "{sentence}" else other if part == "{other_sentence}" else part
        ids += tok.encode(text, add_special_tokens=False)
    return ids


def _their_yes_prob(lm, prompt: str, raw: bool) -> tuple[float, float]:
    """src/prompting_yn.py::compute_yesprobs (batch of one), with the eq. 5 softmax or their raw ratio;
    and how far float32 noise can move it (the raw ratio y / (y + n) of two logits of opposite sign is
    ill-conditioned: a logit error e moves it by up to e (|y| + |n|) / (y + n)^2)."""
    tok = lm.tokenizer
    key = (lm.spec.id, prompt)
    if key not in _PASSES:
        inputs = tok(prompt, return_tensors="pt")  # the tokenizer's default special tokens
        with torch.no_grad():
            _PASSES[key] = lm.model(**inputs).logits[0, -1].float()
    last = _PASSES[key]
    y, n = tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")
    if raw:
        ly, ln = float(last[y]), float(last[n])
        logit_error = 1e-5 * max(1.0, abs(ly), abs(ln))  # 5x the largest relative drift measured (docs/ties.md)
        return ly / (ly + ln), 2e-5 + logit_error * (abs(ly) + abs(ln)) / (ly + ln) ** 2
    p = torch.softmax(last.double(), -1)
    return float(p[y] / (p[y] + p[n])), 2e-5


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/data")
@pytest.mark.parametrize("model", ["smollm", "gemma"])
def test_authors_convention_matches_an_independent_reimplementation(request, model):
    lm = request.getfixturevalue(model)
    tok = lm.tokenizer
    single = (SHARED / "templates_ll" / "template_blimp_single_1.txt").read_text(encoding="utf-8")
    compar = (SHARED / "templates_ll" / "template_blimp_compar_1.txt").read_text(encoding="utf-8")
    yn = json.loads((SHARED / "prompts" / "blimp" / "template_blimp_yn_1.json").read_text(encoding="utf-8"))
    yn_chat = json.loads((SHARED / "prompts" / "blimp" / "template_blimp_yn-chat_1.json").read_text(encoding="utf-8"))
    methods = ["lp", "mean_lp", "pen_lp", "in_template_lp", "in_template_comparative_lp", "yes_no_prob_comp"]
    for conv in ("authors", "authors_raw_logit"):
        engine = build_engine(lm.spec.id, lm=lm, convention=conv)
        assert not engine.scorer.sentence_start  # neither Llama-3 nor Mixtral
        results = engine.score_pairs([Pair(g, b) for g, b in PAIRS], methods, "en")
        for (good, bad), res in zip(PAIRS, results):
            got = {(s.method, s.template): (s.score_good, s.score_bad) for s in res.scores}
            for side, (s, o) in enumerate(((good, bad), (bad, good))):
                lp = _their_logprobs(lm, tok.encode(s, add_special_tokens=False))
                pen = lp.sum() / ((5 + len(lp)) / 6) ** 0.8
                assert got[("lp", "-")][side] == pytest.approx(lp.sum(), rel=1e-5, abs=1e-4)
                assert got[("mean_lp", "-")][side] == pytest.approx(lp.mean(), rel=1e-5, abs=1e-5)
                assert got[("pen_lp", "-")][side] == pytest.approx(pen, rel=1e-5, abs=1e-4)
                whole = _their_logprobs(lm, _their_in_template_ids(tok, single, s, o))
                assert got[("in_template_lp", "1")][side] == pytest.approx(whole.sum(), rel=1e-5, abs=1e-4)
                comp = _their_logprobs(lm, _their_in_template_ids(tok, compar, s, o))
                assert got[("in_template_comparative_lp", "1")][side] == pytest.approx(comp.sum(), rel=1e-5, abs=1e-4)
                if lm.spec.is_chat:  # src/dataset.py::get_prompt_chat (a system role where the template takes one)
                    msgs = [{"role": "system", "content": yn_chat["system_prompt"]},
                            {"role": "user", "content": yn_chat["user_template"].format(sentence=s)}]
                    prompt = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
                else:
                    prompt = yn["system_prompt"] + " " + yn["user_template"].format(sentence=s)
                want, tol = _their_yes_prob(lm, prompt, raw=conv == "authors_raw_logit")
                assert got[("yes_no_prob_comp", "1")][side] == pytest.approx(want, abs=tol)


@pytest.mark.slow
def test_project_convention_reads_the_authors_answer_token(gemma):
    """Default convention, base model: the prompt ends "Answer: " and the answer is the vocabulary's
    "Yes" (Gemma: 8438), not "▁Yes" after "Answer:" (10784)."""
    engine = build_engine(gemma.spec.id, lm=gemma)
    ctx = engine.context("en")
    req = YesNoProbComp()._req(ctx, "1", PAIRS[0][0])
    (context, answer), _ = engine.scorer.answer_plan(req)
    assert answer == (gemma.tokenizer.convert_tokens_to_ids("Yes"),)
    assert context[0] == gemma.start_id
    assert list(context[1:]) == gemma.tokenizer.encode(req.prompt, add_special_tokens=False)
