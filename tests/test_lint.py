"""The project passes its linter (ruff, configured in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff")
    cmd = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    out = subprocess.run([*cmd, "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_the_app_logs_through_logging():
    """print is for the command line's own output (cli/, report, settings' table); everything else logs
    through `logging` (accapp/logs.py), so the app's lines share one format and level."""
    allowed = {"accapp/analysis/report.py", "accapp/settings.py"}
    printing = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "accapp").rglob("*.py")
                      if "print(" in p.read_text(encoding="utf-8") and p.relative_to(ROOT).parts[1] != "cli")
    assert set(printing) <= allowed, set(printing) - allowed
