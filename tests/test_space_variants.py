"""The three Space variants (issue 31): each one's README front matter parses as a valid Space
configuration for the SDK it names, with the files that SDK reads, and the project as committed is
the CPU variant (scripts/space_variant.py; README "Space variants")."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import space_variant  # noqa: E402

FILES = ["README.md", "app.py", "app_zerogpu.py", "requirements.txt", "requirements-zerogpu.txt",
         "requirements-nodeps.txt", "Dockerfile", "Dockerfile.cuda"]
# ZeroGPU's documentation lists the torch releases it supports (huggingface.co/docs/hub/spaces-zerogpu)
ZEROGPU_TORCH = {"2.1.0", "2.1.1", "2.1.2", "2.2.0", "2.2.2", "2.4.0", "2.5.1", "2.6.0", "2.7.1", "2.8.0"}


def pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "-")):
            name, _, version = line.partition("==")
            out[name] = version
    return out


def space_copy(tmp_path: Path, variant: str) -> Path:
    """A copy of the project's files a Space reads, turned into the variant by the script."""
    into = tmp_path / variant
    into.mkdir()
    for name in FILES:
        shutil.copyfile(ROOT / name, into / name)
    space_variant.apply(variant, into)
    return into


def config(into: Path) -> dict:
    """The README front matter as the hub reads it (huggingface_hub's SpaceCard)."""
    from huggingface_hub import SpaceCard

    card = SpaceCard.load(into / "README.md", repo_type="space")
    return card.data.to_dict()


def check_common(cfg: dict, into: Path) -> None:
    from huggingface_hub import SpaceHardware

    assert cfg["title"] == "Acceptability Explorer" and cfg["license"] == "apache-2.0"
    assert cfg["colorFrom"] in {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}
    assert len(cfg["short_description"]) <= 60
    hardware = cfg.get("suggested_hardware")
    assert hardware is None or hardware in {h.value for h in SpaceHardware}
    assert (into / "README.md").read_text(encoding="utf-8").split("---\n", 2)[2] == \
           (ROOT / "README.md").read_text(encoding="utf-8").split("---\n", 2)[2]  # the text below is untouched


def test_the_project_as_committed_is_the_cpu_variant():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.startswith(space_variant.front_matter("cpu"))


def test_cpu_variant_is_the_docker_image_on_port_7860(tmp_path):
    into = space_copy(tmp_path, "cpu")
    cfg = config(into)
    check_common(cfg, into)
    assert cfg["sdk"] == "docker" and cfg["app_port"] == 7860 and "app_file" not in cfg
    assert cfg.get("suggested_hardware") in (None, "cpu-basic", "cpu-upgrade")
    assert (into / "Dockerfile").read_bytes() == (ROOT / "Dockerfile").read_bytes()
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in (into / "Dockerfile").read_text()


def test_docker_gpu_variant_builds_the_cuda_image(tmp_path):
    into = space_copy(tmp_path, "docker-gpu")
    cfg = config(into)
    check_common(cfg, into)
    assert cfg["sdk"] == "docker" and cfg["app_port"] == 7860
    assert cfg["suggested_hardware"] in {"a10g-small", "a10g-large", "l4x1", "l40sx1", "a100-large"}  # 24 GB or more
    dockerfile = (into / "Dockerfile").read_text(encoding="utf-8")
    assert dockerfile == (ROOT / "Dockerfile.cuda").read_text(encoding="utf-8")
    assert re.search(r"EXPOSE 7860\n", dockerfile) and "/whl/cu" in dockerfile
    assert (into / "requirements.txt").read_bytes() == (ROOT / "requirements.txt").read_bytes()


def test_zerogpu_variant_is_a_gradio_space_with_cuda_torch_and_spaces(tmp_path):
    into = space_copy(tmp_path, "zerogpu")
    cfg = config(into)
    check_common(cfg, into)
    assert cfg["sdk"] == "gradio" and "app_port" not in cfg
    assert cfg["suggested_hardware"] == "zero-a10g"  # the hub's name for ZeroGPU hardware
    assert (into / cfg["app_file"]).is_file() and cfg["app_file"] == "app_zerogpu.py"
    req = pins(into / "requirements.txt")
    assert cfg["sdk_version"] == req["gradio"]  # the SDK's Gradio is the one the app is pinned to
    assert tuple(int(x) for x in str(cfg["python_version"]).split(".")[:2]) >= (3, 11)  # transformers 5 needs it
    assert req["torch"] in ZEROGPU_TORCH and "spaces" in req
    assert tuple(int(x) for x in req["bitsandbytes"].split(".")[:2]) >= (0, 46)  # ZeroGPU without legacy patches


def test_zerogpu_requirements_keep_the_projects_pins():
    cpu, zero = pins(ROOT / "requirements.txt"), pins(ROOT / "requirements-zerogpu.txt")
    assert {k: v for k, v in zero.items() if k not in ("torch", "spaces")} == {k: v for k, v in cpu.items() if k != "torch"}
    assert zero["spaces"] == pins(ROOT / "requirements-dev.txt")["spaces"]


def test_the_zerogpu_app_file_imports_spaces_first_and_installs_what_needs_no_deps():
    source = (ROOT / "app_zerogpu.py").read_text(encoding="utf-8")
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports[0] == "from __future__ import annotations"
    first_accapp = next(line for line in imports if "accapp" in line)
    assert first_accapp.startswith("from accapp.service import gpu")
    res = subprocess.run([sys.executable, "-c", "import app_zerogpu; print(app_zerogpu.missing_nodeps())"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stderr  # installed here by scripts/setup.sh


def test_the_script_never_touches_this_working_copy():
    with pytest.raises(SystemExit, match="not this working copy"):
        space_variant.apply("zerogpu", ROOT)
