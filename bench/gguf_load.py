"""How long a GGUF file takes to load: build_engine(<the .gguf path>) on one thread, in a fresh process
(the embedded models' own GGUF files, as a researcher's file would load).

    python bench/gguf_load.py                                  # both embedded models, this tree
    python bench/gguf_load.py --tree . --tree ../wt-base       # each tree in turn, twice
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def child(model_id: str) -> None:
    import torch

    torch.set_num_threads(1)
    from accapp.engine import build_engine
    from accapp.models import get_spec
    from accapp.models.loading import _gguf_path

    path = str(_gguf_path(get_spec(model_id)))
    start = time.perf_counter()
    build_engine(path)
    print(f"{time.perf_counter() - start:.2f}")


def timed(tree: Path, model_id: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree), "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", model_id], cwd=tree, env=env,
                          capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", action="append", default=None, help="a checkout to time (repeatable; default this one)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    trees = [Path(t).resolve() for t in (args.tree or [str(ROOT)])]
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; seconds to build an engine from the GGUF file")
    for model_id in args.models.split(","):
        for _ in range(args.repeats):
            for tree in trees:  # alternating: the machine's drift falls on each tree alike
                print(f"  {model_id:24s} {tree.name:12s} {timed(tree, model_id):6.2f} s", flush=True)


if __name__ == "__main__":
    main()
