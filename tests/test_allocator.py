"""`python app.py` restarts itself once on allocators that give an unloaded model's memory back
(accapp.models.release), in place and with its own arguments, and not when told not to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOW = """
import json, os, sys
from accapp.models.release import allocator_in_use, restart_with_returning_allocator
restart_with_returning_allocator()
print(json.dumps({"pid": os.getpid(), "argv": sys.orig_argv[-1], "python": os.environ.get("PYTHONMALLOC"),
                  "preload": os.environ.get("LD_PRELOAD"), "arenas": os.environ.get("MALLOC_ARENA_MAX"),
                  "in_use": allocator_in_use()}))
"""


def run(extra: str = "", **env) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONMALLOC", "LD_PRELOAD", "MALLOC_CONF",
                                                             "MALLOC_ARENA_MAX", "ACCAPP_ALLOCATOR_RESTART")}
    proc = subprocess.Popen([sys.executable, "-c", SHOW, extra], cwd=ROOT, env={**base, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    shown = json.loads(out.strip().splitlines()[-1])
    shown["popen_pid"] = proc.pid
    return shown


@pytest.mark.process  # fresh pythons
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the restart is for glibc Linux only")
def test_restart_puts_python_objects_on_the_c_allocator_in_place():
    import ctypes.util

    shown = run("an argument")
    assert shown["python"] == "malloc"
    assert shown["pid"] == shown["popen_pid"]  # the same process (exec), not a child: a supervisor's pid stays true
    assert shown["argv"] == "an argument"  # its own arguments
    if ctypes.util.find_library("jemalloc"):
        assert shown["preload"] == ctypes.util.find_library("jemalloc") and shown["arenas"] is None
        assert shown["in_use"] == "Python objects: malloc; C: jemalloc"
    else:
        assert shown["preload"] is None and shown["arenas"] == "2"
        assert shown["in_use"] == "Python objects: malloc; C: glibc"


@pytest.mark.process
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the restart is for glibc Linux only")
def test_no_restart_when_turned_off_or_the_user_chose_an_allocator():
    off = run(ACCAPP_ALLOCATOR_RESTART="0")
    assert off["python"] is None and off["preload"] is None and off["in_use"] == "Python objects: pymalloc; C: glibc"
    chosen = run(PYTHONMALLOC="pymalloc")
    assert chosen["python"] == "pymalloc" and chosen["preload"] is None  # theirs, untouched
