"""The method registry: every judgment method by id, in display order."""

from __future__ import annotations

from functools import lru_cache

from accapp.errors import UserError


@lru_cache(maxsize=1)
def all_methods() -> dict:
    from accapp.methods.ensembles import ensemble_methods
    from accapp.methods.prompting import prompting_methods
    from accapp.methods.readout import readout_methods

    methods = readout_methods() + prompting_methods() + ensemble_methods()
    return {m.id: m for m in methods}


def method_ids() -> list[str]:
    return list(all_methods())


def resolve(ids) -> list:
    """Method objects for ids ('all' or None = every method); unknown ids raise UserError."""
    table = all_methods()
    if ids is None or ids == "all" or ids == ["all"]:
        return list(table.values())
    if isinstance(ids, str):
        ids = [i.strip() for i in ids.split(",") if i.strip()]
    unknown = [i for i in ids if i not in table]
    if unknown:
        raise UserError(f"Unknown method(s): {', '.join(unknown)}. Known methods: {', '.join(table)}.")
    if not ids:
        raise UserError("No method selected.")
    return [table[i] for i in ids]
