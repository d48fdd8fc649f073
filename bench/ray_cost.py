"""Pairs a second of the benchmark runner on Ray: run_benchmark_ray (what `accapp bench --ray` runs) on the first
pairs of one BLiMP paradigm, every method, its default block size, on a local Ray of its own.

    python bench/ray_cost.py                                        # 96 pairs, one worker of one CPU, SmolLM2
    python bench/ray_cost.py --model <folder> --pairs 384 --workers 2

The workers load the model as the run starts; that start (the summary's startup_seconds: Ray's workers begun,
the first model loaded) is left out of the figures, and so are the other workers' loads only as far as they
overlap it. The script uses only run_benchmark_ray's public call, so it runs unchanged on an older tree: copy it
into that tree's bench/ and run it there with PYTHONPATH set to that tree (the local Ray's workers take the
driver's environment; the JSON line names the file the workers imported accapp from).

The last line printed is one JSON object: pairs, blocks, workers, wall_s (the run less its start), startup_s,
pairs_per_s, ms_per_pair, the tree's commit and the workers' accapp file.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from host_cost import MODEL, commit  # noqa: E402  (bench/host_cost.py; it puts the tree on sys.path)

PARADIGM = "adjunct_island"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=96)
    ap.add_argument("--methods", default=None, help="comma-separated method ids (default: every method)")
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--cpus-per-worker", type=int, default=1, help="each worker's CPU slots, and its torch threads")
    args = ap.parse_args()
    methods = args.methods.split(",") if args.methods else None

    import ray

    from accapp.runner.ray_runner import run_benchmark_ray

    ray.init(num_cpus=args.workers * args.cpus_per_worker, include_dashboard=False, log_to_driver=False)
    try:
        where = ray.get(ray.remote(lambda: __import__("accapp").__file__).remote())
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            summary = run_benchmark_ray({"model": args.model}, "blimp", methods, Path(tmp), per_paradigm=args.pairs,
                                        paradigms=[PARADIGM], workers=args.workers,
                                        cpus_per_worker=args.cpus_per_worker, progress=True)
            wall = time.perf_counter() - t0 - summary["startup_seconds"]
    finally:
        ray.shutdown()
    n = summary["pairs_scored"]
    print(json.dumps({"model": args.model, "pairs": n, "blocks": summary["blocks"], "workers": summary["workers"],
                      "cpus_per_worker": args.cpus_per_worker, "wall_s": round(wall, 2),
                      "startup_s": round(summary["startup_seconds"], 2), "pairs_per_s": round(n / wall, 2),
                      "ms_per_pair": round(1000 * wall / n, 2), "commit": commit(), "workers_accapp": where}))


if __name__ == "__main__":
    main()
