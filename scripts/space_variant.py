"""Make a copy of the project into one of the three Hugging Face Space variants (README "Space variants").

    python scripts/space_variant.py zerogpu --into ../my-space      # Gradio SDK on ZeroGPU
    python scripts/space_variant.py docker-gpu --into ../my-space   # Docker SDK on dedicated GPU hardware
    python scripts/space_variant.py cpu --into ../my-space          # Docker SDK on a CPU (the project as it is)

``--into`` is the copy you push to the Space (a clone of the Space's repository holding the project's
files), never your working copy: this project as committed is the CPU variant, and stays so.
A variant is its README front matter (``deploy/space-<variant>.yml``) and, where the SDK reads a file
at a fixed name, that file: ZeroGPU's Gradio SDK installs ``requirements.txt`` (here
``requirements-zerogpu.txt``: CUDA torch, `spaces`); the Docker SDK builds ``Dockerfile`` (here
``Dockerfile.cuda`` for a GPU).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
VARIANTS = {  # variant -> {file in the Space's copy: the project's file it becomes}
    "cpu": {"requirements.txt": "requirements.txt", "Dockerfile": "Dockerfile"},
    "zerogpu": {"requirements.txt": "requirements-zerogpu.txt", "Dockerfile": "Dockerfile"},
    "docker-gpu": {"requirements.txt": "requirements.txt", "Dockerfile": "Dockerfile.cuda"},
}
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


def front_matter(variant: str) -> str:
    """The variant's README front matter, with its --- lines."""
    return "---\n" + (DEPLOY / f"space-{variant}.yml").read_text(encoding="utf-8") + "---\n"


def apply(variant: str, into: Path) -> list[str]:
    """Turn the copy at ``into`` into ``variant``; returns what changed, in words."""
    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}: choose {', '.join(VARIANTS)}")
    into = into.resolve()
    if into == ROOT:
        raise SystemExit("--into is the copy you push to the Space, not this working copy (it stays the CPU variant)")
    readme = into / "README.md"
    text = readme.read_text(encoding="utf-8")
    if not FRONT_MATTER.match(text):
        raise SystemExit(f"{readme} has no front matter (--- ... ---) to replace")
    readme.write_text(FRONT_MATTER.sub(lambda _: front_matter(variant), text, count=1), encoding="utf-8")
    done = [f"README.md front matter: deploy/space-{variant}.yml"]
    for target, source in VARIANTS[variant].items():
        shutil.copyfile(ROOT / source, into / target)
        done.append(f"{target}: {source}")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", choices=sorted(VARIANTS))
    parser.add_argument("--into", type=Path, required=True, help="the Space's copy of the project")
    args = parser.parse_args(argv)
    for line in apply(args.variant, args.into):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
