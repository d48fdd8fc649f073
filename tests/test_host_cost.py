"""The host's share of a run made smaller without moving a score: prompts tokenized by their pieces
between special tokens and in batches, chat prompts rendered from a frame, requests and ensemble draws
made once (accapp/scoring/tokens.py, accapp/scoring/causal.py, accapp/methods/). Each shortcut is held
to the plain way it replaces; bench/host_cost.py runs and ends with its JSON line."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from accapp.methods import formulas as F
from accapp.scoring.tokens import SpecialSplit, common_prefix_len, encode_ids

ROOT = Path(__file__).resolve().parents[1]
PAIRS = [("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
         ("这个 学生 喜欢 音乐。", "这个 学生 喜欢 喜欢 音乐。"),
         ("Odd <|im_end|> spacing  and 🙂 emoji", "Odd<|im_start|>user spacing")]
ODD = ["  lead <|im_end|>\n\n<|im_start|>assistant\n", "<|im_start|><|im_end|>", " <|endoftext|> x\t y ", ""]


def _plain_prefix(a, b) -> int:
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k


def test_common_prefix_len_is_the_plain_walk():
    rng = random.Random(0)
    for _ in range(5000):
        a = [rng.randint(0, 2) for _ in range(rng.randint(0, 15))]
        b = a[: rng.randint(0, len(a))] + [rng.randint(0, 2) for _ in range(rng.randint(0, 5))]
        assert common_prefix_len(a, b) == _plain_prefix(a, b) == common_prefix_len(tuple(b), a)


def test_ensemble_draws_are_made_once_and_stay_the_same():
    first = F.ensemble_draws(3, 2)
    first[0][0].append(99)  # a caller's copy: the kept draws never change
    assert F.ensemble_draws(3, 2) != first and len(F.ensemble_draws(3, 2)) == F.ENSEMBLE_TRIALS
    assert F.ensemble_correct([True, False, True, True, False], [False, True, True, False, True], 3, 2) == 0.7


def _prompts(lm) -> list[str]:
    from accapp.engine import Engine, make_scorer
    from accapp.scoring.api import NextRequest

    engine = Engine(make_scorer(lm))
    out = []
    for good, bad in PAIRS:
        pair = engine.check_pair(good.strip(), bad.strip())
        ctx = engine.context(engine.language or "en")
        for m in engine.resolve(None):
            out += [p for r in m.requests(pair, ctx) if isinstance(r, NextRequest)
                    for p in (r.prompt, *(r.prompt + a for a in r.answers))]
    return list(dict.fromkeys(out + [g for g, _ in PAIRS] + [b for _, b in PAIRS] + ODD))


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["smollm", "gemma"])
def test_prompts_by_pieces_are_the_whole_texts_tokens(fixture, request):
    lm = request.getfixturevalue(fixture)
    tok = lm.tokenizer
    texts = _prompts(lm)
    whole = [tuple(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
    assert [tuple(i) for i in encode_ids(tok, texts)] == whole
    split = SpecialSplit.of(tok)
    if fixture == "smollm":  # a chat model: its turn markers cut the prompts
        assert split is not None and len(split.specials) > 2
    if split is not None:
        split.CHECKED = 0  # no check against the whole text: the pieces alone must be right
        assert split.encode(texts) == whole and split.on


@pytest.mark.parametrize("model_id", ["smollm2-135m-instruct", "gemma3-270m"])
def test_the_pipeline_parts_decide_as_the_whole_tokenizer_did(model_id):
    """SpecialSplit reads only the normalizer, pre-tokenizer, post-processor and decoder (not Gemma's
    262k-token vocabulary): on the real tokenizers the answer is the walk over the whole serialised one."""
    from accapp.scoring.tokens import _first_only, _pipeline
    from tests.tiny_models import tokenizer_for

    backend = tokenizer_for(model_id).backend_tokenizer
    whole = json.loads(backend.to_str())
    assert _pipeline(backend) == [whole[k] for k in ("normalizer", "pre_tokenizer", "post_processor", "decoder") if whole[k]]
    assert _first_only(_pipeline(backend)) is _first_only(whole) is False
    assert SpecialSplit.of(tokenizer_for(model_id)) is not None


@pytest.mark.parametrize(("scheme", "split"), [("first", False), ("always", True)])
def test_a_pre_tokenizer_that_prepends_to_the_first_piece_only_turns_the_split_off(scheme, split):
    """Metaspace's prepend_scheme "first" marks a text's first piece only, so the pieces between special
    tokens, tokenized alone, would each get the mark: no split there; "always" marks every piece alike."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["<unk>", "<s>", "</s>", "<sep>", "\u2581the", "\u2581cat", "the", "cat"]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme=scheme)
    backend.decoder = decoders.Metaspace(prepend_scheme=scheme)
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                  additional_special_tokens=["<sep>"])
    assert (SpecialSplit.of(tok) is not None) is split


@pytest.mark.slow
def test_a_split_that_differs_is_turned_off_and_the_whole_text_tokenized(smollm):
    tok = smollm.tokenizer
    split = SpecialSplit.of(tok)
    text = "<|im_start|>user\nThe cat sleeps.<|im_end|>\n"
    split.pieces["user\nThe cat sleeps."] = (1, 2, 3)  # a piece whose tokens are not the text's
    assert split.encode([text]) == [tuple(tok(text, add_special_tokens=False)["input_ids"])]
    assert not split.on


@pytest.mark.slow
def test_the_scorer_tokenizes_a_call_in_batches_as_one_by_one(smollm):
    from accapp.scoring.causal import CausalScorer

    batched, single = CausalScorer(smollm), CausalScorer(smollm, split_prompts=False)
    texts = [s for pair in PAIRS for s in pair]
    batched.encode_many(texts)
    for t in texts:
        enc = single.encode(t)
        assert batched.encode(t) == enc
        assert enc.ids == tuple(smollm.tokenizer(t, add_special_tokens=False)["input_ids"])
    prompts = _prompts(smollm)
    batched.ids_many(prompts)
    assert [batched.ids_of(p) for p in prompts] == [single.ids_of(p) for p in prompts]


class _Rewriting:
    """A tokenizer whose chat template rewrites the message (upper case) after a system message."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content'].upper() if m['role'] == 'user' else m['content']}" for m in messages)


def _ctx(tokenizer):
    from types import SimpleNamespace

    from accapp.methods.base import Context

    lm = SimpleNamespace(tokenizer=tokenizer, spec=SimpleNamespace(is_chat=True))
    return Context(lm, "en")


def test_a_chat_frame_that_rewrites_the_message_is_dropped():
    from accapp.methods.prompting import _rendered

    ctx = _ctx(_Rewriting())
    assert _rendered(ctx, True, "System.", "Is this ok?") == "<system>System.<user>IS THIS OK?"
    assert ctx.cache["chat_frames"][("System.", " ", "", "")][0] is None  # the frame ever differed: never used again
    assert _rendered(ctx, True, "System.", "and this") == "<system>System.<user>AND THIS"


@pytest.mark.slow
def test_chat_prompts_from_the_frame_are_the_templates_own(smollm):
    from accapp.methods import prompting
    from accapp.prompts import render_prompt

    ctx = _ctx(smollm.tokenizer)
    # the prompts' own shapes: a message that ends in a space ("Answer: "), one that starts with a line break
    for lead, trail in (("", ""), ("", "Answer: "), ("\n", "\n\n")):
        users = [f"{lead}Is sentence {i} acceptable? {s} {trail}" for i in range(3) for pair in PAIRS for s in pair]
        for system in ("You judge sentences.", None):
            for user in users:
                assert prompting._rendered(ctx, True, system, user) == render_prompt(smollm.tokenizer, True, system, user)
            frames = {k: v for k, v in ctx.cache["chat_frames"].items() if k[0] == system}
            assert all(f[0] is not None for f in frames.values())  # every frame checked, then trusted
            assert max(f[1] for f in frames.values()) == prompting.FRAME_CHECKS


@pytest.mark.slow
def test_scores_with_and_without_the_pieces_are_the_same_bit_for_bit(smollm):
    from accapp.engine import Engine
    from accapp.scoring.causal import CausalScorer

    def rows(scorer):
        engine = Engine(scorer)
        pair = engine.check_pair(*PAIRS[0])
        return [(r.rows, r.tokens) for r in engine.score_pairs([pair], None)]

    assert rows(CausalScorer(smollm)) == rows(CausalScorer(smollm, split_prompts=False))


@pytest.mark.slow
def test_bench_host_cost_runs_and_ends_with_its_json_line():
    done = subprocess.run([sys.executable, "bench/host_cost.py", "--pairs", "2", "--threads", "1", "--skip-all"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["pairs"] == 2 and out["threads"] == 1
    assert out["lp_forward_ms"] > 0 and out["lp_projection_ms"] > 0 and out["lp_host_ms"] >= 0
    assert out["lp_wall_ms"] >= out["lp_forward_ms"] + out["lp_projection_ms"]


@pytest.mark.slow
def test_bench_host_stand_ins_runs_and_prints_its_figures():
    """bench/host_stand_ins.py: the host timed with an instant decoder and projection, its three figures printed."""
    done = subprocess.run([sys.executable, "bench/host_stand_ins.py", "--pairs", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip().splitlines()[-1]
    assert "2 pairs, every method: wall " in line and "calling thread's CPU " in line and "other threads' CPU " in line
    wall, calling, other = (float(line.split(key)[1].split(" ms")[0]) for key in
                            ("wall ", "calling thread's CPU ", "other threads' CPU "))
    assert wall > 0 and calling > 0 and other >= 0


@pytest.mark.slow
def test_bench_runner_cost_runs_and_ends_with_its_json_line(tmp_path):
    """bench/runner_cost.py on the tiny Llama (a folder, as a researcher's checkpoint): its split adds up to the
    wall time, and each unit of the paradigm is written once."""
    from tests import any_models

    model = any_models.llama_folder(tmp_path)
    done = subprocess.run([sys.executable, "bench/runner_cost.py", "--model", str(model), "--pairs", "8",
                           "--methods", "lp,mean_lp", "--threads", "1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["pairs"] == 8 and out["threads"] == 1 and out["writes"] == 2
    assert out["forward_ms"] > 0 and out["projection_ms"] > 0 and out["write_ms"] > 0 and out["host_ms"] >= 0
    assert out["wall_ms"] == pytest.approx(out["forward_ms"] + out["projection_ms"] + out["write_ms"] + out["host_ms"],
                                           abs=0.01)


@pytest.mark.slow
def test_bench_ray_cost_runs_and_ends_with_its_json_line(tmp_path):
    """bench/ray_cost.py on the tiny Llama with one worker: every pair scored, the workers' accapp this tree's."""
    pytest.importorskip("ray")
    from tests import any_models

    model = any_models.llama_folder(tmp_path)
    done = subprocess.run([sys.executable, "bench/ray_cost.py", "--model", str(model), "--pairs", "8",
                           "--methods", "lp,mean_lp"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["pairs"] == 8 and out["workers"] == 1 and out["blocks"] == 1
    assert out["wall_s"] > 0 and out["pairs_per_s"] * out["ms_per_pair"] == pytest.approx(1000, rel=0.01)
    assert Path(out["workers_accapp"]).resolve() == (ROOT / "accapp" / "__init__.py").resolve()


def test_bench_machine_speed_prints_the_cpu_and_its_json_line(capsys, monkeypatch):
    """The yardstick beside the suite's times (docs/performance.md): a CPU line, then figures that add up."""
    import runpy

    import torch

    threads = torch.get_num_threads()
    monkeypatch.setattr(sys, "argv", ["machine_speed.py", "--runs", "3"])
    try:
        runpy.run_path(str(ROOT / "bench" / "machine_speed.py"), run_name="__main__")
    finally:
        torch.set_num_threads(threads)  # the script takes one thread, as the suite's workers do
    cpu, last = capsys.readouterr().out.splitlines()[-2:]
    figures = json.loads(last)
    assert cpu and figures["runs"] == 3 and figures["seconds"] >= 0 and figures["gflop_per_s"] > 0
