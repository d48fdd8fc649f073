"""The command line as a user runs it, real models: in this process through accapp.cli.main(argv)
(tests/cli_in_process.py), exit code, stdout and stderr as the shell sees them. `python -m accapp`
itself, in a process of its own, is run by tests/test_any_model.py (a refusal, one line, exit 2)."""

import json

import pytest

from tests.cli_in_process import run_cli

SCORE = ["score"]
CASSEROLE = ["--good", "These casseroles disgust Kayla.", "--bad", "These casseroles disgusts Kayla."]


def run(args):
    return run_cli(*args)


def test_models_lists_registry():
    out = run(["models", "--format", "json"])
    assert out.returncode == 0
    ids = {m["id"] for m in json.loads(out.stdout)}
    assert {"smollm2-135m-instruct", "gemma3-270m", "qwen2.5-1.5b-instruct", "llama-3-8b-instruct"} <= ids


@pytest.mark.parametrize(
    "args, message",
    [
        (["--good", "", "--bad", "x"], "empty"),
        (["--good", "   ", "--bad", "x"], "empty"),
        (["--good", "a" * 5000, "--bad", "x"], "limit"),
        (["--good", "bad\x07bell", "--bad", "x"], "control character"),
        (["--model", "no-such-model"] + CASSEROLE, "Unknown model"),
        # A hub id is a model form now (issue 30): here, offline, it is named in one sentence.
        (["--model", "org/arbitrary-repo"] + CASSEROLE, "'org/arbitrary-repo'"),
        (["--methods", "lp,nonsense"] + CASSEROLE, "Unknown method"),
    ],
)
def test_bad_input_gives_message_and_nonzero_exit(args, message):
    out = run(SCORE + args)
    assert out.returncode != 0
    assert message in out.stderr
    assert "Traceback" not in out.stderr + out.stdout


@pytest.mark.slow
def test_overlong_in_tokens_is_refused():
    long = " ".join("abcdefghij" * 15)  # 299 characters (under 400), 150 tokens (over 128)
    out = run(SCORE + ["--good", long, "--bad", "x", "--methods", "lp"])
    assert out.returncode != 0 and "tokens long" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_score_json_shape_and_casserole_verdict():
    out = run(SCORE + CASSEROLE + ["--methods", "lp,mean_lp,yes_no_prob_comp", "--format", "json"])
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["model"] == "smollm2-135m-instruct"
    for key in ("good", "bad"):
        toks = data["tokens"][key]
        assert toks and set(toks[0]) == {"token", "start", "end", "logprob"}
        assert "".join(t["token"] for t in toks) == data[key]
    rows = data["methods"]
    assert {r["method"] for r in rows} == {"lp", "mean_lp", "yes_no_prob_comp"}
    assert all(set(r) >= {"method", "template", "score_good", "score_bad", "verdict"} for r in rows)
    assert all(r["verdict"] in ("good", "bad", "tie") for r in rows)
    lp = next(r for r in rows if r["method"] == "lp")
    assert lp["verdict"] == "good" and lp["score_good"] == pytest.approx(-56.43, abs=0.01)
    assert len([r for r in rows if r["method"] == "yes_no_prob_comp"]) == 5


@pytest.mark.slow
def test_score_table_format():
    out = run(SCORE + CASSEROLE + ["--methods", "lp", "--format", "table"])
    assert out.returncode == 0
    assert "lp" in out.stdout and "good" in out.stdout


@pytest.mark.slow
def test_nf4_on_cpu_scores_casserole_the_right_way_round():
    out = run(SCORE + CASSEROLE + ["--methods", "lp", "--quantization", "nf4", "--format", "json"])
    assert out.returncode == 0, out.stderr[-2000:]
    lp = json.loads(out.stdout)["methods"][0]
    assert lp["verdict"] == "good"
    # MODELS.md measured -61.27 vs -65.63 with this configuration.
    assert lp["score_good"] == pytest.approx(-61.27, abs=0.5) and lp["score_bad"] == pytest.approx(-65.63, abs=0.5)
