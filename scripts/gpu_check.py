"""GPU path check (issue "The GPU path"): run on a machine with a CUDA GPU.

Builds a causal model of SmolLM2-135M's architecture with random weights (seeded; the real
weights need not travel), saves it with SmolLM2's tokenizer, then loads it fp32 on the CPU
and fp32 / bf16 / 4-bit NF4 (bitsandbytes, double quant, bf16 compute) on CUDA, and:
  - checks that LP, in-template LP and Yes/No scores on 200 BLiMP pairs agree between the
    CPU fp32 and CUDA fp32 runs within 1e-3;
  - reports how far bf16 and NF4 move them (max and mean absolute difference, verdict flips);
  - prints pairs per second for the full method set and peak GPU memory at each setting.

    python scripts/gpu_check.py [--pairs 200] [--tokenizer-dir DIR]

The tokenizer comes from the local SmolLM2 cache (~/.cache/accapp/models/smollm2-135m-instruct)
or --tokenizer-dir. bitsandbytes must be installed there (its manylinux wheel).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from accapp.benchmarks import load_benchmark, stratified_sample  # noqa: E402
from accapp.engine import Engine  # noqa: E402
from accapp.methods import method_ids  # noqa: E402
from accapp.models import get_spec  # noqa: E402
from accapp.models.loading import DTYPES, LoadedModel, _quantization_config, cache_root  # noqa: E402
from accapp.scoring.api import Pair  # noqa: E402
from accapp.scoring.causal import CausalScorer  # noqa: E402

CHECKED = ["lp", "in_template_lp", "yes_no_prob_comp"]


def build_random_model(tokenizer_dir: Path, out: Path) -> None:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(tokenizer_dir)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(out)


def load(where: Path, device: str, dtype: str, quantization: str | None) -> LoadedModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"dtype": DTYPES[dtype]}
    if quantization:
        kwargs.update(quantization_config=_quantization_config(quantization), device_map=device)
    model = AutoModelForCausalLM.from_pretrained(where, **kwargs)
    if not quantization:
        model.to(device)
    model.eval()
    tok = AutoTokenizer.from_pretrained(where)
    spec = get_spec("smollm2-135m-instruct")
    return LoadedModel(spec, model, tok, device, dtype, quantization, tok.convert_tokens_to_ids(spec.start_token))


def scores(results) -> dict:
    out = {}
    for i, res in enumerate(results):
        for r in res.rows:
            out[(i, r["method"], r["template"], r["variant"])] = (r["score_good"], r["score_bad"], r["verdict"])
    return out


def compare(a: dict, b: dict, methods) -> dict:
    keys = [k for k in a if k[1] in methods]
    diffs = np.array([max(abs(a[k][0] - b[k][0]), abs(a[k][1] - b[k][1])) for k in keys])
    flips = sum(a[k][2] != b[k][2] for k in keys)
    return {"max_abs": float(diffs.max()), "mean_abs": float(diffs.mean()), "verdict_flips": int(flips), "n": len(keys)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--tokenizer-dir", default=str(cache_root() / "models" / "smollm2-135m-instruct"))
    ap.add_argument("--batch-size", type=int, default=128)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this script checks the GPU path and needs one")
        raise SystemExit(2)
    df = stratified_sample(load_benchmark("blimp"), 3, seed=0).head(args.pairs)
    pairs = [Pair(g, b) for g, b in zip(df.good, df.bad)]
    full = method_ids("causal")
    print(f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; {len(pairs)} BLiMP pairs")
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        build_random_model(Path(args.tokenizer_dir), where)
        runs, report = {}, {}
        for name, device, dtype, quant in (("cpu-fp32", "cpu", "fp32", None), ("cuda-fp32", "cuda", "fp32", None),
                                           ("cuda-bf16", "cuda", "bf16", None), ("cuda-nf4", "cuda", "fp32", "nf4")):
            lm = load(where, device, dtype, quant)
            engine = Engine(CausalScorer(lm, batch_size=args.batch_size if device == "cuda" else 32), "en")
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            runs[name] = scores(engine.score_pairs(pairs, CHECKED))
            t0 = time.perf_counter()
            n_full = len(pairs) if device == "cuda" else min(20, len(pairs))
            engine.score_pairs(pairs[:n_full], full)
            if device == "cuda":
                torch.cuda.synchronize()
            rate = n_full / (time.perf_counter() - t0)
            mem = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else float("nan")
            report[name] = {"full_pairs_per_s": round(rate, 2), "peak_gpu_mb": round(mem, 1)}
            print(f"{name:10} full method set {rate:8.2f} pairs/s ({n_full} pairs)   peak GPU memory {mem:8.1f} MB")
            del engine, lm
            torch.cuda.empty_cache()
    base = runs["cpu-fp32"]
    for name in ("cuda-fp32", "cuda-bf16", "cuda-nf4"):
        report[name]["vs_cpu_fp32"] = compare(base, runs[name], CHECKED)
        print(f"{name:10} vs cpu-fp32 on {', '.join(CHECKED)}: {report[name]['vs_cpu_fp32']}")
    ok = report["cuda-fp32"]["vs_cpu_fp32"]["max_abs"] < 1e-3
    print("CPU fp32 vs CUDA fp32 agree within 1e-3:", ok)
    print(json.dumps(report))
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
