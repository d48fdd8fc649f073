"""Benchmarks: the built-in ones described once (accapp/data/benchmarks.json: :class:`Benchmark`),
more from a descriptor file named by ACCAPP_BENCHMARKS, and loading them or any user file of pairs.

A benchmark has a shape (SHAPES): pairs and rated pairs load as one DataFrame with columns
benchmark, paradigm, phenomenon, pair_id, good, bad (the same path for shipped benchmarks and user
files; rated pairs add their ratings); labelled single sentences as benchmark, paradigm,
phenomenon, sentence_id, sentence, label (1 acceptable, 0 not).
"""

from __future__ import annotations

import csv
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from accapp import languages, settings
from accapp.errors import UserError, shown

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "benchmarks"
DESCRIPTORS = Path(__file__).resolve().parent / "data" / "benchmarks.json"
COLUMNS = ["benchmark", "paradigm", "phenomenon", "pair_id", "good", "bad"]
SENTENCE_COLUMNS = ["benchmark", "paradigm", "phenomenon", "sentence_id", "sentence", "label"]
GOOD_ALIASES = ("good", "sentence_good", "grammatical", "acceptable")
BAD_ALIASES = ("bad", "sentence_bad", "ungrammatical", "unacceptable")
# Human judgments a file may carry (kept beside the pairs; accapp.analysis.ratings reads them): ratings
# per sentence (Likert or magnitude estimation, raw or z-scored), a per-pair difference, the share of a
# forced choice that chose the good sentence, and who rated (z-scored within participants first).
RATING_COLUMNS = ("rating_good", "rating_bad", "human_delta", "fc_good")
PARTICIPANT_COLUMN = "participant"
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_ROWS = 100_000



@dataclass(frozen=True)
class Benchmark:
    """A built-in benchmark, described once (accapp/data/benchmarks.json): every view, analysis and
    list reads these facts from here, so a new benchmark is a descriptor and its data."""

    name: str  # the id results go under: "blimp"
    label: str  # how it reads on screen: "BLiMP"
    language: str  # ISO 639-1: "en" (a row of the language table, accapp/languages.py)
    citation: str  # paper, venue and licence, shown wherever its pairs or numbers are
    bibkey: str  # its entry in accapp/data/citations.bib
    shape: str = "pairs"  # one of SHAPES
    source: str = ""  # where its data was converted from: repository, path, commit
    licence: str = ""  # the data's licence as its authors state it ("none stated" where they state none)
    counts: dict = field(default_factory=dict)  # items, paradigms, phenomena of the shipped data
    reference_counts: dict = field(default_factory=dict)  # items as a paper reports them, and where
    phenomena_from: str = "source"  # "source": the release's own phenomenon per paradigm; "project": ours
    data: str = ""  # its data file, relative to the descriptor file (default: assets/benchmarks/<name>.parquet)
    home: str = ""  # the folder of the descriptor file it came from
    human: dict = field(default_factory=dict)  # kind (per_paradigm | overall), table or file, label, note
    published: dict = field(default_factory=dict)  # its own published tables (precomputed/published/<name>.parquet)
    attractors: dict = field(default_factory=dict)  # subject-verb agreement paradigm -> attractor type
    phenomena: dict = field(default_factory=dict)  # phenomenon id -> words on screen

    def phenomenon_label(self, phenomenon: str) -> str:
        """A phenomenon's words on screen ("subject-verb agreement"); an unknown id with spaces for _."""
        return self.phenomena.get(phenomenon) or str(phenomenon).replace("_", " ")


    @property
    def data_path(self) -> Path:
        return Path(self.home) / self.data if self.data else ASSETS / f"{self.name}.parquet"


# What a benchmark can be, and the columns its data file must have.
SHAPES = {
    "pairs": ("good", "bad"),
    "rated_pairs": ("good", "bad"),  # with one or more of RATING_COLUMNS
    "sentences": ("sentence", "label"),
}
PAIR_SHAPES = ("pairs", "rated_pairs")  # the shapes the runner scores pair by pair


def _read_descriptors(path: Path = DESCRIPTORS) -> dict[str, Benchmark]:
    """The descriptors of a file ({id: descriptor}; its ``_languages`` rows join the language table)."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"Could not read the benchmark descriptor file {path}: {exc}.") from exc
    languages.add(raw.get("_languages"))
    out = {}
    for name, d in raw.items():
        if name.startswith("_"):
            continue
        try:
            out[name] = Benchmark(name=name, home=str(path.parent), **d)
        except TypeError as exc:
            raise UserError(f"The descriptor of benchmark '{name}' in {path} does not fit: {exc}.") from exc
        if out[name].shape not in SHAPES:
            raise UserError(f"Benchmark '{name}' in {path} has shape '{out[name].shape}'; the shapes are "
                            f"{', '.join(SHAPES)}.")
    return out


def _all_descriptors() -> dict[str, Benchmark]:
    """The built-in descriptors, then those of each file ACCAPP_BENCHMARKS lists (a built-in id is kept)."""
    found = _read_descriptors()
    for extra in settings.items("ACCAPP_BENCHMARKS"):
        for name, b in _read_descriptors(extra).items():
            found.setdefault(name, b)
    return found


BUILTIN: dict[str, Benchmark] = _all_descriptors()
NAMES = tuple(BUILTIN)  # display order; the first is every benchmark choice's default
CITATIONS = {name: b.citation for name, b in BUILTIN.items()}
LANGUAGE_NAMES = languages.names()  # the languages of the table (and of the descriptor files read)


def describe(name: str) -> Benchmark | None:
    """A built-in benchmark's descriptor; None for a user's file."""
    return BUILTIN.get(name)


def label_of(name: str) -> str:
    """How a benchmark reads on screen: "BLiMP" for a built-in one, a user file's name as it is."""
    b = BUILTIN.get(name)
    return b.label if b else str(name)


def load_benchmark(name: str) -> pd.DataFrame:
    """A built-in benchmark's id (NAMES), or a path to a CSV/JSONL file of pairs: its rows in the
    columns of its shape (module doc)."""
    if name in BUILTIN:
        return _load_described(BUILTIN[name])
    path = Path(name)
    if not path.exists():
        raise UserError(f"Unknown benchmark '{name}': the known ones are {', '.join(NAMES)}; "
                        "or give the path of a CSV/JSONL file of pairs.")
    return load_pairs_file(path)


def shape_of(benchmark: str) -> str:
    """A benchmark's shape: its descriptor's, "pairs" for a user's file."""
    b = BUILTIN.get(benchmark)
    return b.shape if b else "pairs"


def _load_described(b: Benchmark) -> pd.DataFrame:
    path = b.data_path
    if not path.exists():
        raise UserError(f"Benchmark '{b.name}' has no data file: {path} is missing.")
    if path.suffix == ".parquet":
        df = pd.read_parquet(path)
    elif b.shape in PAIR_SHAPES:
        df = load_pairs_file(path)
    else:  # labelled sentences in a CSV or JSONL file
        df = pd.read_json(path, lines=True) if path.suffix == ".jsonl" else pd.read_csv(path, dtype=str)
    need = SHAPES[b.shape]
    if not set(need) <= set(df.columns):
        raise UserError(f"Benchmark '{b.name}' is described as {b.shape} ({', '.join(need)}), but its data file "
                        f"{path.name} has the columns {', '.join(map(str, df.columns))}.")
    df["benchmark"] = b.name
    if b.shape == "sentences":
        for column, default in (("paradigm", "all"), ("phenomenon", "all")):
            if column not in df:
                df[column] = default
        if "sentence_id" not in df:
            df["sentence_id"] = [str(i) for i in range(len(df))]
        df["label"] = pd.to_numeric(df["label"]).astype("int8")
        return df[SENTENCE_COLUMNS + [c for c in df.columns if c not in SENTENCE_COLUMNS]]
    return df


def language_of(benchmark: str) -> str | None:
    """A built-in benchmark's language; None for a user's file (detected per pair)."""
    b = BUILTIN.get(benchmark)
    return b.language if b else None


def language_name(benchmark: str) -> str:
    """A built-in benchmark's language in words ("English"); '' for a user's file."""
    return languages.name(language_of(benchmark))


def for_language(language: str) -> str:
    """The built-in benchmark in a language (the first one when none is)."""
    return next((b.name for b in BUILTIN.values() if b.language == language), NAMES[0])


def bench_name(benchmark: str) -> str:
    """The name a benchmark's results go under: a built-in one's, or a user file's stem."""
    return benchmark if benchmark in BUILTIN else Path(benchmark).stem


MAX_COLUMNS = 64  # columns of a CSV header, or fields of a JSONL record
MAX_HEADER_CHARS = 4096  # a CSV header line
MAX_LINE_CHARS = 65536  # any line (a pair's two sentences take at most 800 characters)


CONTEXT_COLUMN = "context"  # a pairs file's optional column: the text both sentences of its row follow


def parse_pairs(data: bytes, name: str, *, bad_lines: str = "raise", max_rows: int = MAX_ROWS) -> pd.DataFrame:
    """Parse CSV or JSONL bytes of pairs; raises UserError with a clear message.

    The header's length and its number of columns are checked before anything else is parsed.
    A line that cannot be read (a CSV record with more fields than the header, a JSONL line that
    is not a JSON object, a line over MAX_LINE_CHARS characters) raises UserError naming its line,
    or with ``bad_lines="row"`` keeps its row with the message in an ``error`` column (empty for
    the rows read well), so that the rest of the file is scored.
    """
    if bad_lines not in ("raise", "row"):
        raise ValueError(f"bad_lines must be 'raise' or 'row', not {bad_lines!r}")
    if len(data) > MAX_FILE_BYTES:
        raise UserError(f"The file is {len(data) / 1e6:.1f} MB; the limit is {MAX_FILE_BYTES // 1_000_000} MB.")
    try:  # UTF-16 only with its byte-order mark; else UTF-8, with or without one
        text = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError("The file is not UTF-8 text: save it as UTF-8 (CSV or JSONL) and try again.") from exc
    suffix = Path(name).suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        records, errors = _jsonl_records(text, max_rows)
    elif suffix in (".csv", ".tsv", ".txt"):
        records, errors = _csv_records(text, "\t" if suffix == ".tsv" else ",", max_rows)
    else:
        raise UserError(f"Unsupported file type '{suffix or name}': upload a .csv or .jsonl file.")
    if errors and bad_lines == "raise":
        raise UserError(errors[min(errors)])
    if len(records) == 0:
        raise UserError("The file has no rows.")
    keys = {k for r in records for k in r}
    good = _alias(keys, GOOD_ALIASES, "good-sentence") if len(errors) < len(records) else "good"
    bad = _alias(keys, BAD_ALIASES, "bad-sentence") if len(errors) < len(records) else "bad"

    def column(key, default=None):
        return [_text(r.get(key)) if key in r or default is None else default(i) for i, r in enumerate(records)]

    out = pd.DataFrame({
        "benchmark": Path(name).stem,
        "paradigm": column("paradigm", lambda i: "all") if "paradigm" in keys else "all",
        "phenomenon": column("phenomenon", lambda i: "all") if "phenomenon" in keys else "all",
        "pair_id": column("pair_id", str) if "pair_id" in keys else [str(i) for i in range(len(records))],
        "good": column(good),
        "bad": column(bad),
    }, index=range(len(records)))[COLUMNS]
    if CONTEXT_COLUMN in keys:  # text both sentences follow (accapp/scoring/context.py); an empty cell: none
        out[CONTEXT_COLUMN] = column(CONTEXT_COLUMN, lambda i: "")
    for key in RATING_COLUMNS:  # numbers; a cell that is not one is empty (NaN), never a failed row
        if key in keys:
            out[key] = pd.to_numeric(pd.Series(column(key, lambda i: ""), index=out.index), errors="coerce")
    if PARTICIPANT_COLUMN in keys and any(k in keys for k in RATING_COLUMNS):
        out[PARTICIPANT_COLUMN] = column(PARTICIPANT_COLUMN, lambda i: "")
    if bad_lines == "row":
        out["error"] = [errors.get(i, "") for i in range(len(records))]
    return out


def _text(v) -> str:
    return "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)


def _alias(keys, aliases, what) -> str:
    for a in aliases:
        if a in keys:
            return a
    raise UserError(f"The file has no {what} column: name it one of {', '.join(aliases)}.")


def _too_many_rows(max_rows: int) -> UserError:
    return UserError(f"The file has more than {max_rows:,} rows; the limit is {max_rows:,}.")


def line_ending(text: str) -> str:
    """A file's line ending, found once: its first line break's ("\r\n", "\n" or "\r"). Any other
    CR or LF in the file is a character of its cell, never the end of a row."""
    first = re.search(r"\r\n|\r|\n", text)
    return first.group() if first else "\n"


def delimiter(head: str, default: str = ",") -> str:
    """The field separator of a CSV from its header line: the default, unless only another of ``, ; tab``
    splits the header into columns that name the good and the bad sentence (a spreadsheet saved with
    semicolons, as many European locales do)."""
    def names(sep: str) -> set[str]:
        return {h.strip().lower() for h in next(csv.reader([head], delimiter=sep), [])}

    def fits(sep: str) -> bool:
        found = names(sep)
        return bool(found & set(GOOD_ALIASES)) and bool(found & set(BAD_ALIASES))

    if fits(default):
        return default
    return next((sep for sep in (",", ";", "\t") if sep != default and fits(sep)), default)


def _unclosed_quote_line(lines: list[str], first_line: int, sep: str) -> int | None:
    """The line where a quoted cell opens and is never closed, in a record's physical lines (the csv
    module's rule: a quote opens a cell only at its start; "" inside is a quote), or None."""
    opened, in_quotes, at_start, i = None, False, True, 0
    text = "".join(lines)
    starts = [first_line + n for n, line in enumerate(lines) for _ in line]
    while i < len(text):
        c = text[i]
        if in_quotes:
            if c == '"' and text[i + 1:i + 2] == '"':
                i += 1
            elif c == '"':
                in_quotes, opened = False, None
        elif c == '"' and at_start:
            in_quotes, opened = True, starts[i]
        at_start = not in_quotes and c in (sep, "\r", "\n")
        i += 1
    return opened if in_quotes else None


def _csv_records(text: str, sep: str, max_rows: int) -> tuple[list[dict], dict[int, str]]:
    """Records of a CSV text (keys: header names stripped and lower-cased) and {record: message}
    for those that could not be read: every row of the file is a record, or the file is refused whole
    with the reason (a quote never closed). The header is checked first: its length and columns.
    Rows end at the file's own line ending (:func:`line_ending`); a lone CR (or LF) elsewhere stays in
    its cell, where the sentence check names it."""
    ending = line_ending(text)
    first = text.find(ending)
    head = text[: first] if first >= 0 else text
    sep = delimiter(head, sep)
    if len(head) > MAX_HEADER_CHARS:
        raise UserError(f"The header line is {len(head):,} characters long; the limit is {MAX_HEADER_CHARS:,}.")
    names = [h.strip().lower() for h in next(csv.reader([head], delimiter=sep), [])]
    width = len(names)
    if width > MAX_COLUMNS:
        raise UserError(f"The header has {width:,} columns; the limit is {MAX_COLUMNS}. Keep good, bad and a few others.")
    twice = next((n for n in names if n and names.count(n) > 1), None)
    if twice is not None:  # a reader would keep one of the two silently
        at = [i + 1 for i, n in enumerate(names) if n == twice]
        raise UserError(f"The header names the column '{shown(twice)}' {len(at)} times (columns "
                        f"{', '.join(map(str, at))}): keep one.")
    one_line = first < 0 or not text[first + len(ending):].strip()
    if one_line and not set(names) & set(GOOD_ALIASES):  # one line and no header: it is a pair, not column names
        raise UserError("The file has one line and no header: its first line must name the columns (good and bad, "
                        "or sentence_good and sentence_bad), with one pair on each line after it.")
    long_lines: set[int] = set()
    # The csv module ends a row at any CR or LF; other breaks than the file's ending stand in for
    # characters the file lacks while it parses, and are put back in each cell after.
    stand_in = dict(zip("\r\n", _absent_chars(text, 2)))  # inside a line, either is lone
    back = {v: k for k, v in stand_in.items()}
    physical = text.split(ending)
    if physical and physical[-1] == "":
        physical.pop()  # the file's last line ending ends its last row
    physical = [line + ending for line in physical]

    def lines():  # physical lines at the file's ending, each over MAX_LINE_CHARS cut to its quotes' parity
        for number, line in enumerate(physical, start=1):
            if len(line) > MAX_LINE_CHARS:
                long_lines.add(number)
                line = ('"' if line.count('"') % 2 else "-") + ending  # never blank: the line keeps its record
            for c, s in stand_in.items():
                line = line[: -len(ending)].replace(c, s) + ending
            yield line

    def restore(cell: str) -> str:
        for s, c in back.items():
            cell = cell.replace(s, c)
        return cell

    reader = csv.reader(lines(), delimiter=sep)
    header: list[str] | None = None
    records: list[dict] = []
    errors: dict[int, str] = {}
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            if header is None:
                raise UserError(f"Could not read the file as CSV: line {start}: {exc}.") from exc
            errors[len(records)] = f"Line {start} could not be read as CSV ({exc})."
            records.append({})
            continue
        if not row:
            continue  # a blank line
        row = [restore(cell) for cell in row] if back else row
        if reader.line_num > start or reader.line_num == len(physical):  # a record over several lines, or the last
            opened = _unclosed_quote_line(physical[start - 1:reader.line_num], start, sep)
            if opened is not None:
                raise UserError(f"Line {opened}: a cell opens with a quote (\") that is never closed, so every line "
                                "after it would be read into that one cell and its rows lost. Close the quote; a quote "
                                "inside a cell is written twice (\"\").")
        if header is None:
            header = [h.strip().lower() for h in row]
            continue
        if len(records) >= max_rows:
            raise _too_many_rows(max_rows)
        long = [n for n in range(start, reader.line_num + 1) if n in long_lines]
        if long:
            errors[len(records)] = f"Line {long[0]} is longer than {MAX_LINE_CHARS:,} characters."
            records.append({})
            continue
        if len(row) > len(header):
            errors[len(records)] = f"Line {start} has {len(row):,} fields; the header has {len(header)}."
            records.append({})
            continue
        record: dict = {}
        for key, value in zip(header, row):
            record.setdefault(key, value)  # a repeated column name: its first column
        for key in header[len(row):]:
            record.setdefault(key, "")  # a short line: its missing cells are empty
        records.append(record)
    return records, errors


def _absent_chars(text: str, n: int) -> list[str]:
    """The first ``n`` private-use characters the text does not hold, to stand in for others while it
    parses; the search stops once it has them (each look is a pass over the text)."""
    return list(itertools.islice((c for c in map(chr, range(0xE000, 0xF900)) if c not in text), n))


def _jsonl_records(text: str, max_rows: int = MAX_ROWS) -> tuple[list[dict], dict[int, str]]:
    """One record per line (keys stripped and lower-cased) and {record: message} for the lines
    that could not be read. Lines end at LF, CRLF or CR only: JSON writes those characters inside
    a string escaped, but other line breaks (U+2028, form feed, ...) may stand raw in a string,
    so str.splitlines() would cut a record in two."""
    records: list[dict] = []
    errors: dict[int, str] = {}
    for number, line in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        if not line.strip():
            continue
        if len(records) >= max_rows:
            raise _too_many_rows(max_rows)
        problem = None
        if len(line) > MAX_LINE_CHARS:
            problem = f"Line {number} is longer than {MAX_LINE_CHARS:,} characters."
        else:
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as exc:
                problem = f"Could not read the file as JSONL: line {number} is not valid JSON ({exc})."
            else:
                if not isinstance(record, dict):
                    problem = f"Line {number} of the JSONL file: each line must be a JSON object with good and bad fields."
                elif len(record) > MAX_COLUMNS:
                    problem = f"Line {number} has {len(record):,} fields; the limit is {MAX_COLUMNS}."
        if problem:
            errors[len(records)] = problem
            records.append({})
            continue
        normalised: dict = {}
        for key, value in record.items():
            normalised.setdefault(str(key).strip().lower(), value)
        records.append(normalised)
    return records, errors


def load_pairs_file(path: Path) -> pd.DataFrame:
    return parse_pairs(Path(path).read_bytes(), Path(path).name)


def stratified_sample(df: pd.DataFrame, per_paradigm: int | None, seed: int = 0) -> pd.DataFrame:
    """N pairs per paradigm drawn with a seeded RNG (all pairs when None), in pair order.

    Nested: the first N of one seeded shuffle, so a 30-pair sample lies inside the 100-pair one
    and a larger run only computes the pairs it adds.
    """
    if per_paradigm is None:
        return df.reset_index(drop=True)
    parts = []
    for _, group in df.groupby("paradigm", sort=True):
        parts.append(group.sample(frac=1.0, random_state=seed).head(per_paradigm).sort_index())
    return pd.concat(parts).reset_index(drop=True)
