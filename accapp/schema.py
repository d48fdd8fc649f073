"""Facts shared by the runner that writes results, the store that reads them, the methods and
the app: the result schema and the ensemble ids (the built-in benchmarks: accapp/benchmarks.py). Plain data, no imports
of the project, so every layer may read it."""

from __future__ import annotations

# The columns of a results file (one row per pair x method x template x answer order), with
# the types the store's view guarantees. `correct` is 0/1, or for an ensemble the share of its
# seeded draws that were right; `prediction` is what a prompt method's model answered; `flag` is
# "identical" for a pair whose sentences are the same after normalisation (no pair: left out of
# accuracy), else empty.
RESULT_COLUMNS: dict[str, str] = {
    "model": "VARCHAR", "benchmark": "VARCHAR", "paradigm": "VARCHAR", "phenomenon": "VARCHAR",
    "pair_id": "VARCHAR", "method": "VARCHAR", "template": "VARCHAR", "variant": "VARCHAR",
    "score_good": "DOUBLE", "score_bad": "DOUBLE", "correct": "DOUBLE", "tie": "BOOLEAN",
    "prediction": "VARCHAR", "len_good": "INTEGER", "len_bad": "INTEGER", "len_diff": "INTEGER",
    "good": "VARCHAR", "bad": "VARCHAR", "flag": "VARCHAR",
}
ROW_COLUMNS = list(RESULT_COLUMNS)

# The columns of a results file of single labelled sentences (one row per sentence x method): `label`
# is 1 for an acceptable sentence, 0 for one that is not; `score` is the method's score of the sentence
# alone, in `unit` (the method's, "log" or "log/token"); `len` its tokens.
SENTENCE_RESULT_COLUMNS: dict[str, str] = {
    "model": "VARCHAR", "benchmark": "VARCHAR", "paradigm": "VARCHAR", "phenomenon": "VARCHAR",
    "sentence_id": "VARCHAR", "label": "TINYINT", "method": "VARCHAR", "score": "DOUBLE", "unit": "VARCHAR",
    "len": "INTEGER", "sentence": "VARCHAR",
}
SENTENCE_ROW_COLUMNS = list(SENTENCE_RESULT_COLUMNS)

# Ide et al. 2025 §6's voting ensembles, in display order (their settings: methods/formulas.py).
ENSEMBLE_METHODS = ("ens_p_only", "ens_mix_p3", "ens_mix_l3", "ens_l_only")


# A pair whose two sentences are the same after the project's normalisation (errors.validate_sentence:
# surrounding whitespace stripped; the Probe tab's warning, service/verdicts.warnings, uses the same)
# is no pair: every method can only tie. It is scored and shown, flagged, and left out of accuracy.
FLAG_IDENTICAL = "identical"
IDENTICAL_WARNING = ("The two sentences are identical: every method can only tie, and no verdict means anything "
                     "(flagged \"identical\", left out of accuracy).")


def normalised(text) -> str:
    """A sentence as the project compares it: surrounding whitespace stripped (errors.validate_sentence)."""
    return str(text).strip()


def pair_flag(good, bad) -> str:
    """FLAG_IDENTICAL for a pair whose sentences are the same after normalisation, else ''."""
    return FLAG_IDENTICAL if normalised(good) == normalised(bad) else ""


def duplicate_pairs(pairs) -> tuple[int, int]:
    """(pairs that repeat an earlier pair, distinct pairs that occur more than once) among (good, bad)
    pairs, compared after normalisation."""
    seen: dict[tuple[str, str], int] = {}
    for good, bad in pairs:
        key = (normalised(good), normalised(bad))
        seen[key] = seen.get(key, 0) + 1
    return sum(n - 1 for n in seen.values()), sum(1 for n in seen.values() if n > 1)
