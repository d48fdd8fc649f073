"""Every CSV the app offers comes from one writer (accapp.files.csv_bytes): text cells a spreadsheet
would run as formulas neutralised, numbers left numbers, UTF-8 with a BOM (issue 33, part 3).
Explore's downloads are checked on a results folder holding a user's run whose sentences, paradigms
and phenomena start with '=', '+', '-' and '@'."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pytest

from accapp import files
from accapp.service import host as state
from accapp.ui import explore, score_file

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "precomputed" / "results" / "gemma3-270m__blimp.parquet"  # a small shipped run, as a template
USER_MODEL = "my-run"
STARTS = ["=", "+", "-", "@"]
PARADIGMS = ['=HYPERLINK("http://example.com","click")', "+1+1 paradigm", "-2-2 paradigm", "@SUM(A1:A2) paradigm"]
PHENOMENA = ["=cmd|' /C calc'!A0", "+phenomenon", "-phenomenon", "@phenomenon"]
BOM = b"\xef\xbb\xbf"


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _cells(data: bytes) -> list[list[str]]:
    assert data.startswith(BOM)  # a spreadsheet reads it as UTF-8
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def _unguarded(rows: list[list[str]]) -> list[str]:
    """Cells that start like a formula and are not plain numbers (-0.5 stays a number)."""
    return [c for r in rows for c in r if c.startswith(files.FORMULA_STARTS) and not _is_number(c)]


@pytest.fixture()
def user_run(tmp_path, monkeypatch):
    """A results folder with one user's run of four paradigms (20 pairs each, every method) whose
    paradigm, phenomenon and sentences start with '=', '+', '-' and '@'."""
    if not SOURCE.exists():
        pytest.skip("needs the shipped Gemma 3 BLiMP results")
    df = pd.read_parquet(SOURCE)
    paradigms = sorted(df.paradigm.unique())[:4]
    df = df[df.paradigm.isin(paradigms)].copy()
    nth = df.assign(n=df.pair_id.astype(int)).groupby("paradigm").n.rank(method="dense").astype(int) - 1
    df, nth = df[nth < 20], nth[nth < 20]  # the sample's first 20 pairs of each paradigm
    which = df.paradigm.map({p: i for i, p in enumerate(paradigms)})
    start = nth % 4
    df["model"] = USER_MODEL
    df["paradigm"] = which.map(dict(enumerate(PARADIGMS)))
    df["phenomenon"] = which.map(dict(enumerate(PHENOMENA)))
    df["good"] = start.map(dict(enumerate(STARTS))) + df["good"]
    df["bad"] = ((start + 1) % 4).map(dict(enumerate(STARTS))) + df["bad"]
    results = tmp_path / "results"
    results.mkdir()
    df.to_parquet(results / f"{USER_MODEL}__blimp.parquet", index=False)
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    st = state.AppState(results_dir=results)
    state.set_state(st)
    yield df
    state.set_state(None)


def test_explores_csv_downloads_neutralise_formula_cells(user_run):
    out = explore._render("blimp", USER_MODEL, ["lp", "mean_lp", "in_template_lp"], "mean", False, "all", "lp")
    written = {k: v for k, v in out["files"].items() if v}
    assert {"overall-accuracy", "accuracy-by-phenomenon", "accuracy-by-paradigm", "wrong-pairs"} <= set(written)
    assert "80" in out["overall"]["Pairs"].astype(str).tolist()  # the user's run: 4 paradigms of 20 pairs
    for name, path in written.items():
        rows = _cells(Path(path).read_bytes())
        assert len(rows) > 1, name
        assert not _unguarded(rows), (name, _unguarded(rows)[:5])
    text = {k: Path(v).read_bytes().decode("utf-8-sig") for k, v in written.items()}
    # the user's values are there, made text
    for p in PARADIGMS:
        assert f"'{p}".replace('"', '""') in text["accuracy-by-paradigm"]
    for p in PHENOMENA:
        assert f"'{p}".replace('"', '""') in text["accuracy-by-phenomenon"]
    wrong = pd.read_csv(written["wrong-pairs"], keep_default_na=False)
    sentences = list(wrong["Acceptable sentence"]) + list(wrong["Unacceptable sentence"])
    assert len(wrong) and all(s[0] == "'" and s[1] in STARTS for s in sentences)  # every one made text
    # numbers stay numbers: the margins of wrong pairs are negative or zero, read back as floats
    margin = wrong["Margin (good − bad)"]
    assert pd.api.types.is_float_dtype(margin) and (margin <= 0).all() and (margin < 0).any()


def test_every_csv_writer_is_the_one_in_accapp_files(tmp_path):
    df = pd.DataFrame({"=header": ["=1+1", "+x", "-x", "@x", "\tx", "\rx", "plain"], "score": [-0.5] * 7})
    want = files.csv_bytes(df)
    rows = _cells(want)
    assert rows[0] == ["'=header", "score"] and not _unguarded(rows)
    assert [r[1] for r in rows[1:]] == ["-0.5"] * 7  # a negative number is not neutralised
    assert Path(explore.write_csv(df, "t", folder=tmp_path / "explore")).read_bytes() == want  # Explore's downloads
    assert score_file.write_csv(df, tmp_path / "scored.csv").read_bytes() == want  # Score a file's results
    assert files.write_csv_atomic(df, tmp_path / "direct.csv").read_bytes() == want


def test_rows_written_one_by_one_follow_the_same_rules():
    rows = [{"a": "=1+1", "b": "-x"}, {"a": "plain", "b": "@y"}, {"a": "a\nb"}]  # a missing value: empty
    text = files.rows_csv_text(rows, ["a", "b"])
    assert text == files.csv_text(pd.DataFrame(rows, columns=["a", "b"]).fillna(""))
    assert text.splitlines()[1] == "'=1+1,'-x" and text.endswith('"a\nb",\r\n')
