"""Meaning distance of each rated pair from a model's own hidden states (issue 36; Hu et al. 2025 Fig. 3b).

Hu et al. 2025 measure how far apart a pair's two sentences are in meaning by the cosine distance of
sentence embeddings (all-mpnet-base-v2 for English). No sentence-embedding model reaches this
machine, so each sentence's embedding here is the mean, over its tokens, of the model's hidden state
at its middle layer (the start token left out), the sentence conditioned on the model's start token
as every score is. Writes precomputed/ratings/<model>__<set>_distance.parquet: pair_id,
meaning_distance (1 - cosine similarity), layer, embedding (what was used, in words).

  PYTHONPATH=. python scripts/ratings_distances.py --model smollm2-135m-instruct --set li
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from accapp.analysis.ratings import cosine_distance
from accapp.models.loading import load_model

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("ratings_distances")


@torch.no_grad()
def embed(loaded, sentences: list[str], layer: int) -> np.ndarray:
    out = []
    for s in sentences:
        ids = [loaded.start_id] + loaded.tokenizer(s, add_special_tokens=False)["input_ids"]
        hidden = loaded.model(torch.tensor([ids]), output_hidden_states=True).hidden_states[layer][0, 1:]
        out.append(hidden.float().mean(dim=0).numpy())
    return np.stack(out)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--set", default="li")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pairs = pd.read_parquet(ROOT / "assets" / "ratings" / f"{args.set}.parquet")
    t = time.perf_counter()
    loaded = load_model(args.model)
    layer = loaded.model.config.num_hidden_layers // 2
    good = embed(loaded, pairs["good"].tolist(), layer)
    bad = embed(loaded, pairs["bad"].tolist(), layer)
    out = pd.DataFrame({"pair_id": pairs["pair_id"], "meaning_distance": cosine_distance(good, bad), "layer": layer,
                        "embedding": f"{args.model}: mean of layer {layer}'s hidden states over the sentence's tokens"})
    dest = ROOT / "precomputed" / "ratings" / f"{args.model}__{args.set}_distance.parquet"
    dest.parent.mkdir(parents=True, exist_ok=True)
    out.to_parquet(dest, index=False)
    log.info("%s: %d pairs in %.0f s -> %s", args.model, len(out), time.perf_counter() - t, dest)


if __name__ == "__main__":
    main()
