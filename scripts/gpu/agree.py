"""Agreement, speed and memory of one model in several precisions, through the project's own
loader and engine (issue 32, items 2 and 3; docs/gpu.md has the runs and their figures).

    python scripts/gpu/agree.py --model smollm2-135m-instruct --benchmark blimp --pairs 200 \
        --settings cpu-fp32 --out .gpu/ref                         # here: the CPU reference
    python3 scripts/gpu/agree.py --model smollm2-135m-instruct --benchmark blimp --pairs 200 \
        --settings cuda-fp32,cuda-bf16,cuda-fp16,cuda-nf4 --reference .gpu/ref --out $OUT

For each setting (device-dtype, or device-nf4 for 4-bit NF4 with double quantization and bf16
compute): load the model, then
  - the probe's latency with every method and the word view (accapp.service.probe.probe):
    cold (the first probe after loading) and warm (the next --probes pairs, one at a time);
  - every method on the pairs in one engine call: pairs/s, and the scores written to
    OUT/<model>-<benchmark>-<setting>.parquet;
  - LP alone on the same pairs: pairs/s (median of 3 runs);
  - peak GPU memory (torch.cuda.max_memory_allocated), and the pass size the scorer chose from
    the free GPU memory (accapp/scoring/pass_size.py).
With --reference, each setting's scores are compared with the reference setting's (the CPU fp32
file of the same model and benchmark): the largest absolute difference of any score, per method,
and the number of verdicts that differ. Prints tables; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd  # noqa: E402
import torch  # noqa: E402

from accapp.benchmarks import load_benchmark, stratified_sample  # noqa: E402
from accapp.engine import build_engine  # noqa: E402
from accapp.methods import method_ids  # noqa: E402
from accapp.models.device import describe_device  # noqa: E402
from accapp.models.loading import load_model  # noqa: E402
from accapp.scoring.api import Pair  # noqa: E402
from accapp.service.probe import probe  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agreement import compare, summarize  # noqa: E402 - the GPU scripts are not a package


def sample_pairs(benchmark: str, n: int) -> pd.DataFrame:
    """n pairs spread over every paradigm: the first of each paradigm's seeded sample, then the second, ..."""
    bench = load_benchmark(benchmark)
    per = -(-n // bench.paradigm.nunique())
    df = stratified_sample(bench, per, seed=0)
    df = df.assign(_rank=df.groupby("paradigm").cumcount()).sort_values(["_rank", "paradigm"], kind="stable")
    return df.head(n).drop(columns="_rank").reset_index(drop=True)


def parse_setting(name: str) -> tuple[str, str, str | None]:
    device, precision = name.split("-")
    return (device, "fp32", "nf4") if precision == "nf4" else (device, precision, None)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def rows_of(results) -> pd.DataFrame:
    return pd.DataFrame([{"pair": i, "method": s.method, "template": s.template, "variant": s.variant,
                          "score_good": s.score_good, "score_bad": s.score_bad, "verdict": s.verdict}
                         for i, r in enumerate(results) for s in r.scores])


def run_setting(args, name: str, df: pd.DataFrame, out: Path) -> dict:
    device, dtype, quant = parse_setting(name)
    pairs = [Pair(g, b) for g, b in zip(df.good, df.bad)]
    methods = method_ids("causal")
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    lm = load_model(args.model, dtype, quant, device)
    load_s = time.perf_counter() - t0
    engine = build_engine(args.model, lm=lm, language=args.language)
    size = getattr(engine.scorer, "pass_size", None)
    weights_mb = torch.cuda.memory_allocated() / 2**20 if device == "cuda" else float("nan")
    # The probe: cold is the first after loading; warm, the next pairs one at a time.
    times = []
    for k in range(min(len(pairs), args.probes + 1)):
        t = time.perf_counter()
        probe(engine, pairs[k].good, pairs[k].bad, methods, words=True)
        sync(device)
        times.append(time.perf_counter() - t)
    cold, warm = times[0], times[1:]
    t = time.perf_counter()
    results = engine.score_pairs(pairs, methods)
    sync(device)
    full_s = time.perf_counter() - t
    lp_times = []
    for _ in range(3):
        t = time.perf_counter()
        engine.score_pairs(pairs, ["lp"])
        sync(device)
        lp_times.append(time.perf_counter() - t)
    rows = rows_of(results)
    rows.to_parquet(out / f"{args.model}-{args.benchmark}-{name}.parquet", index=False)
    rep = {
        "setting": name, **describe_device(lm), "load_s": round(load_s, 2),
        "pairs": len(pairs), "methods": len(methods), "score_rows": len(rows),
        "full_pairs_per_s": round(len(pairs) / full_s, 2), "lp_pairs_per_s": round(len(pairs) / statistics.median(lp_times), 1),
        "probe_cold_s": round(cold, 3), "probe_warm_median_s": round(statistics.median(warm), 3) if warm else None,
        "probe_warm_p90_s": round(sorted(warm)[int(0.9 * (len(warm) - 1))], 3) if warm else None,
        "weights_mb": round(weights_mb, 1),
        "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if device == "cuda" else None,
        "batch_size": engine.scorer.batch_size, "head_rows": engine.scorer.head_chunk_rows,
        "free_gpu_mb_at_choice": round(size.free_bytes / 2**20) if size else None,
    }
    print(f"{name}: " + ", ".join(f"{k}={v}" for k, v in rep.items() if k != "setting"), flush=True)
    del engine, lm, results
    if device == "cuda":
        torch.cuda.empty_cache()
    return rep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--benchmark", default="blimp")
    ap.add_argument("--language", default=None)
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--probes", type=int, default=20, help="warm probes timed after the cold one")
    ap.add_argument("--settings", default="cuda-fp32,cuda-bf16,cuda-fp16,cuda-nf4")
    ap.add_argument("--reference", default=None, help="folder holding <model>-<benchmark>-cpu-fp32.parquet")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df = sample_pairs(args.benchmark, args.pairs)
    print(f"{args.model} on {len(df)} {args.benchmark} pairs ({df.paradigm.nunique()} paradigms); torch {torch.__version__}"
          + (f"; {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""), flush=True)
    reports = []
    for name in args.settings.split(","):
        try:
            reports.append(run_setting(args, name, df, out))
        except Exception:  # noqa: BLE001 - one precision failing must not cost the others' figures (GPU time is short)
            import traceback

            traceback.print_exc()
            print(f"{name}: FAILED (traceback above)", flush=True)
    agreement = {}
    if args.reference:
        ref = pd.read_parquet(Path(args.reference) / f"{args.model}-{args.benchmark}-cpu-fp32.parquet")
        for rep in reports:
            if not (out / f"{args.model}-{args.benchmark}-{rep['setting']}.parquet").exists():
                continue
            got = pd.read_parquet(out / f"{args.model}-{args.benchmark}-{rep['setting']}.parquet")
            agreement[rep["setting"]] = summarize(ref, got)
            print(f"\n{rep['setting']} vs cpu-fp32 ({args.model}, {args.benchmark}):")
            print(compare(ref, got).to_string(float_format=lambda v: f"{v:.2e}"))
        fp32 = agreement.get("cuda-fp32")
        if fp32:
            print(f"\nCUDA fp32 vs CPU fp32: largest difference {fp32['max_abs_diff']:.2e} nats "
                  f"({'within' if fp32['max_abs_diff'] <= 1e-3 else 'NOT within'} 1e-3)")
    summary = {"model": args.model, "benchmark": args.benchmark, "settings": reports, "agreement": agreement}
    (out / f"{args.model}-{args.benchmark}-summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "agreement"} | {
        "agreement": {k: {kk: vv for kk, vv in v.items() if kk != "per_method"} for k, v in agreement.items()}}, default=str))


if __name__ == "__main__":
    main()
