"""Speed and memory of the engine, side by side in one run on the same BLiMP pairs.

    python bench/perf.py --pairs 500

Measures pairs per second and peak memory for: our LP only; our full method set (every
template) packed as token trees (the default), a string a row, and without prefix sharing;
the probe's case (one new pair at a time, full method set, warm, one pair from each paradigm, with
the time its matrix products alone would take at the measured matmul rate, and interleaved with
it the same without accapp/models/cpu_speedups.py); a naive baseline (one forward pass per string,
full logits, accapp.scoring.naive); minicons' IncrementalLMScorer for LP and in-template LP
(summed log-probs, the same start token), when minicons is installed; and the ratio of the
model FLOP/s we achieve to a dense fp32 matmul's FLOP/s measured here and now.
The naive full method set takes ~10 s a pair on a laptop CPU, so it runs on --naive-pairs
pairs (its per-pair cost does not depend on how many pairs there are).
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from machine_speed import matmul_speed  # noqa: E402  (bench/machine_speed.py)
from typical import TARGET_S, spread, typical_pairs  # noqa: E402  (bench/typical.py)

from accapp.benchmarks import load_benchmark, stratified_sample  # noqa: E402
from accapp.engine import Engine  # noqa: E402
from accapp.methods import method_ids  # noqa: E402
from accapp.models.cpu_speedups import without_cpu_speedups  # noqa: E402
from accapp.models.loading import load_model  # noqa: E402
from accapp.models.release import resident_mb  # noqa: E402
from accapp.scoring.api import Pair  # noqa: E402
from accapp.scoring.causal import CausalScorer  # noqa: E402
from accapp.scoring.naive import NaiveScorer  # noqa: E402


def reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_mb() -> float:
    return resident_mb("VmHWM")


def rss_mb() -> float:
    return resident_mb("VmRSS")


def timed(fn):
    base = rss_mb()
    reset_peak()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    return out, seconds, peak_mb() - base


def matmul_gflops(n: int = 2048, reps: int = 10) -> float:
    return matmul_speed(n, n, n, reps, warmup=2)[1]


def model_flops(lm, stats: dict) -> float:
    emb = lm.model.get_input_embeddings().weight
    decoder_params = sum(p.numel() for p in lm.model.base_model.parameters()) - emb.numel()
    head = lm.model.get_output_embeddings().weight
    return 2 * decoder_params * stats["decoder_tokens"] + 2 * head.numel() * stats["head_rows"]


def minicons_runs(lm, pairs, template: str):
    try:
        from minicons import scorer as mc
    except ImportError:
        return None
    s = mc.IncrementalLMScorer(lm.model, device="cpu", tokenizer=lm.tokenizer)
    start = lm.tokenizer.convert_ids_to_tokens(lm.start_id)

    def lp():
        texts = [start + x for p in pairs for x in (p.good, p.bad)]
        out = []
        for i in range(0, len(texts), 32):
            out += s.sequence_score(texts[i : i + 32], reduction=lambda x: x.sum(0).item(), bos_token=False)
        return out

    def in_template():
        texts = [start + template + x for p in pairs for x in (p.good, p.bad)]
        out = []
        for i in range(0, len(texts), 32):
            out += s.sequence_score(texts[i : i + 32], reduction=lambda x: x.sum(0).item(), bos_token=False)
        return out

    return lp, in_template


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=500)
    ap.add_argument("--naive-pairs", type=int, default=10)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--probe-pairs", type=int, default=67,
                    help="pairs scored one at a time for the probe figure (one a paradigm; BLiMP has 67)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: lp,full,nopack,probe,plain,noshare,naive,minicons")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    skip = set(filter(None, args.skip.split(",")))
    lm = load_model(args.model)
    blimp = load_benchmark("blimp")
    df = stratified_sample(blimp, max(1, -(-args.pairs // 67)), seed=0).head(args.pairs)
    pairs = [Pair(g, b) for g, b in zip(df.good, df.bad)]
    full = method_ids("causal")
    print(f"model {args.model}, {len(pairs)} BLiMP pairs, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; memory = peak RSS above the start of each run")
    gflops = matmul_gflops()
    print(f"dense fp32 matmul (2048x2048): {gflops:.1f} GFLOP/s")
    rows, report = [], {"pairs": len(pairs), "matmul_gflops": round(gflops, 1)}

    def record(name, n, seconds, mem, extra=""):
        rate = n / seconds
        rows.append((name, n, rate, mem))
        print(f"{name:34} {n:5d} pairs {seconds:9.1f} s {rate:9.3f} pairs/s  peak +{mem:7.1f} MB {extra}")
        return rate

    Engine(CausalScorer(lm)).score_pairs(pairs[:2], full)  # warm up (unigram table, caches of torch)
    if "lp" not in skip:
        sc = CausalScorer(lm, batch_size=args.batch_size)
        _, t, m = timed(lambda: Engine(sc).score_pairs(pairs, ["lp"]))
        report["lp_pairs_per_s"] = record("ours: LP", len(pairs), t, m)

    if "full" not in skip:
        sc = CausalScorer(lm, batch_size=args.batch_size)
        _, t, m = timed(lambda: Engine(sc).score_pairs(pairs, full))
        achieved = model_flops(lm, sc.stats) / t / 1e9
        report["full_pairs_per_s"] = record("ours: full method set", len(pairs), t, m, f"({achieved:.1f} GFLOP/s model work)")
        report["achieved_gflops_full"] = round(achieved, 1)
        report["fraction_of_matmul"] = round(achieved / gflops, 3)
        print(f"  model work: {sc.stats['decoder_tokens']} decoder tokens, {sc.stats['head_rows']} vocabulary projections; "
              f"{achieved:.1f} GFLOP/s = {achieved / gflops:.0%} of the matmul limit")

    if "nopack" not in skip:
        sc = CausalScorer(lm, batch_size=args.batch_size, pack=False)
        _, t, m = timed(lambda: Engine(sc).score_pairs(pairs, full))
        report["full_nopack_pairs_per_s"] = record("ours: full set, a string a row", len(pairs), t, m,
                                                   f"({sc.stats['decoder_tokens']} decoder tokens)")

    # The probe: one new pair at a time, warm (one other pair first: caches and torch warmed up),
    # one pair from each paradigm (the first of its seeded sample): what "a typical pair" means here.
    if "probe" not in skip:
        sc = CausalScorer(lm, batch_size=args.batch_size)
        eng = Engine(sc)
        eng.score_pairs(pairs[-1:], full)
        probe_times, plain_times, floors, tokens = [], [], [], []
        for i, (g, b) in enumerate(typical_pairs(args.probe_pairs, blimp)):
            # Without the CPU speed-ups too (unless skipped), in alternating order: same pair, same moment.
            runs = [False] if "plain" in skip else [False, True] if i % 2 == 0 else [True, False]
            for plain in runs:
                with without_cpu_speedups(lm.model) if plain else contextlib.nullcontext():
                    before = dict(sc.stats)
                    t0 = time.perf_counter()
                    eng.score_pairs([Pair(g, b)], full)
                    seconds = time.perf_counter() - t0
                if plain:
                    plain_times.append(seconds)
                    continue
                probe_times.append(seconds)
                work = {k: sc.stats[k] - before[k] for k in sc.stats}
                tokens.append(work["decoder_tokens"])
                floors.append(model_flops(lm, work) / gflops / 1e9)  # its matrix products alone at the matmul rate
        probe = spread(probe_times)
        report.update({
            "probe_engine_median_s": probe["median_s"], "probe_engine_p90_s": probe["p90_s"],
            "probe_engine_max_s": probe["max_s"], "probe_share_within_2s": probe["share_within_2s"],
            "probe_matmul_floor_median_s": round(statistics.median(floors), 3),
            "probe_share_floor_above_2s": round(sum(f > TARGET_S for f in floors) / len(floors), 3),
            "probe_decoder_tokens_median": statistics.median(tokens),
        })
        print(f"{'ours: probe, one pair, full set':34} {len(probe_times):5d} pairs (one a paradigm) in the engine: "
              f"median {probe['median_s']:.2f} s, 90th percentile {probe['p90_s']:.2f} s, max {probe['max_s']:.2f} s, "
              f"{probe['share_within_2s']:.0%} within 2 s")
        if plain_times:
            base = spread(plain_times)
            paired = statistics.median(p / f for p, f in zip(plain_times, probe_times))
            report.update({"probe_plain_median_s": base["median_s"], "probe_plain_share_within_2s": base["share_within_2s"],
                           "probe_cpu_speedup_paired_median": round(paired, 3)})
            print(f"{'  the same without CPU speed-ups':34} {len(plain_times):5d} pairs, interleaved: median {base['median_s']:.2f} s, "
                  f"90th percentile {base['p90_s']:.2f} s, {base['share_within_2s']:.0%} within 2 s; "
                  f"per pair the speed-ups take {1 - 1 / paired:.1%} off (median) (accapp/models/cpu_speedups.py)")
        print(f"  a probe's model work: median {statistics.median(tokens):.0f} decoder tokens; its matrix products alone at "
              f"this run's matmul rate take {statistics.median(floors):.2f} s (median; min {min(floors):.2f}, max {max(floors):.2f}; "
              f"over 2 s for {report['probe_share_floor_above_2s']:.0%} of the pairs)")

    if "noshare" not in skip:
        sc = CausalScorer(lm, batch_size=args.batch_size, share_prefix=False)
        _, t, m = timed(lambda: Engine(sc).score_pairs(pairs, full))
        report["full_noshare_pairs_per_s"] = record("ours: full set, no prefix sharing", len(pairs), t, m)

    if "naive" not in skip:
        sub = pairs[: args.naive_pairs]
        _, t, m = timed(lambda: Engine(NaiveScorer(lm)).score_pairs(sub, ["lp"]))
        report["naive_lp_pairs_per_s"] = record("naive: LP", len(sub), t, m)
        _, t, m = timed(lambda: Engine(NaiveScorer(lm)).score_pairs(sub, full))
        report["naive_full_pairs_per_s"] = record("naive: full method set", len(sub), t, m)
        if "full_pairs_per_s" in report:
            report["full_vs_naive"] = round(report["full_pairs_per_s"] / report["naive_full_pairs_per_s"], 2)

    runs = None if "minicons" in skip else minicons_runs(lm, pairs, "The following sentence is grammatically acceptable.\n\n")
    if runs:
        lp_fn, tpl_fn = runs
        _, t, m = timed(lp_fn)
        report["minicons_lp_pairs_per_s"] = record("minicons: LP", len(pairs), t, m)
        _, t, m = timed(tpl_fn)
        report["minicons_in_template_lp_1_pairs_per_s"] = record("minicons: in-template LP, 1 template", len(pairs), t, m)
        sc = CausalScorer(lm, batch_size=args.batch_size)
        _, t, m = timed(lambda: Engine(sc).score_pairs(pairs, ["in_template_lp"]))
        record("ours: in-template LP, 5 templates", len(pairs), t, m)
        if "lp_pairs_per_s" in report:
            report["lp_vs_minicons"] = round(report["lp_pairs_per_s"] / report["minicons_lp_pairs_per_s"], 2)
    elif "minicons" not in skip:
        print("minicons is not installed (pip install minicons==0.3.39): its rows are skipped")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
