"""Writing files so that a killed process never leaves half a file, and safe file names."""

from __future__ import annotations

import csv
import errno
import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

# OWASP's CSV-injection rule: a text cell starting with one of these is read as a formula by
# spreadsheets; a leading apostrophe makes it text again.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
DISK_FULL_MESSAGE = ("The server's disk is full, so the file could not be stored. Nothing was kept; "
                     "try again in a few minutes (old uploads and results are removed as they expire).")


def is_disk_full(exc: BaseException) -> bool:
    """An OSError saying the disk (or a quota, or the file-size limit) is exhausted."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def file_sha256(path: Path) -> str:
    """A file's SHA-256 in hex, read 1 MiB at a time (a large file is never held in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def safe_name(name: str) -> str:
    """A file-name part made of letters, digits, '-', '_' and '.' only (others become '_')."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name))


def run_file(folder: Path, model: str, benchmark: str, suffix: str = ".parquet") -> Path:
    """A run's file in a results folder, <model>__<benchmark><suffix>: its results, or with another suffix its
    manifest (".manifest.json"), separation summary or a suite's regions and outcomes."""
    return Path(folder) / f"{safe_name(model)}__{safe_name(benchmark)}{suffix}"


TEMP_NAME = re.compile(r"^\..+\.(\d+)\.tmp$")  # write_atomic's temporary names: .<name>.<pid>.tmp


def temp_path(path: Path, pid: int | None = None) -> Path:
    """The hidden temporary name write_atomic writes `path` under (this process's pid by default)."""
    return path.with_name(f".{path.name}.{os.getpid() if pid is None else pid}.tmp")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    except (OverflowError, ValueError):  # no process can have such a pid
        return False
    return True


def remove_stale_temps(folder: Path) -> list[Path]:
    """Remove the temporary files write_atomic left under `folder` in processes that are gone (a
    kill -9 skips its clean-up); a live process's are left alone. Returns those removed."""
    removed = []
    for p in Path(folder).rglob(".*.tmp"):
        m = TEMP_NAME.match(p.name)
        if m and p.is_file() and not pid_alive(int(m.group(1))):
            try:
                p.unlink()
                removed.append(p)
            except FileNotFoundError:  # another run removed it first
                pass
    return removed


def write_atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """Call write(tmp) on a temporary name beside `path`, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def write_parquet_atomic(df, path: Path, **kwargs) -> Path:
    return write_atomic(path, lambda tmp: df.to_parquet(tmp, index=False, **kwargs))


def write_json_atomic(obj, path: Path) -> Path:
    return write_atomic(path, lambda tmp: tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8"))


def neutralise_cell(value):
    """A text cell a spreadsheet would run as a formula, made text ('=1+1' -> "'=1+1"); numbers and
    other values unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


# ------------------------------------------------------------------------------ every CSV the app offers
# One writer for them all (Explore's downloads, Score a file's results, tokens and summary): text cells
# and column names neutralised (neutralise_cell; numbers stay numbers), lines ended by CRLF so that a
# cell holding a CR or LF, a quote or a comma is quoted (the csv module quotes a cell containing any
# character of its line terminator), UTF-8 with a BOM so that a spreadsheet reads it as UTF-8.
CSV_ENCODING = "utf-8-sig"


def neutralised(df):
    """A copy of ``df`` whose text cells and column names a spreadsheet cannot run as formulas."""
    import pandas as pd

    safe = df.copy()
    for col in safe.columns:
        if safe[col].dtype == object or pd.api.types.is_string_dtype(safe[col]):
            safe[col] = safe[col].map(neutralise_cell)
    safe.columns = [neutralise_cell(c) for c in safe.columns]
    return safe


def csv_text(df) -> str:
    """``df`` as CSV text, formula cells neutralised, CRLF line ends, no index; rows in = rows out."""
    import io

    buf = io.StringIO(newline="")  # the csv module ends its own lines
    neutralised(df).to_csv(buf, index=False, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    return buf.getvalue()


def rows_csv_text(rows, columns) -> str:
    """Rows (dicts) as CSV text under the same rules as csv_text, for a table built row by row
    (values written as the csv module writes them: no pandas dtype coercion)."""
    import io

    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow([neutralise_cell(c) for c in columns])
    for row in rows:
        writer.writerow([neutralise_cell(row.get(c, "")) for c in columns])
    return buf.getvalue()


def csv_bytes(df) -> bytes:
    """What a CSV file the app offers holds: csv_text(df) in UTF-8 with a BOM."""
    return csv_text(df).encode(CSV_ENCODING)


def write_csv_atomic(df, path: Path, data: bytes | None = None) -> Path:
    """A CSV safe to open in a spreadsheet (csv_bytes), written atomically; ``data``: csv_bytes(df)
    when the caller has it already."""
    data = csv_bytes(df) if data is None else data
    return write_atomic(path, lambda tmp: tmp.write_bytes(data))
