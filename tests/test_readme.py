"""The README's Python API example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Python API"):text.index("## Command line")]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_readme_has_the_three_line_example():
    blocks = _python_blocks()
    assert len(blocks) == 2 and "accapp.score_pairs(" in blocks[0] and "accapp.token_scores(" in blocks[0]


@pytest.mark.slow
def test_readme_python_api_examples_run(capsys):
    for block in _python_blocks():
        scope: dict = {}
        exec(compile(block, str(README), "exec"), scope)  # noqa: S102 - the README's own example
    out = capsys.readouterr().out
    assert "yes_no_prob_comp" in out and "surprisal_bits" in out


@pytest.mark.slow
def test_score_pairs_agrees_with_the_engine():
    import accapp
    from accapp.engine import build_engine

    pairs = [("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."), ("The dogs bark.", "The dogs barks.")]
    df = accapp.score_pairs(pairs, methods=["lp", "ab_prompting"], progress=False)
    assert list(df.pair.unique()) == [0, 1] and len(df) == 2 * (1 + 10)
    engine = build_engine("smollm2-135m-instruct")
    both = engine.score_pairs([engine.check_pair(g, b) for g, b in pairs], ["lp", "ab_prompting"])
    for i, res in enumerate(both):  # the same batch as score_pairs: the same floats
        got = df[df.pair == i][["method", "template", "variant", "score_good", "score_bad", "verdict", "prediction"]]
        assert got.to_dict("records") == res.rows
    with pytest.raises(accapp.errors.UserError, match="Pair 1"):
        accapp.score_pairs([pairs[0], ("", "x")], methods=["lp"])
    tokens = accapp.token_scores(["The dogs bark."])
    (expected, _), = engine.token_scores(["The dogs bark."])
    assert tokens.logprob.tolist() == [t["logprob"] for t in expected]
