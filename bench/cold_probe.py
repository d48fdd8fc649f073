"""A model's first every-method probe against its later ones, in process: the first runs the template
prefixes (26 of them for every method) that later probes find in the cache. What a visitor waits
for after a model loads, and what every fresh engine in the tests pays once.

For each model, in a fresh process per repeat (the prefix cache and the allocator start cold), prints
the wall seconds of the first and of the second probe of a pair with every method, the decoder tokens
and vocabulary-projection rows the first ran, and the median over --repeats. --tree: the checkout whose
accapp is timed (another commit's worktree, for a side-by-side run).

    python bench/cold_probe.py --repeats 3
    python bench/cold_probe.py --repeats 3 --tree ../wt-base
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRS = [("These casseroles disgust Kayla.", "These casseroles disgusts Kayla."),
         ("These dogs disgust Kayla.", "These dogs disgusts Kayla.")]
ONE_RUN = """
import json, sys, time, torch
torch.set_num_threads(int(sys.argv[2]))
from accapp.engine import build_engine
engine = build_engine(sys.argv[1])
pairs = json.loads(sys.argv[3])
out = {}
for name, (good, bad) in zip(("first", "second"), pairs):
    stats = dict(engine.scorer.stats)
    t = time.perf_counter()
    engine.score_pair(good, bad, "all")
    out[name] = time.perf_counter() - t
    if name == "first":
        out["tokens"] = engine.scorer.stats["decoder_tokens"] - stats["decoder_tokens"]
        out["head_rows"] = engine.scorer.stats["head_rows"] - stats["head_rows"]
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="smollm2-135m-instruct,gemma3-270m")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tree", default=str(ROOT), help="the checkout whose accapp is timed")
    args = ap.parse_args()
    tree = Path(args.tree).resolve()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    for model in args.models.split(","):
        runs = []
        for _ in range(args.repeats):
            done = subprocess.run([sys.executable, "-c", ONE_RUN, model, str(args.threads), json.dumps(PAIRS)],
                                  cwd=tree, env=env, capture_output=True, text=True, check=True)
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"{model} ({tree.name}, {args.threads} thread): first probe {med['first']:.2f} s "
              f"({med['tokens']:.0f} decoder tokens, {med['head_rows']:.0f} projection rows), "
              f"second {med['second']:.2f} s; firsts " + ", ".join(f"{r['first']:.2f}" for r in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
