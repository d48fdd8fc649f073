"""The host's work alone: host_cost.py's every-method run with an instant decoder and vocabulary projection.

    python bench/host_stand_ins.py                  # 256 BLiMP pairs, SmolLM2, blocks of 64 through score_blocks
    python bench/host_stand_ins.py --pairs 64

The decoder's packed passes return zeros at once and the projection gives -1 nats for every token, so what is
timed is the host: tokenizing, requests, packing, plans, gathering rows, results and every method's score, as
on a GPU whose passes take no time. Template prefixes are still run by the real model (their keys and values
are copied into each pass's past), and a warm-up runs first. Prints milliseconds per pair: the wall time, the
calling thread's CPU and the other threads' CPU (the pass-ahead and block threads). The scores are not real:
this times, it does not score. Runs on an older tree too (it uses score_blocks where the tree has it).
"""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
from host_cost import MODEL, WARM_UP, Clock, commit, run, sample_pairs  # noqa: E402

from accapp.engine import build_engine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=256)
    ap.add_argument("--model", default=MODEL)
    args = ap.parse_args()
    torch.set_num_threads(1)
    engine = build_engine(args.model, "fp32")
    engine.score_pairs([engine.check_pair(g, b) for g, b in WARM_UP], None)
    scorer = engine.scorer
    width = engine.lm.model.config.hidden_size
    decoder = scorer._decoder

    def instant(input_ids=None, **kwargs):  # a prefix (a cache asked for, none given) still runs for real
        if kwargs.get("use_cache") and kwargs.get("past_key_values") is None:
            return decoder(input_ids=input_ids, **kwargs)
        return types.SimpleNamespace(last_hidden_state=torch.zeros(*input_ids.shape, width))

    def projected(hidden, targets, rows=None, mask_of=None, topk=0, topk_of=None, extras=None):
        lp = -torch.ones(len(targets))
        return (lp, torch.zeros(hidden.shape[0], 2)) if mask_of is not None else lp

    scorer._decoder, scorer._logprobs_of = instant, projected
    # host_cost's every-method run, its clocks hooked to nothing: every CPU second of the calling thread is host
    out = run(engine, sample_pairs(args.pairs), None, Clock(), Clock())
    print(f"{commit()} {args.pairs} pairs, every method: wall {out['wall_ms']:.2f} ms a pair, calling thread's CPU "
          f"{out['host_cpu_ms']:.2f} ms, other threads' CPU {out['other_threads_cpu_ms']:.2f} ms")


if __name__ == "__main__":
    main()
