"""Where the benchmark runner's wall time goes: the decoder's forward, the vocabulary projection, writing
the unit files, and the rest of the host's work.

    python bench/runner_cost.py                          # 96 pairs of one BLiMP paradigm, every method, SmolLM2
    python bench/runner_cost.py --pairs 32 --threads 1
    python bench/runner_cost.py --model gemma3-270m --device cuda   # on a GPU (docs/gpu-runbook.md)

Runs accapp.runner.runner.run_benchmark (what `accapp bench` runs) on the first pairs of one paradigm (a
stratified sample, seed 0), every method, its default block size, into a fresh folder, after a warm-up run on
another paradigm (template prefixes, the unigram table and torch's caches warm). One paradigm's pairs over
several blocks is how a whole benchmark runs: each unit gets rows from many blocks. The time is split with
bench/host_cost.py's timing hooks on the model and a timer around BenchmarkRun._write_unit (a unit file read,
merged and written), so the script runs unchanged on an older tree.

Each figure is milliseconds per pair. The last line printed is one JSON object: wall_ms, forward_ms,
projection_ms, write_ms, host_ms (the rest of the wall time), host_cpu_ms (the calling thread's CPU outside
the forward, the projection and the writes), other_threads_cpu_ms, process_cpu_ms (every thread's CPU
outside the forward and the projection: with Python's one interpreter lock, what bounds a process's pairs a
second once the model is fast), writes (unit files written), pairs, threads, the tree's commit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from host_cost import Clock, add_model_args, commit, hooked_engine  # noqa: E402  (bench/host_cost.py; it puts the tree on sys.path)

from accapp.runner import runner  # noqa: E402

PARADIGM = "adjunct_island"
WARM_UP_PARADIGM = "anaphor_gender_agreement"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=96)
    ap.add_argument("--methods", default=None, help="comma-separated method ids (default: every method)")
    add_model_args(ap)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    engine, forward, projection = hooked_engine(args)
    cuda = str(engine.lm.device).startswith("cuda")
    write = Clock()
    unit_write = runner.BenchmarkRun._write_unit

    def timed_write(self, *a, **k):
        write.enter()
        try:
            return unit_write(self, *a, **k)
        finally:
            write.leave()

    runner.BenchmarkRun._write_unit = timed_write

    with tempfile.TemporaryDirectory() as tmp:
        runner.run_benchmark(engine, "blimp", args.methods, Path(tmp) / "warm", per_paradigm=4,
                             paradigms=[WARM_UP_PARADIGM], progress=False)
        for clock in (forward, projection, write):
            clock.reset()
        t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        summary = runner.run_benchmark(engine, "blimp", args.methods, Path(tmp) / "run", per_paradigm=args.pairs,
                                       paradigms=[PARADIGM], progress=True)
        wall, cpu, process = time.perf_counter() - t0, time.thread_time() - c0, time.process_time() - p0
    n = summary["pairs_scored"]
    ms = lambda s: round(1000 * s / n, 3)  # noqa: E731
    model_s, model_cpu = forward.seconds + projection.seconds, forward.cpu + projection.cpu
    out = {"model": args.model, "pairs": n, "blocks": summary["blocks"], "threads": torch.get_num_threads(),
           "commit": commit(), "device": torch.cuda.get_device_name() if cuda else "cpu", "dtype": args.dtype,
           "wall_ms": ms(wall), "forward_ms": ms(forward.seconds), "projection_ms": ms(projection.seconds),
           "write_ms": ms(write.seconds), "host_ms": ms(wall - model_s - write.seconds),
           "host_cpu_ms": ms(cpu - model_cpu - write.cpu), "other_threads_cpu_ms": ms(process - cpu),
           "process_cpu_ms": ms(process - model_cpu), "writes": write.calls,
           "pairs_per_s": round(n / wall, 2)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
