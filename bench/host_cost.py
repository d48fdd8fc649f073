"""Where a run's wall time goes: the decoder's forward, the vocabulary projection, and the host.

    python bench/host_cost.py                       # 200 BLiMP pairs, SmolLM2, LP alone and every method
    python bench/host_cost.py --pairs 20 --threads 1
    python bench/host_cost.py --device cuda --dtype bf16   # on a GPU (docs/gpu-runbook.md)

Scores a seeded sample of BLiMP pairs (bench/perf.py's: a few pairs a paradigm, seed 0) with the
engine, blocks of accapp.public.CHUNK pairs as the Python API sends them (Engine.score_blocks, which
tokenizes the next block on a second thread; on a tree without it, one score_pairs call a block),
first with LP alone, then with every method, after a warm-up on pairs outside the sample (the template
prefixes, the unigram table and torch's caches are then warm, as in any process after its first call).
The time is split with timing hooks only, so the script runs unchanged on an older tree:

- forward: inside the decoder body (a forward pre-hook and hook on the model's ``base_model``);
- projection: inside the vocabulary projection: forward hooks on the output layer (lm_head), and
  around the causal scorer's ``_logprobs_of`` (on a CPU in fp32 the scorer streams the head's weight
  in chunks without calling the module; that call is the whole streamed projection and its
  log-softmax), the outermost of nested calls counted once;
- host: the rest of the wall time (tokenising, rendering prompts, building requests and rows,
  packing, copying results, each method's score).

On CUDA each hook waits for the GPU first (torch.cuda.synchronize), so a kernel still running is counted
where it was launched; the engine waits for every pass's results anyway.

Each figure is milliseconds per pair. The last line printed is one JSON object: lp_host_ms,
all_host_ms, lp_forward_ms, lp_projection_ms, all_forward_ms, all_projection_ms (and the wall
times), pairs, threads, the tree's commit. Beside each host figure, *_host_cpu_ms: the calling
thread's CPU time outside the forward and the projection (the host's work runs on that thread), which
other processes on a busy machine stretch less than the wall time; and other_threads_cpu_ms, the CPU
time of the process's other threads (the pass-ahead thread, the next block's tokenizing, the tokenizer's
own threads), host work moved off the calling thread rather than removed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from accapp.benchmarks import load_benchmark, stratified_sample  # noqa: E402
from accapp.engine import build_engine  # noqa: E402

MODEL = "smollm2-135m-instruct"
CHUNK = 64  # pairs an engine call (accapp.public.CHUNK)
WARM_UP = [("The cat sleeps.", "The cat sleep."), ("Some dogs were barking loudly.", "Some dogs was barking loudly.")]


class Clock:
    """Seconds spent inside one kind of call, the outermost of nested calls counted once."""

    def __init__(self, cuda: bool = False) -> None:
        self.sync = torch.cuda.synchronize if cuda else (lambda: None)  # GPU work ends inside the call it began in
        self.seconds = self.cpu = 0.0
        self.calls = 0
        self._depth = 0
        self._start = self._start_cpu = 0.0

    def enter(self) -> None:
        if self._depth == 0:
            self.sync()
            self._start, self._start_cpu = time.perf_counter(), time.thread_time()
        self._depth += 1

    def leave(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.sync()
            self.seconds += time.perf_counter() - self._start
            self.cpu += time.thread_time() - self._start_cpu
            self.calls += 1

    def reset(self) -> None:
        self.seconds, self.cpu, self.calls = 0.0, 0.0, 0

    def hook_module(self, module: torch.nn.Module) -> None:
        module.register_forward_pre_hook(lambda *_: self.enter())
        module.register_forward_hook(lambda *_: self.leave())

    def wrap(self, owner, name: str) -> None:
        """Time owner.name (a bound method or a callable attribute) on this instance, where it has one."""
        fn = getattr(owner, name, None)
        if fn is None:
            return

        def timed(*args, **kwargs):
            self.enter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()

        setattr(owner, name, timed)


def sample_pairs(n: int) -> list[tuple[str, str]]:
    blimp = load_benchmark("blimp")
    df = stratified_sample(blimp, max(1, -(-n // 67)), seed=0).head(n)
    return list(zip(df["good"], df["bad"]))


def run(engine, pairs, methods, forward: Clock, projection: Clock) -> dict:
    checked, errors = engine.check_pairs((i, g, b, {"pair": i}) for i, (g, b) in enumerate(pairs))
    if errors:
        raise SystemExit(f"pairs that fail the checks: {errors}")
    checked = [p for _, p in checked]
    forward.reset()
    projection.reset()
    blocks = [checked[start : start + CHUNK] for start in range(0, len(checked), CHUNK)]
    t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
    rows = 0
    # as accapp.public sends them: Engine.score_blocks (the next block tokenized while one is scored), or on
    # an older tree without it one score_pairs call a block
    scored = (engine.score_blocks(blocks, methods) if hasattr(engine, "score_blocks")
              else (engine.score_pairs(block, methods) for block in blocks))
    for results in scored:
        rows += sum(len(r.scores) for r in results)
    wall, cpu, process = time.perf_counter() - t0, time.thread_time() - c0, time.process_time() - p0
    n = len(checked)
    ms = lambda s: round(1000 * s / n, 3)  # noqa: E731
    return {"wall_ms": ms(wall), "forward_ms": ms(forward.seconds), "projection_ms": ms(projection.seconds),
            "host_ms": ms(wall - forward.seconds - projection.seconds),
            "host_cpu_ms": ms(cpu - forward.cpu - projection.cpu), "other_threads_cpu_ms": ms(process - cpu),
            "forward_calls": forward.calls,
            "projection_calls": projection.calls, "scores": rows}


def commit() -> str:
    """The tree's commit: ACCAPP_COMMIT where set (a GPU lease's tree travels without its .git), else git's."""
    if os.environ.get("ACCAPP_COMMIT", "unknown") != "unknown":
        return os.environ["ACCAPP_COMMIT"][:7]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def add_model_args(ap: argparse.ArgumentParser) -> None:
    """The options that say which model runs where (this script's and bench/runner_cost.py's)."""
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--device", default=None, help="cpu or cuda (default: the engine's choice)")
    ap.add_argument("--dtype", default="fp32", help="fp32, bf16 or fp16")


def hooked_engine(args) -> tuple:
    """(engine, forward clock, projection clock): the engine of args' model, its decoder body and its vocabulary
    projection timed."""
    engine = build_engine(args.model, args.dtype, device=args.device)
    cuda = str(engine.lm.device).startswith("cuda")
    forward, projection = Clock(cuda), Clock(cuda)
    forward.hook_module(engine.lm.model.base_model)
    projection.hook_module(engine.lm.model.get_output_embeddings())
    projection.wrap(engine.scorer, "_logprobs_of")
    return engine, forward, projection


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--skip-all", action="store_true", help="LP alone only (a quick look)")
    add_model_args(ap)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    engine, forward, projection = hooked_engine(args)
    cuda = str(engine.lm.device).startswith("cuda")

    warm = [engine.check_pair(g, b) for g, b in WARM_UP]
    engine.score_pairs(warm, None)
    pairs = sample_pairs(args.pairs)
    out: dict = {"model": args.model, "pairs": len(pairs), "threads": torch.get_num_threads(), "commit": commit(),
                 "device": torch.cuda.get_device_name() if cuda else "cpu", "dtype": args.dtype}
    lp = run(engine, pairs, ["lp"], forward, projection)
    print("lp", json.dumps(lp), flush=True)
    out.update({f"lp_{k}": v for k, v in lp.items()})
    if not args.skip_all:
        every = run(engine, pairs, None, forward, projection)
        print("all", json.dumps(every), flush=True)
        out.update({f"all_{k}": v for k, v in every.items()})
    for kind in ("lp", "all"):
        if f"{kind}_wall_ms" in out:
            out[f"{kind}_pairs_per_s"] = round(1000 / out[f"{kind}_wall_ms"], 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
