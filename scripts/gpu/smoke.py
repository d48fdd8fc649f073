"""The CUDA path in one minute, before real weights arrive (issue 32; docs/gpu.md, call 1).

A tiny random Llama with SmolLM2's real tokenizer and chat template (tests/tiny_models.py) is
saved to a folder and loaded back through the project's loader (load_weights) on the CPU in
fp32 and on CUDA in fp32, bf16, fp16 and, where bitsandbytes is installed, 4-bit NF4; every
causal method runs through the engine on 8 BLiMP pairs, and each setting is compared with the
CPU's fp32 scores. A crash anywhere in the GPU path shows here with its traceback. CUDA fp32 must
agree with the CPU within 1e-3; the others are reported.

    ACCAPP_CACHE=DIR python3 scripts/gpu/smoke.py      # DIR/tokenizers/smollm2-135m-instruct: the tokenizer
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import torch  # noqa: E402
from tiny_models import LLAMA_CONFIG, LLAMA_ID, _init_weights, tokenizer_for  # noqa: E402

from accapp.benchmarks import load_benchmark, stratified_sample  # noqa: E402
from accapp.engine import build_engine  # noqa: E402
from accapp.methods import method_ids  # noqa: E402
from accapp.models import get_spec  # noqa: E402
from accapp.models.cpu_speedups import speed_up_on_cpu  # noqa: E402
from accapp.models.loading import LoadedModel, load_weights  # noqa: E402
from accapp.scoring.api import Pair  # noqa: E402


def save_tiny(folder: Path) -> None:
    from transformers import AutoModelForCausalLM, LlamaConfig

    with torch.random.fork_rng(devices=[]):
        model = AutoModelForCausalLM.from_config(LlamaConfig(**LLAMA_CONFIG), dtype=torch.float32)
    _init_weights(model, "llama", seed=1)
    model.save_pretrained(folder)
    tokenizer_for(LLAMA_ID).save_pretrained(folder)


def scores(folder: Path, device: str, dtype: str, quant: str | None, pairs) -> dict:
    from transformers import AutoModelForCausalLM

    spec = get_spec(LLAMA_ID)
    model, tok = load_weights(AutoModelForCausalLM, spec, str(folder), dtype, quant, device)
    if device == "cpu":
        speed_up_on_cpu(model)
    lm = LoadedModel(spec, model, tok, device, dtype, quant, int(tok.convert_tokens_to_ids(spec.start_token)))
    engine = build_engine(LLAMA_ID, lm=lm)
    t = time.perf_counter()
    results = engine.score_pairs(pairs, method_ids("causal"))
    if device == "cuda":
        torch.cuda.synchronize()
    took = time.perf_counter() - t
    out = {(i, s.method, s.template, s.variant): (s.score_good, s.score_bad, s.verdict)
           for i, r in enumerate(results) for s in r.scores}
    print(f"  {device}-{dtype}{'-' + quant if quant else ''}: {len(out)} scores in {took:.2f} s; batch_size "
          f"{engine.scorer.batch_size}, head rows {engine.scorer.head_chunk_rows}", flush=True)
    return out


def main() -> None:
    df = stratified_sample(load_benchmark("blimp"), 1, seed=0).head(8)
    pairs = [Pair(g, b) for g, b in zip(df.good, df.bad)]
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: a dry run of this script here
    settings = [(dev, "fp32", None), (dev, "bf16", None)] + ([(dev, "fp16", None)] if dev == "cuda" else [])
    if importlib.util.find_spec("bitsandbytes"):
        settings.append((dev, "fp32", "nf4"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        save_tiny(folder)
        ref = scores(folder, "cpu", "fp32", None, pairs)
        worst = {}
        for device, dtype, quant in settings:
            got = scores(folder, device, dtype, quant, pairs)
            diff = max(max(abs(ref[k][0] - got[k][0]), abs(ref[k][1] - got[k][1])) for k in ref)
            flips = sum(ref[k][2] != got[k][2] for k in ref)
            worst[f"{device}-{dtype}{'-' + quant if quant else ''}"] = diff
            print(f"    vs cpu-fp32: largest difference {diff:.2e}, verdicts changed {flips} of {len(ref)}", flush=True)
    ok = worst[f"{dev}-fp32"] <= 1e-3
    print(f"smoke: {dev} fp32 {'agrees' if ok else 'DOES NOT agree'} with CPU fp32 within 1e-3 ({worst[f'{dev}-fp32']:.2e})")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
