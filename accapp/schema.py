"""Facts shared by the runner that writes results, the store that reads them, the methods and
the app: the result schema and the ensemble ids (the built-in benchmarks: accapp/benchmarks.py). Plain data, no imports
of the project, so every layer may read it."""

from __future__ import annotations

# The columns of a results file (one row per pair x method x template x answer order), with
# the types the store's view guarantees. `correct` is 0/1, or for an ensemble the share of its
# seeded draws that were right; `prediction` is what a prompt method's model answered.
RESULT_COLUMNS: dict[str, str] = {
    "model": "VARCHAR", "benchmark": "VARCHAR", "paradigm": "VARCHAR", "phenomenon": "VARCHAR",
    "pair_id": "VARCHAR", "method": "VARCHAR", "template": "VARCHAR", "variant": "VARCHAR",
    "score_good": "DOUBLE", "score_bad": "DOUBLE", "correct": "DOUBLE", "tie": "BOOLEAN",
    "prediction": "VARCHAR", "len_good": "INTEGER", "len_bad": "INTEGER", "len_diff": "INTEGER",
    "good": "VARCHAR", "bad": "VARCHAR",
}
ROW_COLUMNS = list(RESULT_COLUMNS)

# Ide et al. 2025 §6's voting ensembles, in display order (their settings: methods/formulas.py).
ENSEMBLE_METHODS = ("ens_p_only", "ens_mix_p3", "ens_mix_l3", "ens_l_only")
