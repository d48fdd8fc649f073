"""The model's time for probes scored together, in process: what AppState.probe_stage pays when
several visitors' probes wait for the same model (issue 22).

For 1, 2, 4, 8 and 10 probes of different BLiMP pairs (LP only, like the load test), with and
without the word view (surprisal by word needs each position's word-boundary mass), prints the
wall and CPU seconds of one `service.probe.probe_stages` call, whole and per probe (median of
--repeats, warm).

    python bench/probe_batch.py --repeats 8
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--methods", default="lp")
    args = ap.parse_args()
    import torch

    from accapp.benchmarks import load_benchmark
    from accapp.engine import build_engine
    from accapp.service.probe import probe_stages

    engine = build_engine(args.model)
    pairs = load_benchmark("blimp").sample(10, random_state=0)
    pairs = list(zip(pairs.good, pairs.bad))
    methods = args.methods.split(",")
    print(f"{args.model} · methods {args.methods} · {torch.get_num_threads()} threads · median of {args.repeats}")
    for words in (False, True):
        for n in (1, 2, 4, 8, 10):
            items = [(good, bad, methods, words) for good, bad in pairs[:n]]
            probe_stages(engine, items)  # warm: first-use costs of these lengths
            walls, cpus = [], []
            for _ in range(args.repeats):
                w, c = time.perf_counter(), time.process_time()
                probe_stages(engine, items)
                walls.append(time.perf_counter() - w)
                cpus.append(time.process_time() - c)
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            print(f"  words {'yes' if words else 'no '} · {n:2d} probes: wall {wall:.3f} s ({wall / n:.3f} s a probe), "
                  f"CPU {cpu:.3f} s ({cpu / n:.3f} s a probe)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
