"""Every kind of awkward input named in the hardening issue, through the engine, the CLI and the
file path: each is scored, or refused with the documented message; never another exception."""

import io
import json

import pandas as pd
import pytest

from accapp.benchmarks import MAX_FILE_BYTES, parse_pairs
from accapp.errors import MAX_SENTENCE_CHARS, UserError

# (label, sentence, None when it is scored, else a fragment of the message)
CASES = [
    ("emoji", "The dog 🐶 barks happily 🎉.", None),
    ("right-to-left (Hebrew)", "הכלב נובח בחצר.", None),
    ("right-to-left (Arabic)", "الكلب ينبح في الحديقة.", None),
    ("mixed scripts", "The 猫 sat on the мат near the כלב.", None),
    ("combining marks", "Cafe\u0301 owners smile.", None),
    ("HTML", "<img src=x onerror=alert(1)> barks.", None),
    ("empty", "", "is empty"),
    ("whitespace only", " \u00a0 \u3000 ", "is empty"),
    ("control character", "The dog\x07 barks.", "control character"),
    ("newline inside", "The dog\nbarks.", "control character"),
    ("bidi override", "The dog \u202ekrab.", "control character"),
    ("over-long in characters", "a" * (MAX_SENTENCE_CHARS + 1), "the limit is 400"),
    ("over-long in tokens", " ".join("abcdefghij" * 15), "tokens long"),
]


@pytest.fixture(scope="module")
def engine(smollm):
    from accapp.engine import Engine
    from accapp.scoring.causal import CausalScorer

    return Engine(CausalScorer(smollm))


@pytest.mark.slow
@pytest.mark.parametrize("label, sentence, refused", CASES, ids=[c[0] for c in CASES])
def test_engine_scores_or_refuses_each_input(engine, label, sentence, refused):
    if refused is None:
        res = engine.score_pair(sentence, "The dog barks.", ["lp", "yes_no_prob_comp"])
        assert res.rows and all(r["verdict"] in ("good", "bad", "tie") for r in res.rows)
        assert "".join(t["token"] for t in res.tokens["good"]) == sentence.strip()  # offsets cover the text
    else:
        with pytest.raises(UserError, match=refused):
            engine.score_pair(sentence, "The dog barks.", ["lp"])


@pytest.mark.slow
def test_cli_emoji_scored_and_bidi_override_refused():
    from tests.cli_in_process import run_cli  # python -m accapp, in this process (main(argv))

    base = ["score", "--methods", "lp", "--format", "json"]
    ok = run_cli(*base, "--good", "The dog 🐶 barks.", "--bad", "The dog 🐶 bark.")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert json.loads(ok.stdout)["good"] == "The dog 🐶 barks."
    bad = run_cli(*base, "--good", "The dog \u202ekrab.", "--bad", "x")
    assert bad.returncode == 2 and "control character" in bad.stderr and "Traceback" not in bad.stderr


def _csv(rows) -> bytes:
    buf = io.StringIO()
    pd.DataFrame(rows, columns=["good", "bad"]).to_csv(buf, index=False)
    return buf.getvalue().encode("utf-8")


def test_file_with_every_awkward_sentence_keeps_one_row_each():
    df = parse_pairs(_csv([(s, "The dog barks.") for _, s, _ in CASES]), "pairs.csv")
    assert len(df) == len(CASES)  # refusals happen per row, when scored (see the score-file tests)
    assert df.good.tolist()[:6] == [s for _, s, _ in CASES[:6]]


@pytest.mark.parametrize(
    "data, name, message",
    [
        ("good,bad\nCafé,Cafe\n".encode("latin-1"), "pairs.csv", "not UTF-8"),
        (b"PK\x03\x04 binary", "pairs.xlsx", "Unsupported file type"),
        (b"sentence,other\na,b\n", "pairs.csv", "no good-sentence column"),
        (b"good\na\n", "pairs.csv", "no bad-sentence column"),
        (b'{"good": "a", "bad": "b"}\n[1, 2]\n', "pairs.jsonl", "must be a JSON object"),
        (b'{"good": "a", "bad": \n', "pairs.jsonl", "Could not read the file"),
        (b"good,bad\n", "pairs.csv", "no rows"),
        (b"x" * (MAX_FILE_BYTES + 1), "pairs.csv", "the limit is 20 MB"),
    ],
    ids=["latin-1", "xlsx", "no-good-column", "no-bad-column", "jsonl-not-object", "jsonl-broken", "no-rows", "too-large"],
)
def test_bad_uploads_get_clear_messages(data, name, message):
    with pytest.raises(UserError, match=message):
        parse_pairs(data, name)


def test_hundred_thousand_rows_load_and_one_more_is_refused():
    rows = [(f"The dog {i} barks.", f"The dog {i} bark.") for i in range(100_000)]
    assert len(parse_pairs(_csv(rows), "big.csv")) == 100_000
    with pytest.raises(UserError, match="the limit is 100,000"):
        parse_pairs(_csv(rows + [("a", "b")]), "big.csv")


def test_app_refuses_a_hundred_thousand_rows_with_a_message(monkeypatch, tmp_path):
    """The web app scores at most 5,000 rows at a time: a 100,000-row upload gets a message, at once."""
    import gradio as gr

    from accapp.service import host as state
    from accapp.ui import score_file

    path = tmp_path / "big.csv"
    path.write_bytes(_csv([(f"The dog {i} barks.", f"The dog {i} bark.") for i in range(100_000)]))
    state.set_state(state.AppState(results_dir=tmp_path))
    try:
        with pytest.raises(gr.Error, match="more than 5,000 rows; the limit is 5,000"):
            list(score_file.run_score(str(path), "smollm2-135m-instruct", ["lp"]))
    finally:
        state.set_state(None)
