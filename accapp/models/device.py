"""Where a model runs: the device it loads on, and, in the words a results manifest and a provenance
record use, the device, the GPU's name and memory, dtype, quantization and attention of a loaded one."""

from __future__ import annotations

import torch


def pick_device(device: str | None = None) -> str:
    if device and device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def describe_device(lm) -> dict:
    """{device, gpu, gpu_memory_gib, dtype, quantization, attention} of a LoadedModel (gpu None on the CPU;
    attention: transformers' implementation, "sdpa", or accapp/models/attention.py's on CUDA)."""
    device = str(lm.device)
    gpu, memory = None, None
    if device.startswith("cuda") and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.device(device))
        gpu, memory = props.name, round(props.total_memory / 1024**3, 1)
    config = getattr(getattr(lm, "model", None), "config", None)
    return {"device": device, "gpu": gpu, "gpu_memory_gib": memory, "dtype": lm.dtype, "quantization": lm.quantization,
            "attention": getattr(config, "_attn_implementation", None)}
