"""The models and methods a visitor can pick, as the app shows them: what the UI may know of them.

The tabs read the model registry through here (ids, names, kinds, whether one loads offline), never
accapp.models itself (the UI only shows; tests/test_import_direction.py holds it), and what
they say of a method (name, family, stage, presets, the headline method) from its descriptor
(accapp/methods/data/methods.json).
"""

from __future__ import annotations

from accapp.engine import convention_label  # noqa: F401 - the label of a run's convention, for Explore
from accapp.methods import describe, descriptors, families, headline, method_ids, presets, stage_texts  # noqa: F401 - the UI's lookups
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


# ------------------------------------------------------------------------------------------ methods
def family_title(family: str) -> str:
    """A family as the page titles it ("In-template (Ide et al. 2025)"); an unknown one as it is."""
    return families().get(family, {}).get("title", family)


def stage_text(stage: str) -> str:
    """A probe stage in the words the page uses while it computes; an unknown one as it is."""
    return stage_texts().get(stage, stage)


def preset(name: str, kind: str) -> list[str]:
    """A preset's method ids that a model kind can run ('quick', 'file', 'prompt'), in display order."""
    wanted = set(presets()[name])
    return [i for i in method_ids(kind) if i in wanted]
