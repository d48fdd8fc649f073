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


def matmul_speed(m: int, k: int, n: int, runs: int, warmup: int) -> tuple[float, float]:
    """Seconds for `runs` float32 products (m x k) @ (k x n) on torch's current threads, after `warmup`
    untimed ones (the kernels' first calls), and the GFLOP/s they make."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    for _ in range(warmup):
        a @ b
    start = time.perf_counter()
    for _ in range(runs):
        a @ b
    seconds = time.perf_counter() - start
    return seconds, runs * 2 * m * k * n / seconds / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the tests' workers run one thread each
    seconds, gflops = matmul_speed(256, 576, 1536, args.runs, warmup=20)
    print(cpu_name())
    print(json.dumps({"runs": args.runs, "seconds": round(seconds, 2), "gflop_per_s": round(gflops, 1)}))


if __name__ == "__main__":
    main()
