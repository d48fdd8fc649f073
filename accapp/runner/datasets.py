"""Load minimal-pair benchmarks: the shipped BLiMP and CLiMP, or any user file of pairs.

Every loader returns one DataFrame with columns benchmark, paradigm, phenomenon, pair_id,
good, bad: the same path for shipped benchmarks and user files.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd

from accapp.errors import UserError
from accapp.schema import BUILTIN_BENCHMARKS

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "benchmarks"
COLUMNS = ["benchmark", "paradigm", "phenomenon", "pair_id", "good", "bad"]
GOOD_ALIASES = ("good", "sentence_good", "grammatical", "acceptable")
BAD_ALIASES = ("bad", "sentence_bad", "ungrammatical", "unacceptable")
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_ROWS = 100_000

CITATIONS = {name: b["citation"] for name, b in BUILTIN_BENCHMARKS.items()}


def load_benchmark(name: str) -> pd.DataFrame:
    """'blimp', 'climp', or a path to a CSV/JSONL file of pairs."""
    if name in BUILTIN_BENCHMARKS:
        return pd.read_parquet(ASSETS / f"{name}.parquet")
    path = Path(name)
    if not path.exists():
        raise UserError(f"Unknown benchmark '{name}': use blimp, climp or the path of a CSV/JSONL file.")
    return load_pairs_file(path)


def language_of(benchmark: str) -> str | None:
    """A built-in benchmark's language; None for a user's file (detected per pair)."""
    return BUILTIN_BENCHMARKS.get(benchmark, {}).get("language")


def bench_name(benchmark: str) -> str:
    """The name a benchmark's results go under: blimp, climp, or a user file's stem."""
    return benchmark if benchmark in BUILTIN_BENCHMARKS else Path(benchmark).stem


def _pick(columns, aliases, what) -> str:
    lower = {str(c).strip().lower(): c for c in columns}
    for a in aliases:
        if a in lower:
            return lower[a]
    raise UserError(f"The file has no {what} column: name it one of {', '.join(aliases)}.")


def parse_pairs(data: bytes, name: str) -> pd.DataFrame:
    """Parse CSV or JSONL bytes of pairs; raises UserError with a clear message."""
    if len(data) > MAX_FILE_BYTES:
        raise UserError(f"The file is {len(data) / 1e6:.1f} MB; the limit is {MAX_FILE_BYTES // 1_000_000} MB.")
    try:  # UTF-16 only with its byte-order mark; else UTF-8, with or without one
        text = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError("The file is not UTF-8 text: save it as UTF-8 (CSV or JSONL) and try again.") from exc
    suffix = Path(name).suffix.lower()
    try:
        if suffix in (".jsonl", ".json", ".ndjson"):
            df = pd.DataFrame.from_records(_jsonl_records(text))
        elif suffix in (".csv", ".tsv", ".txt"):
            df = pd.read_csv(io.StringIO(text), sep="\t" if suffix == ".tsv" else ",", dtype=str, keep_default_na=False)
        else:
            raise UserError(f"Unsupported file type '{suffix or name}': upload a .csv or .jsonl file.")
    except UserError:
        raise
    except (ValueError, pd.errors.ParserError) as exc:
        raise UserError(f"Could not read the file as {suffix.lstrip('.').upper()}: {exc}") from exc
    if len(df) == 0:
        raise UserError("The file has no rows.")
    if len(df) > MAX_ROWS:
        raise UserError(f"The file has {len(df):,} rows; the limit is {MAX_ROWS:,}.")
    good, bad = _pick(df.columns, GOOD_ALIASES, "good-sentence"), _pick(df.columns, BAD_ALIASES, "bad-sentence")
    out = pd.DataFrame({
        "benchmark": Path(name).stem,
        "paradigm": df[_col(df, "paradigm")].astype(str) if _col(df, "paradigm") else "all",
        "phenomenon": df[_col(df, "phenomenon")].astype(str) if _col(df, "phenomenon") else "all",
        "pair_id": df[_col(df, "pair_id")].astype(str) if _col(df, "pair_id") else [str(i) for i in range(len(df))],
        "good": df[good].map(lambda v: "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)),
        "bad": df[bad].map(lambda v: "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)),
    })
    return out[COLUMNS]


def _jsonl_records(text: str) -> list[dict]:
    """One record per line. Lines end at LF, CRLF or CR only: JSON writes those characters inside
    a string escaped, but other line breaks (U+2028, form feed, ...) may stand raw in a string,
    so str.splitlines() would cut a record in two."""
    records = []
    for number, line in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise UserError(f"Could not read the file as JSONL: line {number} is not valid JSON ({exc}).") from exc
        if not isinstance(record, dict):
            raise UserError(f"Line {number} of the JSONL file: each line must be a JSON object with good and bad fields.")
        records.append(record)
    return records


def _col(df: pd.DataFrame, name: str):
    for c in df.columns:
        if str(c).strip().lower() == name:
            return c
    return None


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
