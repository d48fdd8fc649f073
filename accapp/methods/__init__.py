"""The method registry: every judgment method by id, in display order.

Causal-LM methods and the masked-LM PLL variants live in one table; `resolve` scopes
'all' to the methods a model kind can run and refuses the others with a message. What is said of
each method (name, family, formula, meaning, stage, pass group), the headline method and the tabs'
presets have one home, data/methods.json, read by accapp.methods.descriptor.
"""

from __future__ import annotations

from functools import lru_cache

from accapp.errors import UserError, check_method_count, name_some
from accapp.methods.descriptor import (  # noqa: F401 - the registry's API
    Descriptor,
    context_families,
    context_note,
    describe,
    descriptors,
    families,
    headline_methods,
    pass_group_order,
    presets,
    split_stages,
    stage_families,
    stage_texts,
    uses_context,
)


@lru_cache(maxsize=1)
def all_methods() -> dict:
    """{id: method object} in the descriptors' (display) order; a method without a descriptor, or a
    descriptor without a method, raises RuntimeError (both must be added together)."""
    from accapp.methods.ensembles import ensemble_methods
    from accapp.methods.pll import PLL_METHODS
    from accapp.methods.prompting import prompting_methods
    from accapp.methods.readout import readout_methods

    coded = {m.id: m for m in readout_methods() + prompting_methods() + ensemble_methods() + list(PLL_METHODS)}
    described = descriptors()
    if set(coded) != set(described):
        raise RuntimeError(f"methods without a descriptor in data/methods.json: {sorted(set(coded) - set(described))}; "
                           f"descriptors without a method: {sorted(set(described) - set(coded))}")
    return {i: coded[i] for i in described}


def plain(method_id: str) -> dict:
    """{plain, unit, rule} of a method: its meaning in a line, its score's unit, how its judgments
    become one vote (an unknown id: none, in log units, one judgment)."""
    d = descriptors().get(method_id)
    return {"plain": d.plain, "unit": d.unit, "rule": d.rule} if d else {"plain": "", "unit": "log", "rule": "one judgment"}


def display_name(method_id: str) -> str:
    """A method's name as every tab shows it ("LP", "In-template LP"); an unknown id as it is."""
    d = descriptors().get(method_id)
    return d.name if d else str(method_id)


def headline(kind: str) -> str:
    """The headline method of a model kind (the probe's verdict on top, its first benchmark accuracy)."""
    return headline_methods()[kind]


def method_ids(kind: str | None = None) -> list[str]:
    """Every method id a model kind can run (None: every id), in display order."""
    return [i for i, d in descriptors().items() if kind is None or d.kind == kind]


def string_method_ids(kind: str | None = None) -> list[str]:
    """The ids of the methods that score one string on its own (Method.per_string), in display order:
    the ones that score single labelled sentences."""
    return [i for i, m in all_methods().items() if m.per_string and (kind is None or m.kind == kind)]


def resolve_strings(ids, kind: str | None = "causal") -> list:
    """Method objects for scoring single strings: 'all' or None = every per-string method of the kind;
    ids of methods that need a pair raise UserError in one sentence."""
    if parse_ids(ids) is None:
        return [all_methods()[i] for i in string_method_ids(kind)]
    found = resolve(ids, kind)
    paired = [m.id for m in found if not m.per_string]
    if paired:
        raise UserError(f"Method(s) {name_some(paired)} compare the two sentences of a pair and cannot score a single "
                        f"sentence; the methods that can: {', '.join(string_method_ids(kind))}.")
    return found


def parse_ids(ids) -> list[str] | None:
    """Method ids from a list or a comma-separated string, duplicates dropped; None means all.
    More than MAX_METHOD_IDS ids (repeats included), or anything but a string or a list, raise UserError."""
    if hasattr(ids, "tolist"):  # a pandas Series or numpy array of ids (the Python API)
        ids = ids.tolist()
    if ids is None or ids == "all" or (isinstance(ids, (list, tuple)) and list(ids) == ["all"]):
        return None
    if isinstance(ids, str):
        ids = ids.split(",")
    if not isinstance(ids, (list, tuple, set, frozenset)):
        raise UserError("Methods must be a list of method ids or a comma-separated string.")
    check_method_count(len(ids))
    return list(dict.fromkeys(str(i).strip() for i in ids if i is not None and str(i).strip()))


def resolve(ids, kind: str | None = "causal") -> list:
    """Method objects for ids ('all' or None = every method of that model kind).

    Unknown ids, and ids the model kind cannot run, raise UserError.
    """
    table = all_methods()
    wanted = parse_ids(ids)
    if wanted is None:
        return [m for m in table.values() if kind is None or m.kind == kind]
    unknown = [i for i in wanted if i not in table]
    if unknown:
        known = ", ".join(i for i in table if kind is None or table[i].kind == kind)
        raise UserError(f"Unknown method(s): {name_some(unknown)}. Known methods: {known}.")
    if not wanted:
        raise UserError("No method selected.")
    if kind is not None:
        wrong = [i for i in wanted if table[i].kind != kind]
        if wrong:
            need = "a masked LM" if kind == "causal" else "a causal LM"
            raise UserError(f"Method(s) {name_some(wrong)} need {need}; pick another model or other methods.")
    return [table[i] for i in wanted]


def for_model(model_id: str, ids, runnable_only: bool = False):
    """(the model's spec, the method ids a request runs with it): ids_for its kind. One call from a
    request's model id down to its spec, so the check never climbs back up from the model registry."""
    from accapp.models import get_spec

    spec = get_spec(model_id)
    return spec, ids_for(spec.kind, ids, runnable_only)


def ids_for(kind: str, ids, runnable_only: bool = False) -> list[str]:
    """The method ids a request runs with a model of this kind: None, 'all' or ['all'] = every method
    of the kind; a list or a comma-separated string otherwise. Unknown ids, or ids the kind cannot
    run, raise UserError; runnable_only: those the kind cannot run are left out instead (all of the
    kind's own where none is left)."""
    wanted = parse_ids(ids)
    if runnable_only:
        wanted = [m for m in wanted or [] if m in method_ids(kind)] or None
    if wanted is None:
        return method_ids(kind)
    if not wanted:
        raise UserError("Pick at least one method.")
    resolve(wanted, kind)
    return wanted
