"""The memory budget for models, and the precision a model loads in under it (:func:`plan_load`),
decided before any weight loads.

The budget is ``ACCAPP_MEMORY_BUDGET``, else a default from the machine's memory, or the GPU's on
CUDA. On the CPU models over ``ACCAPP_LARGE_MODEL_PARAMS`` load in bf16, or 4-bit NF4 where bf16
does not fit; on CUDA models from that size load in 4-bit NF4 and smaller ones in fp32
(:func:`default_precisions`). A model
that cannot fit is refused with a message; one the registry marks ``needs_gpu`` is refused on the CPU.
What a model costs is accapp.models.memory's estimate.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch

from accapp import settings
from accapp.errors import UserError
from accapp.models import ModelSpec
from accapp.models.device import pick_device
from accapp.models.memory import GiB, MiB, estimate_bytes, param_count


def parse_bytes(text: str) -> int:
    """'6GB', '1.5 GiB', '800MB', '123456' -> bytes (GB and GiB both mean 1024**3 here)."""
    s = str(text).strip().lower().replace(" ", "")
    for unit, factor in (("gib", GiB), ("gb", GiB), ("g", GiB), ("mib", MiB), ("mb", MiB), ("m", MiB), ("b", 1)):
        if s.endswith(unit):
            return int(float(s[: -len(unit)]) * factor)
    return int(float(s))


def machine_memory() -> int:
    """The memory this process may use: the machine's, or the container's limit (cgroup v2 or v1) when lower."""
    try:
        import psutil

        total = int(psutil.virtual_memory().total)
    except Exception:  # noqa: BLE001 - psutil is optional (accelerate brings it); POSIX has sysconf
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for f in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            value = Path(f).read_text().strip()
        except OSError:
            continue
        if value.isdigit() and 0 < int(value) < total:
            total = int(value)
    return total


def default_budget(memory: int | None = None) -> int:
    """60 % of the machine's memory less 1 GiB for the app itself (Python, torch, Gradio, DuckDB:
    about 0.6 GiB resident before any model), at least 512 MiB. A 16 GB Space: 8.6 GiB."""
    memory = machine_memory() if memory is None else memory
    return max(512 * MiB, int(0.6 * memory) - GiB)


def gpu_memory() -> int:
    """The GPU's total memory (device 0; on ZeroGPU, the slice it lends)."""
    return int(torch.cuda.get_device_properties(0).total_memory)


def gpu_budget(memory: int | None = None) -> int:
    """90 % of the GPU's memory less 1 GiB (the CUDA context, activations of a batch), at least
    512 MiB. A 24 GB GPU: 20.6 GiB; a ZeroGPU slice (69.5 GiB): 61.6 GiB."""
    memory = gpu_memory() if memory is None else memory
    return max(512 * MiB, int(0.9 * memory) - GiB)


def budget_from_env(device: str | None = None) -> int:
    """``ACCAPP_MEMORY_BUDGET`` ('6GB', '1500MB', bytes), else :func:`gpu_budget` on CUDA and
    :func:`default_budget` on the CPU."""
    value = settings.text("ACCAPP_MEMORY_BUDGET")
    if value:
        return parse_bytes(value)
    return gpu_budget() if pick_device(device) == "cuda" else default_budget()


def large_model_params() -> int:
    """Models with more parameters than this (``ACCAPP_LARGE_MODEL_PARAMS``, default 1e9) load in
    half precision, or 4-bit when that does not fit; smaller ones in fp32, as the shipped results."""
    return settings.integer("ACCAPP_LARGE_MODEL_PARAMS")


def nf4_available(device: str) -> bool:
    """bitsandbytes installed (its 4-bit layers run on CUDA and, since 0.45, on the CPU)."""
    return importlib.util.find_spec("bitsandbytes") is not None and device in ("cuda", "cpu")


def half_dtype(device: str) -> str:
    """bf16 where the device computes in it (any CPU; a GPU with bf16 support), else fp16."""
    if device == "cuda" and not torch.cuda.is_bf16_supported():
        return "fp16"
    return "bf16"


@dataclass(frozen=True)
class Plan:
    """How a model will load: precision and the memory it is counted for."""

    model_id: str
    dtype: str
    quantization: str | None
    bytes: int
    spec: ModelSpec | None = field(default=None, compare=False, repr=False)  # the model it is for: what loads

    @property
    def precision(self) -> str:
        return "4-bit NF4" if self.quantization == "nf4" else self.dtype


def gb(n: int) -> str:
    return f"{n / GiB:.1f} GB"


def default_precisions(params: int, device: str, large: int, half: str = "bf16", nf4: bool = True) -> list[tuple[str, str | None]]:
    """The (dtype, quantization) a model of `params` parameters loads in by default on `device`, in the order
    tried against the budget (half: the device's half precision, half_dtype; nf4: bitsandbytes runs there).

    On CUDA a model under ``large`` (1B) parameters loads in fp32: on the H200 its warm probe was faster
    and steadier than in bf16, and only fp32 equals the shipped results (docs/gpu.md); bf16 stays a
    choice (--dtype). From ``large`` on, 4-bit NF4 (Ide et al.'s setting; half precision where bitsandbytes
    is missing, fp32 on a GPU without bf16, where fp16 overflows). On the CPU a model up to ``large``
    parameters loads in fp32; a larger one in half precision, or in 4-bit NF4 where that does not fit."""
    if device == "cuda":
        if params < large:
            return [("fp32", None)]
        return [("bf16", "nf4")] if nf4 else [("bf16" if half == "bf16" else "fp32", None)]
    if params <= large:
        return [("fp32", None)]
    return [(half, None)] + ([("bf16", "nf4")] if nf4 else [])


def plan_load(spec: ModelSpec, budget: int, dtype: str | None = None, quantization: str | None = None,
              device: str | None = None, large: int | None = None, budget_name: str = "ACCAPP_MEMORY_BUDGET") -> Plan:
    """The precision a model loads in under a budget, or UserError before anything loads.

    dtype/quantization given: exactly that; else the first of default_precisions that fits.
    """
    device = pick_device(device)
    if dtype is not None or quantization is not None:
        options = [(dtype or "fp32", quantization)]
    else:
        options = default_precisions(param_count(spec), device, large_model_params() if large is None else large,
                                     half_dtype(device), nf4_available(device))
    plans = [Plan(spec.id, d, q, estimate_bytes(spec, d, q), spec) for d, q in options]
    for plan in plans:
        if plan.bytes <= budget:
            return plan
    smallest = plans[-1]
    raise UserError(
        f"{spec.name} needs about {gb(smallest.bytes)} of memory even in {smallest.precision} "
        f"({param_count(spec) / 1e9:.2f} B parameters), more than the memory budget for models, "
        f"{gb(budget)} ({budget_name}). Pick a smaller model (the embedded SmolLM2 and Gemma 3 270M "
        "need under 1.5 GB), a smaller precision, or a machine with more memory.")


def needs_gpu_message(spec: ModelSpec, budget: int) -> str:
    """Why a GPU-only model is refused on the CPU, with its estimated memory."""
    return (f"{spec.name} needs a GPU: about {gb(estimate_bytes(spec, 'bf16'))} of memory in bf16 and "
            f"{gb(estimate_bytes(spec, 'bf16', 'nf4'))} in 4-bit NF4 ({param_count(spec) / 1e9:.2f} B parameters), "
            f"and this server runs on the CPU (memory budget for models {gb(budget)}). Run it on a GPU Space "
            "(README: Space variants), or pick a model that runs here.")
