"""Tiny random-weight causal LMs of both embedded architectures, with the real tokenizers.

The fast test tier runs the real engine (packing, prefix caching, sliding windows, every
method) on these in seconds; the real models' golden numbers stay in the slow tier.

- tiny_llama(): LlamaForCausalLM with SmolLM2-135M-Instruct's tokenizer (chat template
  included) and spec, so the instruct code paths (chat prompts) run.
- tiny_gemma3(): Gemma3ForCausalLM (the text model) with Gemma 3 270M's tokenizer and spec,
  a base model, whose sliding window is 64 tokens (the real one's is 512): BLiMP's templated
  strings (6-55 tokens) still fit, so they are packed and share cached prefixes as on the
  real model, in packed rows wider than the window; most prompts (42-84 tokens) do not,
  so the scorer's path for strings beyond the window runs too. (With a 16-token window,
  402 of the 432 strings of 8 BLiMP pairs' full method set are longer than it, only 14
  share a prefix and nothing is ever packed.)

Each copies what matters of the real config.json (~/.cache/accapp/models/<id>/config.json):
the class, tied embeddings, the vocabulary size, grouped-query attention, activation, norm
eps, RoPE, Gemma's query scaling, layer types and no logit soft-capping; only the sizes
shrink (hidden 64, 4 query heads sharing 2 key/value heads of 16 dims, 3-4 layers).
tests/test_tiny_engine.py checks that against the real config where it is cached.

The tokenizer comes from the real model's cached folder when there is one (0.2 s for
SmolLM2, ~4 s for Gemma's 262k-token vocabulary); otherwise from the GGUF file's metadata
alone, no weights dequantized (~3 s and ~16 s, Gemma's GGUF reader is slow), and is then
saved under cache_root()/tokenizers/<id> so later runs read it as from a folder.

Weights: seeded (torch.Generator), independent of the global RNG; scaled so that
predictions are sharp and depend on context (see GAIN and below), not near-uniform, which
would let a wrong mask or position hide under the tolerances.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import torch

from accapp.models import get_spec
from accapp.models.cpu_speedups import speed_up_on_cpu
from accapp.models.loading import LoadedModel, _gguf_path, cache_root

LLAMA_ID = "smollm2-135m-instruct"
GEMMA_ID = "gemma3-270m"
SLIDING_WINDOW = 64  # tokens; Gemma 3 270M's is 512 (see the module docstring)

# From the real config.json files (transformers 5.23); sizes shrunk, the rest as is.
LLAMA_CONFIG = dict(
    vocab_size=49152,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,  # grouped-query (real: 9 query heads, 3 KV heads)
    head_dim=16,
    hidden_act="silu",
    max_position_embeddings=8192,
    rms_norm_eps=9.999999747378752e-06,
    rope_parameters={"rope_theta": 100000.0, "rope_type": "default"},
    tie_word_embeddings=True,
    attention_bias=False,
    mlp_bias=False,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=2,
)
GEMMA_CONFIG = dict(
    vocab_size=262144,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=4,
    # The real model: 5 sliding layers, then a full one. Here the last layer slides too, so
    # what a window hides reaches the output through one layer at least.
    layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention"],
    sliding_window=SLIDING_WINDOW,
    num_attention_heads=4,
    num_key_value_heads=2,  # grouped-query (real: 4 query heads, 1 KV head)
    head_dim=16,
    query_pre_attn_scalar=16,  # = head_dim, as in the real model (256 = 256)
    hidden_activation="gelu_pytorch_tanh",
    max_position_embeddings=32768,
    rms_norm_eps=9.999999974752427e-07,
    rope_parameters={
        "full_attention": {"rope_theta": 1000000.0, "rope_type": "default"},
        "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
    },
    final_logit_softcapping=None,
    attn_logit_softcapping=None,
    tie_word_embeddings=True,
    attention_bias=False,
    use_bidirectional_attention=False,
    bos_token_id=2,
    eos_token_id=1,
    pad_token_id=0,
)

# Weight scales, chosen (by measuring) so that predictions are sharp and depend on context:
# mean next-token entropy ~4 nats (Llama) and ~6 (Gemma) of log(vocab) 10.8 and 12.5; a
# token's log-prob -18 to -20 on average; dropping a sentence's first word moves the last
# position's distribution by 0.5 to 7 nats of KL. Linear layers: GAIN / sqrt(fan_in). The
# tied embedding also makes the logits, so the final norm's scale sets their sharpness.
# Gemma multiplies its input embeddings by sqrt(hidden) and normalises every sublayer's
# output (post-norms): a larger attention-output norm lets context outweigh the token itself.
GAIN = 1.5
EMBED_STD = {"llama": 0.5, "gemma3": 0.25}
FINAL_NORM_SCALE = {"llama": 1.0, "gemma3": 2.0}
ATTN_OUT_NORM_SCALE = {"llama": 1.0, "gemma3": 3.0}  # Gemma's post_attention_layernorm
NORM_JITTER = 0.1


def _from_folder(folder: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def _has_tokenizer(folder: Path) -> bool:
    return (folder / "tokenizer.json").exists() and (folder / "tokenizer_config.json").exists()


def tokenizer_for(model_id: str):
    """The real model's tokenizer, as load_model gets it, without loading any weights."""
    from transformers import AutoTokenizer

    spec = get_spec(model_id)
    for folder in (cache_root() / "models" / model_id, cache_root() / "tokenizers" / model_id):
        if _has_tokenizer(folder):
            return _from_folder(folder)
    gguf = _gguf_path(spec)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)  # metadata only
    target = cache_root() / "tokenizers" / model_id
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{model_id}-"))
    try:  # beside the target, then renamed: a killed run never leaves half a tokenizer
        tokenizer.save_pretrained(tmp)
        if not target.exists():
            tmp.rename(target)
    except OSError:
        pass  # another process got there first, or the cache is read-only: still usable
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return tokenizer


def _init_weights(model: torch.nn.Module, family: str, seed: int) -> None:
    """Seeded normal weights (the global RNG untouched); RMSNorm scales jittered around 1."""
    gen = torch.Generator().manual_seed(seed)
    offset = 0.0 if family == "llama" else -1.0  # Gemma's RMSNorm multiplies by (1 + weight)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_tokens.weight"):
                p.copy_(torch.randn(p.shape, generator=gen) * EMBED_STD[family])
            elif p.ndim == 2:
                p.copy_(torch.randn(p.shape, generator=gen) * (GAIN / math.sqrt(p.shape[1])))
            elif "norm" in name:
                if name == "model.norm.weight":
                    scale = FINAL_NORM_SCALE[family]
                elif family == "gemma3" and "post_attention_layernorm" in name:
                    scale = ATTN_OUT_NORM_SCALE[family]
                else:
                    scale = 1.0
                p.copy_(scale * (1 + NORM_JITTER * torch.randn(p.shape, generator=gen)) + offset)
            else:
                raise AssertionError(f"unexpected parameter {name} {tuple(p.shape)}")


def _build(model_id: str, family: str, config_kwargs: dict, seed: int) -> LoadedModel:
    from transformers import AutoModelForCausalLM, Gemma3TextConfig, LlamaConfig

    spec = get_spec(model_id)
    tokenizer = tokenizer_for(model_id)
    config_class = LlamaConfig if family == "llama" else Gemma3TextConfig
    config = config_class(**config_kwargs)
    with torch.random.fork_rng(devices=[]):  # from_config draws its own init from the global RNG
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="sdpa")
    _init_weights(model, family, seed)
    model.eval()
    assert model.get_output_embeddings().weight.shape[0] == config_kwargs["vocab_size"]
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight  # tied
    speed_up_on_cpu(model)
    start_id = tokenizer.convert_tokens_to_ids(spec.start_token)
    if start_id is None or start_id == tokenizer.unk_token_id and spec.start_token != tokenizer.unk_token:
        raise ValueError(f"start token {spec.start_token!r} not in the vocabulary of {model_id}")
    return LoadedModel(spec, model, tokenizer, "cpu", "fp32", None, int(start_id))


@lru_cache(maxsize=1)
def tiny_llama() -> LoadedModel:
    """Llama architecture, SmolLM2-135M-Instruct's tokenizer and spec (instruct, chat template)."""
    return _build(LLAMA_ID, "llama", LLAMA_CONFIG, seed=1)


@lru_cache(maxsize=1)
def tiny_gemma3() -> LoadedModel:
    """Gemma 3 text architecture, Gemma 3 270M's tokenizer and spec (base), a 64-token window."""
    return _build(GEMMA_ID, "gemma3", GEMMA_CONFIG, seed=2)
