"""One home for every ACCAPP_* setting (issue 33, part 3): accapp/settings.py lists each with its default
and bounds, the README's table is the one it generates, every name the code or the README mentions is
listed, no module reads one from the environment itself, and the bounds hold. Fast: no model."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from accapp import settings

ROOT = Path(__file__).resolve().parents[1]
CODE = [p for p in (ROOT / "accapp").rglob("*.py")] + [ROOT / "app.py"]
NAME = re.compile(r"ACCAPP_[A-Z0-9_]+")


def test_readme_table_is_the_generated_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("<!-- settings:", 1)[1].split("-->", 1)[1].split("<!-- end settings -->", 1)[0]
    assert table.strip() == settings.markdown_table().strip()


def test_every_name_in_the_code_and_readme_is_listed():
    used = {n for p in CODE for n in NAME.findall(p.read_text(encoding="utf-8"))}
    used |= set(NAME.findall((ROOT / "README.md").read_text(encoding="utf-8")))
    assert used - set(settings.BY_NAME) - set(settings.OLD_NAMES) == set()  # an old name is listed as a setting's
    assert set(settings.BY_NAME) - used == set()  # nothing listed that nothing reads
    assert set(settings.OLD_NAMES) & set(settings.BY_NAME) == set()  # no old name is a setting of its own


def test_an_old_name_is_read_only_through_its_setting(monkeypatch):
    """One knob a meaning: ACCAPP_CONCURRENCY is ACCAPP_PROBE_CONCURRENCY's old name, read (with a
    warning) where the new one is unset, and named by no module but settings.py."""
    import logging

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("accapp.settings").addHandler(handler)
    try:
        monkeypatch.delenv("ACCAPP_PROBE_CONCURRENCY", raising=False)
        monkeypatch.setenv("ACCAPP_CONCURRENCY", "7")
        assert settings.integer("ACCAPP_PROBE_CONCURRENCY") == 7
        assert "ACCAPP_CONCURRENCY is the old name of ACCAPP_PROBE_CONCURRENCY" in records[-1].getMessage()
        monkeypatch.setenv("ACCAPP_PROBE_CONCURRENCY", "3")
        assert settings.integer("ACCAPP_PROBE_CONCURRENCY") == 3  # the new name wins
        monkeypatch.setenv("ACCAPP_CONCURRENCY", "100000")
        monkeypatch.delenv("ACCAPP_PROBE_CONCURRENCY")
        assert settings.integer("ACCAPP_PROBE_CONCURRENCY") == 256  # within the setting's bounds
    finally:
        logging.getLogger("accapp.settings").removeHandler(handler)
    with pytest.raises(KeyError, match="now ACCAPP_PROBE_CONCURRENCY"):
        settings.integer("ACCAPP_CONCURRENCY")
    named = [str(p.relative_to(ROOT)) for p in CODE if p.name != "settings.py"
             and any(old in p.read_text("utf-8") for old in settings.OLD_NAMES)]
    assert named == []


def test_no_module_reads_a_setting_itself():
    direct = re.compile(r"environ(?:\.get\(|\[)\s*[\"']ACCAPP_")
    readers = [str(p.relative_to(ROOT)) for p in CODE if p.name != "settings.py" and direct.search(p.read_text("utf-8"))]
    assert readers == []


def test_bounds_defaults_and_junk(monkeypatch, caplog):
    monkeypatch.setenv("ACCAPP_FILE_QUEUE_MAX", "10000000")
    assert settings.integer("ACCAPP_FILE_QUEUE_MAX") == 1024  # a queue stays bounded
    monkeypatch.setenv("ACCAPP_FILE_QUEUE_MAX", "-5")
    assert settings.integer("ACCAPP_FILE_QUEUE_MAX") == 0
    monkeypatch.setenv("ACCAPP_FILE_QUEUE_MAX", "")
    assert settings.integer("ACCAPP_FILE_QUEUE_MAX") == 8
    monkeypatch.setenv("ACCAPP_PROBE_BATCH", "lots")
    # the app's logger stops propagating once an app was built in this process (ui/app.py: configure_logging)
    monkeypatch.setattr(logging.getLogger("accapp"), "propagate", True)
    with caplog.at_level("WARNING"):
        assert settings.integer("ACCAPP_PROBE_BATCH") == 16
    assert "ACCAPP_PROBE_BATCH='lots' is not a number" in caplog.text
    monkeypatch.setenv("ACCAPP_PRELOAD", "0")
    assert settings.flag("ACCAPP_PRELOAD") is False
    monkeypatch.delenv("ACCAPP_PRELOAD")
    assert settings.flag("ACCAPP_PRELOAD") is True
    with pytest.raises(KeyError):
        settings.text("ACCAPP_NOT_A_SETTING")
