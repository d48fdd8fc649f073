"""A model's weight memory from its config alone, per dtype and for 4-bit NF4, before any weight loads.

The parameters are counted on an empty copy of the model built on PyTorch's meta device (shapes,
no storage: an 8B model in half a second), so every architecture transformers knows is counted
exactly, tied embeddings once. Where transformers cannot build it (an architecture it does not
know), a closed formula for a decoder-only transformer stands in (``"exact": False``).

NF4 (bitsandbytes, the paper's setting: double quantization, bf16 compute) quantizes the linear
layers of the blocks: 4 bits a weight, an 8-bit scale per block of 64 and an fp32 scale per 256 of
those; the embeddings, the output head, norms and biases stay in bf16.

A loaded model costs its weights plus what an engine keeps beside them (:func:`estimate_bytes`);
a registry model's weights are counted from its parameter count.
"""

from __future__ import annotations

import json
from pathlib import Path

from accapp.models import ModelSpec
from accapp.models.loading import cache_root

BYTES_PER_WEIGHT = {"fp32": 4, "bf16": 2, "fp16": 2}
NF4_BLOCK = 64  # weights per quantization block
NF4_BYTES_PER_WEIGHT = 0.5 + 1 / NF4_BLOCK + 4 / (NF4_BLOCK * 256)  # 4 bits + 8-bit absmax + fp32 second-level scale
NF4_KEEPS = ("lm_head",)  # modules bitsandbytes leaves unquantized beside the embeddings (transformers' default)
UNGATED_MLP = ("gpt2", "gpt_neox", "gpt_neo", "gptj", "opt", "bert", "roberta", "distilbert", "falcon", "bloom")


def config_dict(config_or_path) -> dict:
    """config.json as a dict, from a dict, a transformers config, a config.json file or its folder."""
    if isinstance(config_or_path, dict):
        return dict(config_or_path)
    if hasattr(config_or_path, "to_dict"):
        return config_or_path.to_dict()
    path = Path(config_or_path)
    if path.is_dir():
        path = path / "config.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _transformers_config(config_or_path):
    from transformers import AutoConfig, PretrainedConfig

    if isinstance(config_or_path, PretrainedConfig):
        return config_or_path
    data = config_dict(config_or_path)
    model_type = data.pop("model_type")
    return AutoConfig.for_model(model_type, **data)


def _empty_model(config, kind: str | None):
    """The model built on the meta device: shapes without storage (nothing allocated)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    classes = {"causal": [AutoModelForCausalLM], "masked": [AutoModelForMaskedLM]}.get(
        kind, [AutoModelForCausalLM, AutoModelForMaskedLM])
    last: Exception | None = None
    for auto in classes:
        try:
            with torch.device("meta"):
                return auto.from_config(config)
        except Exception as exc:  # noqa: BLE001 - the next class, else the formula
            last = exc
    raise ValueError(f"transformers cannot build this config: {last}")


def _counts_from_model(model) -> tuple[int, int]:
    """(all parameters, those in linear layers NF4 quantizes), shared tensors counted once."""
    import torch

    seen: set[int] = set()
    total = quantized = 0
    for name, module in model.named_modules():
        for p in module.parameters(recurse=False):
            if id(p) in seen:
                continue
            seen.add(id(p))
            total += p.numel()
            last = name.rsplit(".", 1)[-1]
            if isinstance(module, torch.nn.Linear) and p.ndim == 2 and last not in NF4_KEEPS:
                quantized += p.numel()
    return total, quantized


def _get(c: dict, *names, default=None):
    for n in names:
        if c.get(n) is not None:
            return c[n]
    text = c.get("text_config")  # multimodal configs keep the language model's sizes inside
    if isinstance(text, dict):
        return _get(text, *names, default=default)
    return default


def formula_counts(config_or_path) -> tuple[int, int]:
    """(parameters, linear-layer parameters) of a decoder-only transformer from its sizes alone:
    embeddings (and an untied head), per layer attention with grouped key/value heads, a gated MLP
    (two matrices for the models in UNGATED_MLP) and two norms."""
    c = config_dict(config_or_path)
    vocab = int(_get(c, "vocab_size"))
    hidden = int(_get(c, "hidden_size", "n_embd", "d_model"))
    layers = int(_get(c, "num_hidden_layers", "n_layer", "num_layers"))
    heads = int(_get(c, "num_attention_heads", "n_head"))
    kv_heads = int(_get(c, "num_key_value_heads", default=heads))
    head_dim = int(_get(c, "head_dim", default=hidden // heads))
    inter = int(_get(c, "intermediate_size", "n_inner", "ffn_dim", default=4 * hidden) or 4 * hidden)
    tied = bool(_get(c, "tie_word_embeddings", default=True))
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    mlp = (2 if c.get("model_type") in UNGATED_MLP else 3) * hidden * inter
    linear = layers * (attention + mlp)
    embeddings = vocab * hidden * (1 if tied else 2)
    return embeddings + linear + layers * 2 * hidden + hidden, linear


def estimate_from_config(config_or_path, kind: str | None = None) -> dict:
    """{"fp32", "bf16", "fp16", "nf4": weight bytes, "params": int, "exact": bool} from a config
    (dict, transformers config, config.json or its folder) without loading a weight; kind
    ("causal"/"masked") picks the head."""
    try:
        params, quantized = _counts_from_model(_empty_model(_transformers_config(config_or_path), kind))
        exact = True
    except Exception:  # noqa: BLE001 - an architecture transformers cannot build here: the formula
        params, quantized = formula_counts(config_or_path)
        exact = False
    out: dict = {dtype: params * size for dtype, size in BYTES_PER_WEIGHT.items()}
    out["nf4"] = int(quantized * NF4_BYTES_PER_WEIGHT + (params - quantized) * BYTES_PER_WEIGHT["bf16"])
    out["params"] = int(params)
    out["exact"] = exact
    return out


# ---------------------------------------------------------------------------------- a loaded model's cost
GiB = 1024**3
MiB = 1024**2
# An estimate of what a loaded model costs: its weights times 1.2, plus 128 MiB. The extra covers what
# an engine keeps beside the weights (template KV caches, unigram tables, a batch's activations); the
# embedded models' resident memory after a probe with every method is in README ("Memory").
WEIGHT_FACTOR = 1.2
WORKING_BYTES = 128 * MiB
# Bytes a parameter takes: NF4 stores 4 bits a weight plus its scales, and bitsandbytes keeps the
# embeddings and the output head in bf16 (docs/gpu.md has an 8 B model's footprint).
BYTES_PER_PARAM = {("fp32", None): 4.0, ("bf16", None): 2.0, ("fp16", None): 2.0, ("bf16", "nf4"): 0.7,
                   ("fp32", "nf4"): 0.7, ("fp16", "nf4"): 0.7}


def config_estimate(spec: ModelSpec) -> dict | None:
    """The estimate from the config of a model not in the registry (kept on the
    spec: an 8B model's empty copy takes seconds to build); None for a registry model."""
    config = spec.findings.get("config")
    if config is None:
        return None
    if "memory" not in spec.findings:
        spec.findings["memory"] = estimate_from_config(config, spec.kind)
    return spec.findings["memory"]


def param_count(spec: ModelSpec) -> int:
    """The registry's count; a model not in the registry: counted from its config; else the fp32
    safetensors copy's size / 4."""
    if spec.params:
        return int(spec.params)
    found = config_estimate(spec)
    if found is not None:
        return int(found["params"])
    files = list((cache_root() / "models" / spec.id).glob("*.safetensors"))
    return sum(f.stat().st_size for f in files) // 4


def weight_bytes(spec: ModelSpec, dtype: str = "fp32", quantization: str | None = None) -> int:
    """The weights' bytes: from the config where there is one (every dtype and NF4 counted layer by
    layer), else the registry's parameter count x bytes a parameter."""
    found = config_estimate(spec)
    if found is not None:
        return int(found["nf4"] if quantization == "nf4" else found[dtype])
    return int(param_count(spec) * BYTES_PER_PARAM.get((dtype, quantization), 4.0))


def estimate_bytes(spec: ModelSpec, dtype: str = "fp32", quantization: str | None = None) -> int:
    """Memory a loaded model takes, estimated before loading: its weights x 1.2 + 128 MiB (see WEIGHT_FACTOR)."""
    return int(weight_bytes(spec, dtype, quantization) * WEIGHT_FACTOR) + WORKING_BYTES
