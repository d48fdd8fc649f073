"""How fast this machine multiplies float32 matrices on one thread: the yardstick beside a test suite's time
or a benchmark's figures, which move with the machine (docs/performance.md, "The test suite's time").

    python bench/machine_speed.py             # 2,000 products of 256x576 by 576x1536 (SmolLM2's MLP shape)
    python bench/machine_speed.py --runs 500

Prints the CPU's name and flags that matter (AVX2, AVX-512), then one JSON line: seconds for the runs, GFLOP/s.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch


def cpu_name() -> str:
    """The model name and the vector extensions from /proc/cpuinfo (Linux), else the platform's word."""
    info = Path("/proc/cpuinfo")
    if not info.exists():
        return platform.processor() or platform.machine()
    lines = info.read_text().splitlines()
    name = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    vector = [f for f in ("avx2", "avx512f", "amx_tile") if f in flags]
    return f"{name} ({', '.join(vector) or 'no AVX2'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the tests' workers run one thread each
    a, b = torch.randn(256, 576), torch.randn(576, 1536)
    for _ in range(20):  # warm-up: the kernels' first calls
        a @ b
    start = time.perf_counter()
    for _ in range(args.runs):
        a @ b
    seconds = time.perf_counter() - start
    gflops = args.runs * 2 * 256 * 576 * 1536 / seconds / 1e9
    print(cpu_name())
    print(json.dumps({"runs": args.runs, "seconds": round(seconds, 2), "gflop_per_s": round(gflops, 1)}))


if __name__ == "__main__":
    main()
