"""The embedded models' safetensors copy (accapp/models/loading.py) built once when several processes
start together on a cold cache, as the whole-benchmark processes on a fresh GPU machine do
(scripts/gpu/device.sh full-start): before the lock, each built its own copy and one's rename
removed the copy another was reading ("No such file ... model.safetensors")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
# Ask for the copy as a run's loading does, and say whether this process built it (dequantized the GGUF).
COPY = """
import hashlib, accapp.models.loading as L
from accapp.models import registry
built = []
build = L._build_copy
L._build_copy = lambda spec, target: (built.append(1), build(spec, target))
where = L._local_copy(registry()["smollm2-135m-instruct"])
print("built" if built else "read", hashlib.sha256((where / "model.safetensors").read_bytes()).hexdigest())
"""


def test_processes_started_together_on_a_cold_cache_build_the_copy_once(tmp_path):
    env = {**os.environ, "ACCAPP_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", COPY], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    said = [out.split() for out, _ in outs]
    assert sorted(s[0] for s in said) == ["built", "read"]
    assert len({s[1] for s in said}) == 1  # the same file for both
    models = tmp_path / "cache" / "models"
    assert [p.name for p in models.iterdir() if not p.name.endswith(".lock")] == ["smollm2-135m-instruct"]  # no temp left
