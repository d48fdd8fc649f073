"""Result files are safe to open and read back (issue 22, item 3): formula cells neutralised
(OWASP's CSV-injection rule) while numbers stay numbers; cells with CR, LF, quotes or commas
quoted; rows in = rows out, in order, for CSV and JSONL with a BOM, CRLF, CR-only or UTF-16."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from accapp.benchmarks import parse_pairs
from accapp.errors import UserError
from accapp.files import neutralise_cell, write_csv_atomic

EVIL = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x","y")', "+1+1", "-1-1", "@SUM(A1:A2)", "\tx", "\rx"]
AWKWARD = ["a\rb", "a\nb", "a\r\nb", 'say "hi", then', "plain", "", "日本語\u2028行"]


def test_formula_cells_are_text_and_numbers_stay_numbers(tmp_path):
    df = pd.DataFrame({"good": EVIL + AWKWARD, "score": [-1.5] * (len(EVIL) + len(AWKWARD)),
                       "n": list(range(len(EVIL) + len(AWKWARD)))})
    path = write_csv_atomic(df, tmp_path / "out.csv")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")  # a BOM: a spreadsheet reads it as UTF-8
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["good", "score", "n"] and len(rows) == 1 + len(df)  # rows in = rows out
    cells = [r[0] for r in rows[1:]]
    assert cells[: len(EVIL)] == ["'" + e for e in EVIL]
    assert cells[len(EVIL):] == AWKWARD  # a lone CR or LF inside a cell survives, quoted
    assert all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)
    assert [r[1] for r in rows[1:]] == ["-1.5"] * len(df)  # a negative number is not neutralised
    back = pd.read_csv(path, dtype={"good": str}, keep_default_na=False)
    assert len(back) == len(df) and back.n.tolist() == df.n.tolist()
    assert neutralise_cell(-3) == -3 and neutralise_cell(None) is None


def _pairs(n: int) -> list[tuple[str, str]]:
    return [(f"The dog {i} barks.", f"The dog {i} bark.") for i in range(n)]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16"])
def test_csv_rows_in_equal_rows_out(newline, encoding):
    text = newline.join(["good,bad"] + [f"{g},{b}" for g, b in _pairs(5)] + ['"a\nb",c']) + newline
    df = parse_pairs(text.encode(encoding), "pairs.csv")
    assert list(zip(df.good, df.bad)) == _pairs(5) + [("a\nb", "c")]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16"])
def test_jsonl_rows_in_equal_rows_out(newline, encoding):
    pairs = _pairs(3) + [("line\u2028break and \x0c feed", "bad\u0085one")]  # breaks splitlines() would cut at
    text = newline.join(json.dumps({"good": g, "bad": b}, ensure_ascii=False) for g, b in pairs) + newline
    df = parse_pairs(text.encode(encoding), "pairs.jsonl")
    assert list(zip(df.good, df.bad)) == pairs


def test_a_bad_jsonl_line_is_named_by_its_number():
    text = "\n".join([json.dumps({"good": "a", "bad": "b"}), "", json.dumps({"good": "c", "bad": "d"}), "{oops", "[1]"])
    with pytest.raises(UserError, match="line 4 is not valid JSON"):
        parse_pairs(text.encode(), "pairs.jsonl")
    with pytest.raises(UserError, match="Line 2 of the JSONL file: each line must be a JSON object"):
        parse_pairs(("{\"good\": \"a\", \"bad\": \"b\"}\n[1]\n").encode(), "pairs.jsonl")
