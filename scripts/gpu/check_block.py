"""One block of a whole-benchmark run, scored again in one process, to find where two devices disagree.

    python3 scripts/gpu/check_block.py score --model gemma3-270m --benchmark climp --paradigm classifier_clause \
        --block 2 --out cpu.parquet                      # this CPU: the reference
    python3 scripts/gpu/check_block.py score ... --device cuda --batch-size 2048 --head-rows 2195 \
        [--eager | --sdpa-math | --shared-kv] [--no-pack] --out cuda.parquet   # the GPU, as the whole run scored it
    python3 scripts/gpu/check_block.py compare cpu.parquet cuda.parquet

The block is the runner's: the paradigm's pairs in the order `plan_blocks` gives them, cut into equal
blocks of at most --block-size pairs (256, as `device.sh full-start` runs), scored by
`runner.score_block` with every method in one engine call, so a pass packs the same requests as the
whole run's did. --eager: the model's eager attention instead of SDPA; --sdpa-math: SDPA with its plain
math kernel only (no memory-efficient, flash or cuDNN kernel); --shared-kv: transformers' plain SDPA, whose
query heads read a model's one key-value head from the same memory (stride 0), as before the engine copied it
for each head on CUDA (accapp/models/attention.py, pytorch/pytorch#191937); --no-pack: one sequence a row
(no token trees); --history: the paradigm's earlier blocks first, in the same engine, as the run's process
scored them before this one (its caches as they were; their scores are not kept); --batch-size /
--head-rows: the pass and projection sizes (a GPU's come from its
free memory, and the whole run's processes shared it). `compare` prints, per method and template, the
rows that differ by more than 1e-3 and the largest difference.

Why (docs/gpu-record.md): Gemma 3 270M's whole CLiMP on the H200 differed from the CPU on 34 of
12,750 rows of classifier_clause's third block, every one a prompt holding both sentences (A/B and
the comparison prompts), by up to 1.6 nats; the CPU with the GPU's pass size agreed with the CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

KEYS = ["paradigm", "pair_id", "method", "template", "variant"]


def block_items(benchmark: str, paradigm: str, block: int, block_size: int) -> list[tuple]:
    """The runner's block `block` of one paradigm, as runner.plan_blocks orders and cuts it (no unit done yet)."""
    import tempfile

    from accapp.benchmarks import load_benchmark
    from accapp.runner.runner import plan_blocks

    df = load_benchmark(benchmark)
    with tempfile.TemporaryDirectory() as empty:  # a run folder with no unit files: every pair still to score
        blocks, _ = plan_blocks(df[df.paradigm == paradigm], Path(empty), "-", benchmark, {"lp": ["-"]}, block_size)
    return list(blocks[block].items)


def score(args) -> None:
    from accapp.benchmarks import bench_name, language_of
    from accapp.engine import build_engine
    from accapp.methods import ids_for
    from accapp.runner.runner import Block, score_block

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)  # before the minutes of scoring, not after them
    language = language_of(bench_name(args.benchmark))
    engine = build_engine(args.model, args.dtype, device=args.device, batch_size=args.batch_size, language=language)
    scorer = engine.scorer
    if args.head_rows:
        scorer.head_chunk_rows = args.head_rows
    if args.no_pack:
        scorer.pack = False
    if args.eager:
        engine.lm.model.config._attn_implementation = "eager"
    if args.shared_kv:
        engine.lm.model.set_attn_implementation("sdpa")
    if args.sdpa_math:
        import torch

        for kernel in ("flash", "mem_efficient", "cudnn"):
            getattr(torch.backends.cuda, f"enable_{kernel}_sdp")(False)
    items = block_items(args.benchmark, args.paradigm, args.block, args.block_size)
    methods = tuple(ids_for(engine.kind, args.methods))
    for earlier in range(args.block if args.history else 0):
        before = block_items(args.benchmark, args.paradigm, earlier, args.block_size)
        score_block(engine, Block(earlier, methods, tuple(before)), bench_name(args.benchmark), language)
    result = score_block(engine, Block(args.block, methods, tuple(items)), bench_name(args.benchmark), language)
    rows = result.rows[KEYS + ["score_good", "score_bad"]].assign(pair_id=lambda d: d.pair_id.astype(str))
    rows.to_parquet(args.out)
    print(json.dumps({"out": args.out, "rows": len(rows), "pairs": len(items), "seconds": round(result.seconds, 1),
                      "device": str(scorer.device), "batch_size": scorer.batch_size, "head_rows": scorer.head_chunk_rows,
                      "pack": scorer.pack,
                      "attention": engine.lm.model.config._attn_implementation + (" (math kernel)" if args.sdpa_math else ""),
                      "memory_retries": scorer.memory_retries, "history": args.history}))


def compare(a: Path, b: Path) -> dict:
    x, y = pd.read_parquet(a), pd.read_parquet(b)
    both = x.merge(y, on=KEYS, suffixes=("_a", "_b"))
    both["d"] = np.maximum((both.score_good_a - both.score_good_b).abs(), (both.score_bad_a - both.score_bad_b).abs())
    off = both[both.d > 1e-3]
    return {"rows": len(both), "differ": len(off), "largest": float(both.d.max()) if len(both) else None,
            "by_method": {f"{m}/{t}": int(n) for (m, t), n in off.groupby(["method", "template"]).size().items()},
            "pairs": sorted(off.pair_id.unique().tolist(), key=lambda p: (len(p), p))[:40]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("score")
    s.add_argument("--model", required=True)
    s.add_argument("--benchmark", required=True)
    s.add_argument("--paradigm", required=True)
    s.add_argument("--block", type=int, required=True, help="the block's index within the paradigm (0, 1, ...)")
    s.add_argument("--block-size", type=int, default=256)
    s.add_argument("--methods", default="all")
    s.add_argument("--dtype", default="fp32")
    s.add_argument("--device")
    s.add_argument("--batch-size", type=int)
    s.add_argument("--head-rows", type=int)
    s.add_argument("--eager", action="store_true")
    s.add_argument("--sdpa-math", action="store_true")
    s.add_argument("--shared-kv", action="store_true")
    s.add_argument("--history", action="store_true")
    s.add_argument("--no-pack", action="store_true")
    s.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args()
    if args.what == "score":
        score(args)
    else:
        print(json.dumps(compare(Path(args.a), Path(args.b)), indent=1))


if __name__ == "__main__":
    main()
