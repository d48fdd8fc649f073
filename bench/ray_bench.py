"""The benchmark runner's speed: serial against Ray, and the serial runner against the engine's own call.

    python bench/ray_bench.py                       # both parts
    python bench/ray_bench.py --skip ray            # only LP: runner vs engine vs minicons
    python bench/ray_bench.py --per-paradigm 8 --methods lp,mean_lp,pen_lp --block-size 64

Part 1, LP on one thread, same weights, in one run: the engine's own call (Engine.score_pairs on
every pair at once, as bench/perf.py's "ours: LP"), the serial runner (run_benchmark into a fresh
folder: planning, checks, blocks, unit files) and minicons' IncrementalLMScorer (when installed,
`pip install minicons==0.3.39`). Each measurement gets a fresh scorer (no warm encode cache);
the three run interleaved --repeats times and the median pairs/s is reported.

Part 2, on the same sample: the serial runner at 1 thread and at all threads, and Ray with 1 and
2 workers (1 CPU slot = 1 torch thread each) on a local Ray (`ray.init(num_cpus=CPUs)`). Pairs/s
count the scoring only; worker start-up (process, imports, model load) is reported apart. The
overhead per unit and per block is Ray with 1 worker against the serial runner at 1 thread (the
same work on the same thread count): (seconds - serial seconds) / units or blocks. The rows of
every Ray run are checked equal to the 1-thread serial run's, score for score.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd  # noqa: E402
import torch  # noqa: E402

from accapp.benchmarks import load_benchmark, stratified_sample  # noqa: E402
from accapp.engine import Engine, make_scorer  # noqa: E402
from accapp.models.loading import load_model  # noqa: E402
from accapp.runner.runner import run_benchmark  # noqa: E402


def same_rows(a: Path, b: Path) -> bool:
    fa = sorted(p.relative_to(a) for p in a.rglob("*.parquet"))
    fb = sorted(p.relative_to(b) for p in b.rglob("*.parquet"))
    return fa == fb and all(pd.read_parquet(a / f).equals(pd.read_parquet(b / f)) for f in fa)


def part_lp(args, lm, pairs) -> dict:
    torch.set_num_threads(1)
    from perf import minicons_runs  # bench/perf.py: minicons' scorer as perf.py runs it

    mc = minicons_runs(lm, pairs, "")
    Engine(make_scorer(lm)).score_pairs(pairs[:4], ["lp"])  # warm up torch
    runs = {"engine": [], "runner": [], "minicons": []}

    def timed(fn):
        w, c = time.perf_counter(), time.process_time()
        fn()
        return time.perf_counter() - w, time.process_time() - c

    def engine():
        eng = Engine(make_scorer(lm))
        return timed(lambda: eng.score_pairs(pairs, ["lp"]))

    def runner():
        eng = Engine(make_scorer(lm))
        with tempfile.TemporaryDirectory() as d:
            return timed(lambda: run_benchmark(eng, "blimp", ["lp"], Path(d), args.per_paradigm, args.seed, progress=False))

    def minicons():
        return timed(mc[0])

    order = [("engine", engine), ("runner", runner)] + ([("minicons", minicons)] if mc else [])
    cpu = {k: [] for k in runs}
    for rep in range(args.repeats):
        for name, fn in order[rep % len(order):] + order[: rep % len(order)]:  # rotate: no part always first
            wall, used = fn()
            runs[name].append(len(pairs) / wall)
            cpu[name].append(len(pairs) / used)
        print(f"  LP repeat {rep + 1}, pairs/s (wall; CPU time): "
              + ", ".join(f"{k} {v[-1]:.2f}; {cpu[k][-1]:.2f}" for k, v in runs.items() if v), flush=True)
    med = {k: statistics.median(v) for k, v in runs.items() if v}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items() if v}
    print(f"LP, 1 thread, {len(pairs)} BLiMP pairs, median of {args.repeats} interleaved runs, pairs/s by the wall clock "
          f"(and by this process's CPU time, which other processes on the machine do not inflate):")
    for label, m in (("wall", med), ("CPU ", med_cpu)):
        print(f"  {label}: engine call {m['engine']:6.2f}   runner {m['runner']:6.2f} ({m['runner'] / m['engine']:.1%} of the engine)   "
              + (f"minicons {m['minicons']:6.2f}" if "minicons" in m else "minicons: not installed (pip install minicons==0.3.39)"))
    return ({f"lp_{k}_pairs_per_s": round(v, 2) for k, v in med.items()}
            | {f"lp_{k}_cpu_pairs_per_s": round(v, 2) for k, v in med_cpu.items()}
            | {"lp_runner_vs_engine": round(med["runner"] / med["engine"], 3),
               "lp_runner_vs_engine_cpu": round(med_cpu["runner"] / med_cpu["engine"], 3)})


def part_ray(args, lm, n_pairs: int) -> dict:
    import ray

    from accapp.runner.ray_runner import run_benchmark_ray

    methods = args.methods.split(",")
    report = {}
    root = Path(tempfile.mkdtemp(prefix="ray_bench_"))
    rows = []

    def serial(threads):
        torch.set_num_threads(threads)
        out = root / f"serial_{threads}"
        s = run_benchmark(Engine(make_scorer(lm)), "blimp", methods, out, args.per_paradigm, args.seed, progress=False,
                          block_size=args.block_size)
        rows.append((f"serial runner, {threads} thread{'s' * (threads > 1)}", f"serial_{threads}t", s["seconds"], None, s))
        return s

    base = serial(1)
    serial(os.cpu_count() or 2)
    t0 = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    ray_init = time.perf_counter() - t0
    for n in (1, 2):
        out = root / f"ray_{n}"
        s = run_benchmark_ray({"model": args.model}, "blimp", methods, out, args.per_paradigm, args.seed, workers=n,
                              block_size=args.block_size, progress=False)
        assert s["units_failed"] == 0
        s["same_rows"] = same_rows(root / "serial_1", out)
        rows.append((f"Ray, {n} worker{'s' * (n > 1)}", f"ray_{n}w", s["seconds"], s["startup_seconds"], s))
    ray.shutdown()
    units, blocks = base["units_written"], base["blocks"]
    print(f"\n{n_pairs} BLiMP pairs, methods {args.methods}, {units} units, {blocks} blocks of <= {args.block_size} pairs; "
          f"ray.init {ray_init:.1f} s")
    print(f"{'':28} {'scoring s':>10} {'pairs/s':>8} {'start-up s':>11} {'pairs/s with start-up':>22}  rows = serial 1 thread")
    for name, key, sec, startup, s in rows:
        with_start = n_pairs / (sec + startup) if startup is not None else n_pairs / sec
        print(f"{name:28} {sec:10.1f} {n_pairs / sec:8.2f} {startup if startup is not None else 0:11.1f} {with_start:22.2f}  "
              + ("" if startup is None else "yes" if s["same_rows"] else "NO"))
        report[f"{key}_pairs_per_s"] = round(n_pairs / sec, 2)
        if startup is not None:
            report[f"{key}_startup_s"] = round(startup, 1)
            report[f"{key}_same_rows"] = s["same_rows"]
    ray1 = next(s for _, key, _, _, s in rows if key == "ray_1w")
    extra = ray1["seconds"] - base["seconds"]
    report.update({"units": units, "blocks": blocks, "ray_init_s": round(ray_init, 1),
                   "ray_overhead_per_unit_ms": round(1000 * extra / units, 1),
                   "ray_overhead_per_block_ms": round(1000 * extra / blocks, 1)})
    print(f"Ray's overhead (1 worker against the serial runner, both 1 thread): {extra:+.1f} s over the run, "
          f"{1000 * extra / units:+.1f} ms a unit, {1000 * extra / blocks:+.1f} ms a block; "
          f"start-up (ray.init + worker and model load) apart")
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--per-paradigm", type=int, default=8, help="BLiMP pairs per paradigm (67 paradigms)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default="lp,mean_lp,pen_lp", help="part 2's methods")
    ap.add_argument("--block-size", type=int, default=64, help="part 2's pairs per block (a Ray task)")
    ap.add_argument("--repeats", type=int, default=3, help="part 1's interleaved repeats")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: lp,ray")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    lm = load_model(args.model)
    df = stratified_sample(load_benchmark("blimp"), args.per_paradigm, args.seed)
    engine = Engine(make_scorer(lm))
    pairs = [engine.check_pair(g, b) for g, b in zip(df.good, df.bad)]
    print(f"model {args.model}, {len(pairs)} BLiMP pairs ({args.per_paradigm} a paradigm, seed {args.seed}), torch "
          f"{torch.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    report = {"pairs": len(pairs)}
    if "lp" not in skip:
        report |= part_lp(args, lm, pairs)
    if "ray" not in skip:
        report |= part_ray(args, lm, len(pairs))
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
