"""A context before the sentences, as the probe reports it: the context itself, which of the
judged methods conditioned on it and which read their templates without it (the families'
choice: accapp/methods/data/methods.json's `context`; how the model sees it:
accapp/scoring/context.py)."""

from __future__ import annotations

from accapp.errors import check_context  # noqa: F401 - the service's door to the check (ui/links.py)
from accapp.methods import context_families, context_note, describe, descriptors


def context_record(context: str, method_ids) -> dict | None:
    """{"text", "conditioned": [method ids], "not_applied": [method ids], "note"} for a probe's context
    and the methods it judged with, or None without a context."""
    if not context:
        return None
    known = descriptors()
    ids = [m for m in dict.fromkeys(method_ids) if m in known]
    used = [m for m in ids if describe(m).family in context_families()]
    return {"text": context, "conditioned": used, "not_applied": [m for m in ids if m not in used],
            "note": context_note()}


def attach(report: dict, context: str) -> dict:
    """The report with its "context" (context_record over its verdicts' methods; None without one)."""
    report["context"] = context_record(context, [v["method"] for v in report.get("verdicts") or []])
    return report
