"""Speed and memory of masked-LM PLL scoring (accapp.scoring.masked), per variant.

    python bench/pll_speed.py [--batch-size 64] [--threads N] [--min-time 2] [--device cpu]

Model: BertForMaskedLM with the BertConfig() defaults (bert-base: 12 layers, hidden 768,
vocabulary 30,522), random weights, so it runs without a model hub. Tokenizer: a real
WordPiece tokenizer (BERT's normalizer and pre-tokenizer, cased) trained here on BLiMP
sentences with a 2,000-piece vocabulary, so that rarer words split into pieces as BERT's
own do (the sentences below hold several multi-token words). Sentences: one of 12 and one of
60 tokens (special tokens excluded), built from BLiMP sentences.

For each sentence and each variant (and all four together, as the app computes them) it
prints sentences scored per second (mean over repeats lasting at least --min-time seconds,
after one warm-up run), the masked copies and forward passes per sentence, and the peak
memory of the process while scoring: Linux VmHWM (peak resident set size) from
/proc/self/status, reset through /proc/self/clear_refs before each measurement, shown as
the peak above the resident size before the measurement ("peak+"), and the absolute peak.
Where clear_refs is not writable it falls back to resource.getrusage's ru_maxrss (the
process-lifetime peak) and says so. tracemalloc is not used: it does not see torch's
tensor allocations.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from accapp.scoring.masked import MaskedScorer  # noqa: E402
from accapp.scoring.pll_variants import VARIANTS  # noqa: E402

# The BLiMP release in ../shared/ beside the project (this benchmark reads it; the app never does).
BLIMP_DIR = os.environ.get("ACCAPP_BLIMP_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data" / "blimp" / "data"))


def blimp_sentences(per_paradigm: int = 200) -> list[str]:
    out = []
    for path in sorted(glob.glob(os.path.join(BLIMP_DIR, "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for k, line in enumerate(f):
                if k >= per_paradigm:
                    break
                item = json.loads(line)
                out += [item["sentence_good"], item["sentence_bad"]]
    if not out:
        sys.exit(f"no BLiMP files under {BLIMP_DIR} (set ACCAPP_BLIMP_DIR)")
    return out


def wordpiece_tokenizer(corpus: list[str], vocab_size: int = 2000):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(corpus, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))]
    )
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                                   pad_token="[PAD]", mask_token="[MASK]")


def sentence_of(n_tokens: int, corpus: list[str], tok) -> str:
    """A BLiMP sentence of exactly n tokens with at least two multi-token words, or BLiMP
    sentences joined and cut at a word end."""
    from accapp.words import split_words

    count = lambda s: len(tok(s, add_special_tokens=False)["input_ids"])  # noqa: E731
    for s in corpus:
        if count(s) == n_tokens and len(split_words(s)) <= n_tokens - 2:
            return s
    text = ""
    for s in corpus:
        text = (text + " " + s).strip()
        if count(text) >= n_tokens:
            break
    words = text.split(" ")
    for k in range(len(words), 0, -1):
        if count(" ".join(words[:k])) <= n_tokens:
            cut = " ".join(words[:k])
            return cut
    return text


class PeakMemory:
    def __init__(self) -> None:
        self.method = "VmHWM"
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self._status()
        except OSError:
            self.method = "ru_maxrss"

    @staticmethod
    def _status() -> dict:
        out = {}
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmHWM", "VmRSS")):
                    k, v = line.split(":")
                    out[k] = int(v.split()[0]) * 1024
        return out

    def reset(self) -> int:
        if self.method == "VmHWM":
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return self._status()["VmRSS"]
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def peak(self) -> int:
        if self.method == "VmHWM":
            return self._status()["VmHWM"]
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch-size", type=int, default=64, help="masked copies per forward pass (the scorer's batch_size; default 64)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's default)")
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds of repeats per measurement after a warm-up")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--lengths", default="12,60")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from transformers import BertConfig, BertForMaskedLM

    t0 = time.perf_counter()
    corpus = blimp_sentences()
    tok = wordpiece_tokenizer(corpus)
    torch.manual_seed(0)
    config = BertConfig()
    model = BertForMaskedLM(config).eval().to(args.device)
    n_params = sum(p.numel() for p in model.parameters())
    setup_s = time.perf_counter() - t0
    mem = PeakMemory()
    mem.reset()
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    print(f"model: BertForMaskedLM(BertConfig()) random weights, {n_params / 1e6:.1f}M params, vocab {config.vocab_size}, fp32, "
          f"device {args.device}; tokenizer: WordPiece trained on {len(corpus)} BLiMP sentences (vocab {len(tok)}); setup {setup_s:.1f}s")
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {load[0]:.2f}; batch size {args.batch_size}; "
          f"memory: {'VmHWM reset via /proc/self/clear_refs' if mem.method == 'VmHWM' else 'ru_maxrss (lifetime peak)'}")
    scorer = MaskedScorer(model, tok, batch_size=args.batch_size)
    lengths = [int(x) for x in args.lengths.split(",")]
    print(f"{'tokens':>6} {'variant':14} {'sent/s':>9} {'s/sent':>8} {'copies':>7} {'passes':>7} {'peak+ MB':>9} {'peak MB':>8}")
    for n in lengths:
        text = sentence_of(n, corpus, tok)
        n_real = scorer.n_tokens(text)
        print(f"# {n_real} tokens, {len(scorer.encode(text).words)} words: {text}")
        for variants in [(v,) for v in VARIANTS] + [VARIANTS]:
            name = variants[0] if len(variants) == 1 else "all four"
            base = mem.reset()
            scorer.sentence_pll(text, variants)  # warm-up
            c0, p0 = scorer.copies_scored, scorer.forward_passes
            runs, t = 0, time.perf_counter()
            while True:
                scorer.sentence_pll(text, variants)
                runs += 1
                el = time.perf_counter() - t
                if el >= args.min_time:
                    break
            peak = mem.peak()
            copies = (scorer.copies_scored - c0) // runs
            passes = (scorer.forward_passes - p0) // runs
            print(f"{n_real:6d} {name:14} {runs / el:9.3f} {el / runs:8.3f} {copies:7d} {passes:7d} "
                  f"{(peak - base) / 2**20:9.1f} {peak / 2**20:8.1f}")


if __name__ == "__main__":
    main()
