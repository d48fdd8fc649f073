"""Tiny random-weight models saved with save_pretrained into folders, as a researcher's own
checkpoints would be: a Llama (SmolLM2's real tokenizer, chat template included), a GPT-2 (a
byte-level BPE trained here whose one special token, <|endoftext|>, is both BOS and EOS, and whose
small vocabulary writes 'Yes' as two tokens), a BERT and a RoBERTa (the masked-LM test tokenizers),
and a classifier (not a language model)."""

from __future__ import annotations

from pathlib import Path

import torch

from tests import masked_fixtures as mf
from tests import tiny_models as tm

GPT2_SPECIAL = "<|endoftext|>"


def _save(model, tokenizer, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def llama_folder(root: Path) -> Path:
    """LlamaForCausalLM (tests/tiny_models.py's sizes and weights) with SmolLM2-135M-Instruct's tokenizer."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    tokenizer = tm.tokenizer_for(tm.LLAMA_ID)
    with torch.random.fork_rng(devices=[]):
        model = AutoModelForCausalLM.from_config(LlamaConfig(**tm.LLAMA_CONFIG), dtype=torch.float32)
    tm._init_weights(model, "llama", seed=11)
    return _save(model, tokenizer, root / "tiny-llama")


def gpt2_tokenizer(vocab_size: int = 300):
    """Byte-level BPE on the test corpus; <|endoftext|> is its BOS, EOS and unknown token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[GPT2_SPECIAL],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(mf.corpus(), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=GPT2_SPECIAL, eos_token=GPT2_SPECIAL,
                                   unk_token=GPT2_SPECIAL)


def gpt2_folder(root: Path) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = gpt2_tokenizer()
    eot = tokenizer.convert_tokens_to_ids(GPT2_SPECIAL)
    torch.manual_seed(12)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=512,
                        bos_token_id=eot, eos_token_id=eot)
    model = mf._init(GPT2LMHeadModel(config), seed=12, std=0.3)
    return _save(model, tokenizer, root / "tiny-gpt2")


def bert_folder(root: Path) -> Path:
    tokenizer = mf.wordpiece_tokenizer()
    return _save(mf.tiny_bert(tokenizer, seed=13), tokenizer, root / "tiny-bert")


def roberta_folder(root: Path) -> Path:
    tokenizer = mf.bytelevel_tokenizer()
    return _save(mf.tiny_roberta(tokenizer, seed=14), tokenizer, root / "tiny-roberta")


def classifier_folder(root: Path) -> Path:
    """A BertForSequenceClassification: weights and tokenizer, but not a language model."""
    from transformers import BertConfig, BertForSequenceClassification

    tokenizer = mf.wordpiece_tokenizer()
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    return _save(BertForSequenceClassification(config), tokenizer, root / "tiny-classifier")


# Llama-3-8B's config.json, written by hand from its published sizes (no weights anywhere).
LLAMA3_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "tie_word_embeddings": False, "hidden_act": "silu", "rms_norm_eps": 1e-05, "max_position_embeddings": 8192,
    "rope_theta": 500000.0, "bos_token_id": 128000, "eos_token_id": 128001, "torch_dtype": "bfloat16",
}
LLAMA3_8B_PARAMS = 8_030_261_248  # its model card's count


def hub_cache_with_config(hf_home: Path, repo: str, config: dict, commit: str = "0" * 40, files: Path | None = None) -> Path:
    """A Hugging Face cache (HF_HOME) holding a repo's config.json (and, from `files`, its tokenizer
    files), as after a download of those alone: no weights."""
    import json
    import shutil

    repo_dir = hf_home / "hub" / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    (snapshot / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json"):
        if files is not None and (files / name).exists():
            shutil.copy(files / name, snapshot / name)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(commit, encoding="utf-8")
    return repo_dir
