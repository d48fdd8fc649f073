"""Case-aware unigram table (issue 23, item 1): tokens at the floor and BLiMP accuracy of SLOR and
the unigram Bayes factor, before (wordfreq's lower-case words) and after (spaCy's cased forms).

    python bench/unigram_case.py                     # both embedded models; prints the figures
    python bench/unigram_case.py --models gemma3-270m
    python bench/unigram_case.py build PATH/en_lexeme_prob.json.gz   # rebuild the shipped data file

"Before" accuracies are the shipped rows (precomputed/results/<model>__blimp.parquet); "after"
scores exactly those pairs with the new table, and the new rows go to OUT/<model>__blimp.parquet.
A check: the before scores rebuilt from the new ones (the same token log-probs, the old table
swapped in) must equal the shipped ones. Figures and method: docs/unigram.md.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accapp.methods.unigram import DATA_EN, floor_count, token_logprobs, unigram_logprobs, wordfreq_masses  # noqa: E402

MODELS = ("smollm2-135m-instruct", "gemma3-270m")
METHODS = ("slor", "bayes_factor_unigram")
RESULTS = Path(__file__).resolve().parents[1] / "precomputed" / "results"
TOP_FORMS = 200_000
SHOWN = ("The", " the", "the", "It", " It", "He", " Kim", ".", "Who", " herself")
META = {
    "source": "PyPI package spacy-lookups-data 1.0.5, table en_lexeme_prob (spacy_lookups_data/data/en_lexeme_prob.json.gz)",
    "origin": "spaCy v2.2 English lexemes: Good-Turing smoothed log-probabilities of cased spaCy tokens "
              "estimated on the Reddit comment corpus (M. Honnibal, spaCy issue #591; spacy-lookups-data PR #7)",
    "citation": "Honnibal, M., Montani, I., Van Landeghem, S., Boyd, A. (2020). spaCy: Industrial-strength "
                "Natural Language Processing in Python. doi:10.5281/zenodo.1212303",
    "license": "MIT (Copyright (c) 2019 ExplosionAI GmbH), the license of spacy-lookups-data",
    "conversion": f"HTML entities unescaped (&gt -> >) and equal forms merged, the {TOP_FORMS} most probable "
                  "forms kept, natural-log probabilities rounded to 3 decimals; bench/unigram_case.py build",
}


def build(src: Path, out: Path = DATA_EN, top: int = TOP_FORMS) -> None:
    """The shipped data file from spacy-lookups-data's en_lexeme_prob.json.gz."""
    with gzip.open(src, "rt", encoding="utf-8") as f:
        table = json.load(f)
    merged: dict[str, float] = {}
    for form, lp in table.items():
        key = html.unescape(form)  # Reddit's text is HTML-escaped
        merged[key] = merged.get(key, 0.0) + math.exp(lp)
    forms = sorted(merged.items(), key=lambda kv: -kv[1])[:top]
    data = {**META, "forms": [[form, round(math.log(p), 3)] for form, p in forms]}
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as f:  # mtime 0: the same bytes every build
        f.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    print(f"{out}: {len(forms)} forms, {out.stat().st_size / 1e6:.2f} MB")


def accuracy(df: pd.DataFrame) -> float:
    """Mean over paradigms of the share of pairs with score_good > score_bad (ties wrong), in %."""
    return 100 * (df.score_good > df.score_bad).groupby(df.paradigm).mean().mean()


def token_sums(tokenizer, table: np.ndarray, texts: list[str]) -> np.ndarray:
    """Σ log p_uni over each text's tokens (tokenized as the scorer does)."""
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    return np.array([table[i].sum() for i in ids])


def rescore(engine, shipped: pd.DataFrame, batch: int = 300) -> pd.DataFrame:
    """The shipped pairs scored under METHODS with the engine's (new) table."""
    pairs = shipped.drop_duplicates(["paradigm", "pair_id"])[["paradigm", "pair_id", "good", "bad"]]
    rows = []
    for start in range(0, len(pairs), batch):
        chunk = pairs.iloc[start:start + batch]
        results = engine.score_pairs([engine.check_pair(g, b) for g, b in zip(chunk.good, chunk.bad)], list(METHODS), "en")
        for (_, p), r in zip(chunk.iterrows(), results):
            for s in r.rows:
                rows.append({"paradigm": p.paradigm, "pair_id": p.pair_id, "method": s["method"], "template": s["template"],
                             "variant": s["variant"], "score_good": s["score_good"], "score_bad": s["score_bad"],
                             "good": p.good, "bad": p.bad})
    return pd.DataFrame(rows)


def rebuilt_before(new: pd.DataFrame, tokenizer, old: np.ndarray, table: np.ndarray) -> pd.DataFrame:
    """The old table's scores from the new ones: BF + Σ new − Σ old; SLOR the same over the token count."""
    out = new.copy()
    for side in ("good", "bad"):
        texts = list(out[side])
        shift = token_sums(tokenizer, table, texts) - token_sums(tokenizer, old, texts)
        n = np.array([len(i) for i in tokenizer(texts, add_special_tokens=False)["input_ids"]])
        out[f"score_{side}"] += np.where(out.method == "slor", shift / n, shift)
    return out


def run_model(model: str, out_dir: Path) -> dict:
    from accapp.engine import build_engine

    t0 = time.time()
    engine = build_engine(model)
    lm = engine.lm
    old = token_logprobs(lm.tokenizer, lm.vocab_size, wordfreq_masses("en", " "))  # the v1 table
    table = unigram_logprobs(lm, "en")
    ids = {t: lm.tokenizer(t, add_special_tokens=False)["input_ids"] for t in SHOWN}
    shown = {t: (round(float(old[i].sum()), 2), round(float(table[i].sum()), 2)) for t, i in ids.items() if len(i) == 1}
    shipped = pd.read_parquet(RESULTS / f"{model}__blimp.parquet")
    shipped = shipped[shipped.method.isin(METHODS)]
    new = rescore(engine, shipped)
    keys = ["paradigm", "pair_id", "method", "template", "variant"]
    check = rebuilt_before(new, lm.tokenizer, old, table).merge(shipped[keys + ["score_good", "score_bad"]], on=keys,
                                                                 suffixes=("", "_shipped"))
    drift = float(max((check.score_good - check.score_good_shipped).abs().max(), (check.score_bad - check.score_bad_shipped).abs().max()))
    out_dir.mkdir(parents=True, exist_ok=True)
    new[keys + ["score_good", "score_bad"]].to_parquet(out_dir / f"{model}__blimp.parquet", index=False)
    fig = {"model": model, "vocab": lm.vocab_size, "floor_before": floor_count(old), "floor_after": floor_count(table),
           "pairs": len(check) // len(METHODS), "rebuilt_drift": drift, "tokens": shown, "seconds": round(time.time() - t0)}
    for m in METHODS:
        fig[f"{m}_before"] = accuracy(shipped[shipped.method == m])
        fig[f"{m}_after"] = accuracy(new[new.method == m])
    return fig


def report(figs: list[dict]) -> None:
    print("| model | tokens at the floor, before | after | SLOR before | after | BF (unigram) before | after |")
    print("|---|---|---|---|---|---|---|")
    for f in figs:
        share = lambda n: f"{n:,} ({100 * n / f['vocab']:.1f} %)"  # noqa: E731
        print(f"| {f['model']} | {share(f['floor_before'])} | {share(f['floor_after'])} | {f['slor_before']:.2f} | "
              f"{f['slor_after']:.2f} | {f['bayes_factor_unigram_before']:.2f} | {f['bayes_factor_unigram_after']:.2f} |")
    for f in figs:
        print(f"{f['model']}: {f['pairs']} pairs, vocabulary {f['vocab']:,}, {f['seconds']} s; before rebuilt from after, "
              f"largest difference to the shipped scores {f['rebuilt_drift']:.2e}")
        print("  log p_uni (before, after):", ", ".join(f"{t!r} {b} -> {a}" for t, (b, a) in f["tokens"].items()))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", default="run", choices=["run", "build"])
    ap.add_argument("source", nargs="?", help="build: spacy-lookups-data's en_lexeme_prob.json.gz")
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--out", type=Path, default=Path("/tmp/unigram_rows"))
    args = ap.parse_args(argv)
    if args.command == "build":
        build(Path(args.source))
        return
    report([run_model(m, args.out) for m in args.models])


if __name__ == "__main__":
    main()
