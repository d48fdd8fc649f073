"""Where a result came from: the model and the SHA-256 of its weight files, the app's and the
libraries' versions, dtype, quantization, device and GPU, scoring convention and the time.
The same record goes into a probe's export and a
scored file's sidecar; :func:`ran_on` is the short form shown next to every result."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import platform
import threading
from pathlib import Path

from accapp.files import file_sha256
from accapp.models.device import describe_device
from accapp.models.loading import weight_files

_HASHES: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256; one entry a weight file
_HASH_LOCK = threading.Lock()


def sha256_of(path: Path) -> str:
    """The file's SHA-256 in hex, computed once per (path, size, modification time)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _HASH_LOCK:
        if key in _HASHES:
            return _HASHES[key]
    digest = file_sha256(path)
    with _HASH_LOCK:
        _HASHES[key] = digest
    return digest


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def conventions_found(spec) -> dict | None:
    """What was found from a model the registry does not list (accapp.models.inspect): the start
    token, base or instruct and the answer ids, each with where it came from; None for a registry model."""
    found = spec.findings.get("found") if not spec.in_registry else None
    if not found:
        return None
    out = {k: v for k, v in found.items() if k != "answers"}
    out["answers"] = {name: {a: f["id"] for a, f in answers.items()} for name, answers in found.get("answers", {}).items()}
    out["used"] = {"start_token": spec.start_token, "variant": spec.variant, "languages": list(spec.languages) or "unknown"}
    return out


def model_origin(lm) -> dict:
    """For a model not in the registry: the id or path as given, where it was read from, and the
    hub revision asked for and the commit it resolved to (the weights' SHA-256 sit beside)."""
    spec = lm.spec
    if spec.in_registry:
        return {}
    return {
        "model_given": spec.given,
        "model_source": spec.source.get("type"),
        "model_path": spec.source.get("path"),
        "revision": spec.revision or None,
        "revision_resolved": getattr(lm.model.config, "_commit_hash", None) if spec.source.get("type") == "hub" else None,
        "trust_remote_code": spec.trust_remote_code,
        "conventions_found": conventions_found(spec),
    }


def ran_on(engine) -> dict | None:
    """Where results are computed: {device, gpu, dtype, quantization, text} ("CPU · fp32",
    "NVIDIA A10G (CUDA) · bf16 · 4-bit NF4"), from accapp.models.device.describe_device; shown next
    to every result, and part of the provenance record. None for an engine without a loaded model."""
    lm = getattr(engine, "lm", None)
    if lm is None or not hasattr(lm, "device"):
        return None
    where = describe_device(lm)
    place = f"{where['gpu']} (CUDA)" if where["gpu"] else where["device"].upper()
    quant = {"nf4": "4-bit NF4"}.get(where["quantization"], where["quantization"])
    scorer = getattr(engine, "scorer", None)
    return {"device": where["device"], "gpu": where["gpu"], "dtype": where["dtype"], "quantization": where["quantization"],
            # sequences a forward pass takes (strings; a masked LM's masked copies): accapp/scoring/pass_size.py
            "batch_size": getattr(scorer, "batch_size", None),
            "text": " · ".join(x for x in (place, where["dtype"], quant) if x)}


def provenance(engine) -> dict:
    """The provenance record of results computed with this engine, now."""
    from accapp.version import __version__

    lm = engine.lm
    files = weight_files(lm)
    where = describe_device(lm)
    return {
        "model_id": lm.spec.id,
        "model_name": lm.spec.name,
        "hub_id": lm.spec.hub_id or None,
        "model_kind": lm.spec.kind,
        **model_origin(lm),
        "weights": [{"file": p.name, "bytes": p.stat().st_size, "sha256": sha256_of(p)} for p in files],
        "dtype": lm.dtype,
        "quantization": lm.quantization,
        "device": lm.device,
        "gpu": where["gpu"],
        "attention": where["attention"],
        "convention": engine.convention.id,
        "app": "Acceptability Explorer (accapp)",
        "app_version": __version__,
        "torch_version": _version("torch"),
        "transformers_version": _version("transformers"),
        "python_version": platform.python_version(),
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
