"""The method registry: every judgment method by id, in display order.

Causal-LM methods and the masked-LM PLL variants live in one table; `resolve` scopes
'all' to the methods a model kind can run and refuses the others with a message.
"""

from __future__ import annotations

from functools import lru_cache

from accapp.errors import UserError


@lru_cache(maxsize=1)
def all_methods() -> dict:
    from accapp.methods.ensembles import ensemble_methods
    from accapp.methods.pll import PLL_METHODS
    from accapp.methods.prompting import prompting_methods
    from accapp.methods.readout import readout_methods

    methods = readout_methods() + prompting_methods() + ensemble_methods() + list(PLL_METHODS)
    return {m.id: m for m in methods}


def kind_of(method) -> str:
    return "masked" if method.family == "pll" else "causal"


def method_ids(kind: str | None = None) -> list[str]:
    return [i for i, m in all_methods().items() if kind is None or kind_of(m) == kind]


def resolve(ids, kind: str | None = "causal") -> list:
    """Method objects for ids ('all' or None = every method of that model kind).

    Unknown ids, and ids the model kind cannot run, raise UserError.
    """
    table = all_methods()
    if ids is None or ids == "all" or ids == ["all"]:
        return [m for m in table.values() if kind is None or kind_of(m) == kind]
    if isinstance(ids, str):
        ids = [i.strip() for i in ids.split(",") if i.strip()]
    unknown = [i for i in ids if i not in table]
    if unknown:
        raise UserError(f"Unknown method(s): {', '.join(unknown)}. Known methods: {', '.join(table)}.")
    if not ids:
        raise UserError("No method selected.")
    if kind is not None:
        wrong = [i for i in ids if kind_of(table[i]) != kind]
        if wrong:
            need = "a masked LM" if kind == "causal" else "a causal LM"
            raise UserError(f"Method(s) {', '.join(wrong)} need {need}; pick another model or other methods.")
    return [table[i] for i in ids]
