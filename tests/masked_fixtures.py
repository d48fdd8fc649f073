"""Tiny masked LMs with real tokenizers, for testing PLL scoring without a model hub.

No registry here ships a masked LM with its MLM head, so the tests train a WordPiece
(BERT-style) and a byte-level BPE (RoBERTa-style) tokenizer on BLiMP sentences with a
small vocabulary (words really split into several tokens), and build randomly initialised
BertForMaskedLM / RobertaForMaskedLM models from small, seeded configs. The initialiser's
range is widened so the random models' predictions depend strongly on the context, which
makes the variants differ and the reference comparisons meaningful.
"""

from __future__ import annotations

import glob
import json
import os
from functools import lru_cache

import torch

# The BLiMP release in ../shared/ beside the project (this test helper reads it; the app never does).
BLIMP_DIR = os.environ.get("ACCAPP_BLIMP_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "blimp", "data"))
LINES_PER_PARADIGM = 30

# Sentences the tests score; they also go into the tokenizers' training text.
CHINESE = ["他们喜欢这本书。", "李波正在发现一个大学校园", "我看了三千本书，对吗？"]
NUMBERS = ["They sold 3,000 books in 2019 and 12 more in 2020.", "It costs 3.50 dollars, not 45 or 6,789."]
FALLBACK_CORPUS = [  # used only where the BLiMP files are missing
    "These casseroles disgust Kayla.", "These casseroles disgusts Kayla.",
    "Who should Derek hug after shocking Richard?", "The traveler lost the souvenir.",
    "I don't think Kayla's friends bought 3,000 apples.", "Many people were fixing those cars.",
]


@lru_cache(maxsize=1)
def corpus() -> tuple[str, ...]:
    lines: list[str] = []
    for path in sorted(glob.glob(os.path.join(BLIMP_DIR, "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for k, line in enumerate(f):
                if k >= LINES_PER_PARADIGM:
                    break
                item = json.loads(line)
                lines += [item["sentence_good"], item["sentence_bad"]]
    if not lines:
        lines = list(FALLBACK_CORPUS)
    return tuple(lines + CHINESE + NUMBERS)


def _wrap(tok, **special):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, **special)


@lru_cache(maxsize=None)
def wordpiece_tokenizer(vocab_size: int = 400):
    """BERT-style: BertNormalizer (cased, CJK characters spaced), BertPreTokenizer, WordPiece."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, handle_chinese_chars=True, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(corpus(), trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    tok.decoder = decoders.WordPiece()
    return _wrap(tok, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]")


@lru_cache(maxsize=None)
def bytelevel_tokenizer(vocab_size: int = 400):
    """RoBERTa-style: byte-level BPE (a space belongs to the next token), <s> ... </s>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus(), trainer)
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")), trim_offsets=True, add_prefix_space=False
    )
    tok.decoder = decoders.ByteLevel()
    return _wrap(tok, bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>", unk_token="<unk>",
                 pad_token="<pad>", mask_token="<mask>")


def _init(model, seed: int, std: float):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif "LayerNorm" in name or "layer_norm" in name:
                pass
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return model.eval()


def tiny_bert(tokenizer, seed: int = 0, hidden: int = 32, layers: int = 2, std: float = 0.6):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
        intermediate_size=2 * hidden, max_position_embeddings=160, pad_token_id=tokenizer.pad_token_id,
    )
    return _init(BertForMaskedLM(config), seed, std)


def tiny_roberta(tokenizer, seed: int = 0, hidden: int = 32, layers: int = 2, std: float = 0.6):
    from transformers import RobertaConfig, RobertaForMaskedLM

    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
        intermediate_size=2 * hidden, max_position_embeddings=160 + 2, type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    return _init(RobertaForMaskedLM(config), seed, std)
