"""The models a visitor can pick, as the app shows them: what the UI may know of models.

The tabs read the model registry through here (ids, names, kinds, whether one loads offline), never
accapp.models itself (issue 33: the UI only shows; tests/test_import_direction.py holds it).
"""

from __future__ import annotations

from accapp.engine import convention_label  # noqa: F401 - the label of a run's convention, for Explore
from accapp.models import DEFAULT_MODEL, allow_any_model, extra_models, get_spec, registry  # noqa: F401 - the UI's lookups
from accapp.models.availability import availability


def model_choices() -> list[tuple[str, str]]:
    """(label, id) of every registry model, embedded (offline) ones first, then the Space owner's
    allowlist (ACCAPP_EXTRA_MODELS, as given)."""
    specs = sorted(registry().values(), key=lambda s: (not s.embedded, s.kind != "causal", s.id))
    out = []
    for s in specs:
        ok, where = availability(s)
        out.append((f"{'' if ok else '⛔ '}{s.name} · {s.kind} LM · {where}", s.id))
    out += [(f"{m} · added by this Space's owner", m) for m in extra_models() if m not in registry()]
    return out
