"""Rows in equals rows out (issue 35 part 4): a CSV's line ending is found once; a lone CR (or LF)
elsewhere is a character of its cell, which makes that row's error when it is checked; a quote never
closed refuses the file whole, at the line where it opened. Through the parser, file scoring's row
check (a tiny model's engine) and `bench FILE`'s loader. Fast tier: no real model, no server."""

from __future__ import annotations

import pytest

from accapp.benchmarks import line_ending, load_benchmark, parse_pairs
from accapp.errors import UserError

LONE_CR = b"good,bad\r\nThe dogs\rbark.,The dogs barks.\r\nThe cat sleeps.,The cat sleep.\r\n"  # the file
UNCLOSED = b'good,bad\nThe dogs bark.,The dogs barks.\n"The cat sleeps.,The cat sleep.\nA bird sings.,A bird sing.\n'


def test_the_line_ending_is_found_once():
    assert line_ending("a,b\r\nc\rd\n") == "\r\n" and line_ending("a,b\nc\rd") == "\n"
    assert line_ending("a,b\rc,d\r") == "\r" and line_ending("a,b") == "\n"


@pytest.mark.parametrize("ending", ["\r\n", "\n"])
def test_a_lone_cr_stays_in_its_cell(ending):
    data = LONE_CR.replace(b"\r\n", ending.encode())
    df = parse_pairs(data, "pairs.csv", bad_lines="row")
    assert len(df) == 2  # 2 rows in, 2 out
    assert df.good.tolist() == ["The dogs\rbark.", "The cat sleeps."]
    assert df.bad.tolist() == ["The dogs barks.", "The cat sleep."]
    assert (df.error == "").all()  # the parser keeps the row; its check names the character


def test_a_lone_lf_in_a_crlf_file_and_a_cr_file():
    df = parse_pairs(b"good,bad\r\nThe dogs\nbark.,The dogs barks.\r\nA,B\r\n", "p.csv", bad_lines="row")
    assert df.good.tolist() == ["The dogs\nbark.", "A"]
    df = parse_pairs(b"good,bad\rThe dogs bark.,The dogs barks.\rA,B\r", "p.csv", bad_lines="row")
    assert df.good.tolist() == ["The dogs bark.", "A"] and df.bad.tolist() == ["The dogs barks.", "B"]


def test_a_closed_quoted_cell_may_span_lines():
    data = b'good,bad\r\n"The dogs\r\nbark.",The dogs barks.\r\n"He said ""hi"".",He say hi.\r\n'
    df = parse_pairs(data, "p.csv", bad_lines="row")
    assert df.good.tolist() == ["The dogs\r\nbark.", 'He said "hi".']


@pytest.mark.parametrize("bad_lines", ["raise", "row"])
def test_an_unclosed_quote_refuses_the_file_at_its_line(bad_lines):
    with pytest.raises(UserError, match=r"^Line 3: a cell opens with a quote .* never closed"):
        parse_pairs(UNCLOSED, "pairs.csv", bad_lines=bad_lines)
    crlf = UNCLOSED.replace(b"\n", b"\r\n")
    with pytest.raises(UserError, match="^Line 3: "):
        parse_pairs(crlf, "pairs.csv", bad_lines=bad_lines)
    # closed on its own line, the quote makes one cell of "good,bad": 3 rows in, 3 out, the second's bad cell
    # empty (its check names that)
    ok = parse_pairs(UNCLOSED.replace(b"sleep.\n", b'sleep."\n', 1), "pairs.csv")
    assert ok.good.tolist()[1] == "The cat sleeps.,The cat sleep." and ok.bad.tolist() == ["The dogs barks.", "", "A bird sing."]


def test_file_scoring_gives_the_lone_cr_row_its_error(tiny_llama):
    """File scoring's row check (service.score_file.check_rows) on the issue's file: 2 rows in, 2 out,
    the first an error naming the character, the second checked and ready to score."""
    from accapp.engine import Engine
    from accapp.scoring.causal import CausalScorer
    from accapp.service.score_file import check_rows

    pairs = parse_pairs(LONE_CR, "pairs.csv", bad_lines="row")
    checked, errors = check_rows(Engine(CausalScorer(tiny_llama)), pairs)
    assert [i for i, _ in checked] == [1] and list(errors) == [0]
    assert "control character (U+000D)" in errors[0]


def test_bench_file_reads_the_same_rows(tmp_path):
    """`bench FILE` loads pairs files with load_benchmark: the same rows, the same refusal."""
    lone = tmp_path / "lone.csv"
    lone.write_bytes(LONE_CR)
    assert load_benchmark(str(lone)).good.tolist() == ["The dogs\rbark.", "The cat sleeps."]
    unclosed = tmp_path / "unclosed.csv"
    unclosed.write_bytes(UNCLOSED)
    with pytest.raises(UserError, match="^Line 3: "):
        load_benchmark(str(unclosed))


def test_a_semicolon_file_is_read_by_its_header():
    """A CSV saved with semicolons (issue 34 item 9) is read by the separator its header is split by."""
    df = parse_pairs("good;bad;phenomenon\nThe dogs bark, loudly.;The dogs barks, loudly.;agr\n".encode(), "p.csv")
    assert df.good.tolist() == ["The dogs bark, loudly."] and df.phenomenon.tolist() == ["agr"]
    # a comma file whose sentences hold semicolons stays a comma file
    df = parse_pairs(b"good,bad\nHe came; she left.,He come; she left.\n", "p.csv")
    assert df.bad.tolist() == ["He come; she left."]
