"""Turn a --model string into a ModelSpec: a registry id, a Hugging Face hub id (org/name, with an
optional @revision), a local folder (config.json, weights, tokenizer) or a .gguf file.

Only the config is read here, never a weight: the kind (causal or masked) comes from its
architectures, and anything else (an encoder-decoder, a classifier, a folder without weights) is
refused in one sentence that names what was found. The conventions the registry states by hand
(start token, base or instruct, answer tokens) are found when the tokenizer loads
(accapp.models.inspect); for a hub id the registry lists, the registry's facts override them.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import shutil
from pathlib import Path

from accapp.errors import MAX_MODEL_CHARS, UserError, shown
from accapp.models import ModelSpec, registry, remember

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*(@[\w./-]+)?$")
WEIGHT_GLOBS = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.h5", "*.msgpack", "*.gguf")
CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
MASKED_SUFFIXES = ("ForMaskedLM", "ForPreTraining")
CLASSIFIER_SUFFIXES = ("ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering",
                       "ForMultipleChoice", "ForImageClassification", "ForAudioClassification")


def model_form(text: str) -> str:
    """'registry', 'gguf', 'folder', 'hub', 'missing' (a path to nothing) or 'unknown': what a
    --model string names (pure but for the file system: an existing path wins over a hub id of
    the same spelling)."""
    if text in registry():
        return "registry"
    path = Path(text).expanduser()
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except (OSError, ValueError):  # a name the file system cannot hold (too long, a NUL): no such path
        exists = is_dir = False
    if text.startswith(("/", "./", "../", "~", ".\\")) and not exists:
        return "missing"
    if path.suffix.lower() == ".gguf":
        return "gguf"
    if is_dir:
        return "folder"
    if HUB_ID.match(text) and not exists:
        return "hub"
    return "unknown"


def kind_of(config: dict, where: str) -> str:
    """'causal' or 'masked' from a config's architectures (else its model_type), or UserError
    naming what was found: an encoder-decoder, a classifier, a model without a language-model head."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

    architectures = [a for a in (config.get("architectures") or []) if isinstance(a, str)]
    model_type = str(config.get("model_type") or "")
    found = ", ".join(architectures) or f"model_type '{model_type or 'none'}'"
    if config.get("is_encoder_decoder"):
        raise UserError(f"'{shown(where)}' is an encoder-decoder model ({found}); only causal and masked language models "
                        "can score sentences here.")
    for arch in architectures:
        if arch.endswith(CAUSAL_SUFFIXES):
            return "causal"
        if arch.endswith(MASKED_SUFFIXES):
            return "masked"
        if arch.endswith("ForConditionalGeneration") and model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            return "causal"  # a decoder with another modality beside text (Gemma 3, Llava): its language model
    if architectures:
        what = "a classifier" if any(a.endswith(CLASSIFIER_SUFFIXES) for a in architectures) else \
            "not a language model with a head that predicts tokens"
        raise UserError(f"'{shown(where)}' is {what} ({found}); only causal and masked language models can score "
                        "sentences here.")
    if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not config.get("is_decoder"):
        return "masked"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    raise UserError(f"'{shown(where)}' has a config with no architecture transformers knows ({found}); only causal and "
                    "masked language models can score sentences here.")


def has_weights(folder: Path) -> bool:
    return any(any(folder.glob(pattern)) for pattern in WEIGHT_GLOBS)


def _read_json(path: Path, where: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"'{shown(where)}' has a config.json that cannot be read ({exc}).") from exc
    if not isinstance(data, dict):
        raise UserError(f"'{shown(where)}' has a config.json that is not a JSON object.")
    return data


def folder_config(text: str) -> dict:
    folder = Path(text).expanduser()
    if not (folder / "config.json").is_file():
        raise UserError(f"The folder '{shown(text)}' holds no config.json, so it is not a model folder "
                        "(save one with save_pretrained).")
    config = _read_json(folder / "config.json", text)
    if not has_weights(folder):
        raise UserError(f"The folder '{shown(text)}' holds a config.json but no weights (no .safetensors or .bin file).")
    return config


def gguf_config(text: str, trust_remote_code: bool = False) -> dict:
    data = gguf_auto_config(text, trust_remote_code).to_dict()
    data.setdefault("architectures", None)
    return data


def gguf_auto_config(text: str, trust_remote_code: bool = False):
    """The GGUF file's transformers config, read once per file version: a GGUF read parses every
    tokenizer string (seconds for a 49k vocabulary), and the loader passes this to from_pretrained."""
    path = Path(text).expanduser()
    if not path.is_file():
        raise UserError(f"The GGUF file '{shown(text)}' does not exist.")
    stat = path.stat()
    return copy.deepcopy(_read_gguf_config(str(path.resolve()), stat.st_mtime_ns, stat.st_size, trust_remote_code))


@functools.lru_cache(maxsize=4)  # a few files' configs (small objects); the key changes when the file does
def _read_gguf_config(path: str, mtime_ns: int, size: int, trust_remote_code: bool):
    from transformers import AutoConfig

    from accapp.models.gguf_reading import fast_gguf_reading

    fast_gguf_reading()
    where = Path(path)
    try:
        return AutoConfig.from_pretrained(str(where.parent), gguf_file=where.name, trust_remote_code=trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - a file transformers cannot read: one sentence
        raise UserError(f"'{shown(path)}' cannot be read as a GGUF model by transformers ({str(exc).splitlines()[0]}).") from exc


def split_revision(text: str) -> tuple[str, str]:
    """'org/name@rev' -> ('org/name', 'rev'); no @: ('org/name', '')."""
    repo, _, revision = text.partition("@")
    return repo, revision


def _hub_cache_dir(repo: str) -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE) / ("models--" + repo.replace("/", "--"))


def hub_config(text: str) -> dict:
    """The config.json of a hub id: from the local cache, else downloaded (the config only). Offline
    with nothing cached: one sentence naming the id, and no partial download left behind."""
    from huggingface_hub import hf_hub_download

    from accapp.models.availability import hub_reachable

    repo, revision = split_revision(text)
    cache = _hub_cache_dir(repo)
    existed = cache.exists()
    try:
        path = hf_hub_download(repo, "config.json", revision=revision or None, local_files_only=not hub_reachable())
    except Exception as exc:  # noqa: BLE001 - offline, unknown repo, gated: one sentence each
        if not existed:  # nothing of it was here before: leave nothing behind
            shutil.rmtree(cache, ignore_errors=True)
        raise UserError(hub_failure(text, exc)) from exc
    return _read_json(Path(path), text)


def drop_partial_downloads(repo: str) -> None:
    """Remove what an interrupted download of a hub repo left in the cache (huggingface_hub's *.incomplete blobs)."""
    for part in _hub_cache_dir(repo).rglob("*.incomplete"):
        part.unlink(missing_ok=True)


def hub_failure(text: str, exc: Exception) -> str:
    """The sentence for a hub id that could not be fetched."""
    from accapp.models.availability import hub_reachable

    name = type(exc).__name__
    if not hub_reachable() or name in ("LocalEntryNotFoundError", "OfflineModeIsEnabled"):
        return (f"'{shown(text)}' is not in the local Hugging Face cache and the hub cannot be reached from here "
                "(offline, or HF_HUB_OFFLINE=1); download it where there is a network, or give a local folder or .gguf file.")
    if name in ("RepositoryNotFoundError", "GatedRepoError"):
        return f"'{shown(text)}' is not a model this machine may download from the Hugging Face hub (not found, private or gated)."
    if name == "RevisionNotFoundError":
        return f"'{shown(text)}': the hub has no such revision."
    if name == "EntryNotFoundError":
        return f"'{shown(text)}' has no config.json on the hub, so it is not a transformers model."
    return f"'{shown(text)}' could not be fetched from the Hugging Face hub ({name})."


def registry_by_hub_id(repo: str) -> ModelSpec | None:
    """The registry entry that names this hub id, whose facts override what is found."""
    for spec in registry().values():
        if spec.hub_id and spec.hub_id.lower() == repo.lower():
            return spec
    return None


def display_name(text: str, form: str) -> str:
    if form == "hub":
        return split_revision(text)[0].split("/")[-1]
    path = Path(text).expanduser()
    return path.stem if form == "gguf" else (path.resolve().name or text)


def resolve_model(text: str, trust_remote_code: bool = False) -> ModelSpec:
    """The spec of a --model string (any of the four forms), from its config only; UserError for
    anything that is not a causal or masked language model, or cannot be read."""
    if not isinstance(text, str) or not text.strip():
        raise UserError("No model given: name a registry id, a hub id (org/name), a folder or a .gguf file.")
    given = text.strip()
    if len(given) > MAX_MODEL_CHARS:
        raise UserError(f"The model '{shown(given)}' is {len(given):,} characters long; a registry id, hub id, folder "
                        f"or .gguf path is at most {MAX_MODEL_CHARS:,}.")
    given = given.rstrip("/") if len(given) > 1 else given
    form = model_form(given)
    if form == "registry":
        return registry()[given]
    if form == "missing":
        raise UserError(f"No folder or file at '{shown(given)}': a model folder holds config.json, weights and a tokenizer.")
    if form == "unknown":
        known = ", ".join(sorted(registry()))
        raise UserError(f"Unknown model '{shown(given)}': not a registry id ({known}), an existing folder, a .gguf file "
                        "or a hub id of the form org/name.")
    if form == "folder":
        config, source = folder_config(given), {"type": "local", "path": str(Path(given).expanduser().resolve())}
    elif form == "gguf":
        config, source = gguf_config(given, trust_remote_code), {"type": "gguf-file", "path": str(Path(given).expanduser().resolve())}
    else:
        config, source = hub_config(given), {"type": "hub"}
    return remember(spec_from_config(config, given, source, display_name(given, form), trust_remote_code))


def spec_from_config(config: dict, given: str, source: dict | None = None, name: str | None = None,
                     trust_remote_code: bool = False) -> ModelSpec:
    """The spec of a model known by its config alone (kind, hub id and revision; the conventions
    come when its tokenizer loads). Remote code must be asked for; a config that is not a causal or
    masked LM is refused."""
    if config.get("auto_map") and not trust_remote_code:
        raise UserError(f"'{shown(given)}' ships its own model code (auto_map in its config); load it only if you trust it, "
                        "with --trust-remote-code (command line) or trust_remote_code=True (Python).")
    kind = kind_of(config, given)
    source = source or {"type": "hub"}
    repo, revision = split_revision(given) if source["type"] == "hub" else ("", "")
    return ModelSpec(
        id=given, name=name or given, kind=kind, variant="", languages=(), source=source,
        hub_id=repo, start_token="", license="", params=0, given=given, revision=revision,
        trust_remote_code=bool(trust_remote_code), findings={"config": config},
        note="Not in the registry: its conventions are found from the model itself (accapp models --inspect).")
