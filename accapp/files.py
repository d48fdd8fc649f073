"""Writing files so that a killed process never leaves half a file, and safe file names."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path


def safe_name(name: str) -> str:
    """A file-name part made of letters, digits, '-', '_' and '.' only (others become '_')."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name))


def write_atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """Call write(tmp) on a temporary name beside `path`, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
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
