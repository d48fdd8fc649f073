"""Paradigm groupings of Ide et al. 2025 §6: word-shuffling paradigms (Fig. 4) and BLiMP's
subject-verb agreement paradigms by attractor type (Fig. 5).

Word-shuffling: a paradigm is word-shuffling when every one of its pairs has the same bag of
lower-cased words in the good and the bad sentence. Words here are word and punctuation
tokens (WORD_PATTERN, RE2 syntax): a Han character on its own (Chinese: one character a
word), a run of letters / digits / marks, or any other non-space character on its own. On the
full BLiMP this gives 12 paradigms, with human accuracy 83.12 on them vs 89.74 on the other 55
(Ide et al. report 83.1 vs 89.7); splitting on whitespace only would give 6. On CLiMP,
one character a word flags one paradigm, head_final_clause (the bad sentence moves the head
noun: 王梦佩服着陈晶看过的蜡烛。 / *王梦佩服着蜡烛陈晶看过的。), although Ide et al. say CLiMP has
no word-shuffling paradigms (split on whitespace, a Chinese sentence is a single token).

Attractors (a benchmark's descriptor lists them, accapp/data/benchmarks.json; BLiMP's UIDs, checked
against the data files):
  none:            regular_plural_subject_verb_agreement_1/_2, irregular_plural_subject_verb_agreement_1/_2
  relational_noun: distractor_agreement_relational_noun   ("The sisters of Cheryl bake")
  relative_clause: distractor_agreement_relative_clause   ("The sisters who met Cheryl bake")
"""

from __future__ import annotations

from typing import Iterable

import duckdb
import pandas as pd

from accapp.analysis.accuracy import BASE_CTES, base_params
from accapp.benchmarks import describe
from accapp.store import Store

WORD_PATTERN = r"\p{Han}|[\p{L}\p{N}\p{M}]+|[^\p{L}\p{N}\p{M}\s]"

ATTRACTOR_ORDER = ("none", "relational_noun", "relative_clause")

_SHUFFLE_SELECT = """
    SELECT paradigm, count(*) AS pairs,
           bool_and(list_sort(regexp_extract_all(lower(good), $pattern))
                    = list_sort(regexp_extract_all(lower(bad), $pattern))) AS word_shuffling
    FROM src GROUP BY paradigm ORDER BY paradigm"""


def word_shuffling(pairs: pd.DataFrame) -> pd.DataFrame:
    """Word-shuffling flag per paradigm of a pairs table (columns paradigm, good, bad).

    Returns paradigm, pairs, word_shuffling (bool). Runs in its own throw-away DuckDB connection.
    """
    con = duckdb.connect(":memory:")
    try:
        con.register("pairs_in", pairs[["paradigm", "good", "bad"]])
        return con.execute(f"WITH src AS (SELECT * FROM pairs_in) {_SHUFFLE_SELECT}", {"pattern": WORD_PATTERN}).df()
    finally:
        con.close()


# The flags of a run's paradigms, computed once a run (Store.derived): reading every sentence of a
# whole benchmark takes 0.4 s, and an Explore page asks twice.
SHUFFLING = "paradigm_shuffling"


def _shuffling_table(store: Store, model: str, benchmark: str) -> str:
    """The name of the table that holds the run's word-shuffling flags (model, benchmark, paradigm,
    pairs, word_shuffling), filled for this run."""
    select = f"""WITH src AS (SELECT DISTINCT paradigm, pair_id, good, bad FROM results
                             WHERE model = $model AND benchmark = $benchmark)
    {_SHUFFLE_SELECT}"""
    return store.derived(SHUFFLING, "paradigm VARCHAR, pairs BIGINT, word_shuffling BOOLEAN", select, model, benchmark,
                         {"pattern": WORD_PATTERN})


def word_shuffling_paradigms(store: Store, model: str, benchmark: str) -> pd.DataFrame:
    """Word-shuffling flag per paradigm, from the pairs of the run itself (paradigm, pairs, word_shuffling).

    With a sampled run the flag is about the sampled pairs (a paradigm can look shuffling in a
    sample and not in full); for BLiMP ``published_blimp_paradigms`` has the full-data flag.
    """
    table = _shuffling_table(store, model, benchmark)
    return store.query(f"SELECT paradigm, pairs, word_shuffling FROM {table} "
                       "WHERE model = $model AND benchmark = $benchmark ORDER BY paradigm",
                       {"model": model, "benchmark": benchmark})


def human_table(benchmark: str) -> str | None:
    """The published table of a benchmark's human accuracy per paradigm (its descriptor's), or None."""
    b = describe(benchmark)
    return b.human.get("table") if b and b.human.get("kind") == "per_paradigm" else None


def attractors(benchmark: str) -> dict[str, str]:
    """A benchmark's subject-verb agreement paradigms by attractor type (its descriptor's; {} for none)."""
    b = describe(benchmark)
    return dict(b.attractors) if b else {}


def _human_cte(store: Store, benchmark: str) -> str:
    """SQL of a CTE body giving (paradigm, human_accuracy %) where the benchmark publishes it per paradigm."""
    table = human_table(benchmark)
    if table and store.has_published(table):
        return f"SELECT paradigm, 100 * human_accuracy AS human_accuracy FROM published_{table}"
    return "SELECT CAST(NULL AS VARCHAR) AS paradigm, CAST(NULL AS DOUBLE) AS human_accuracy WHERE false"


def _typed_paradigms_sql(store: Store, model: str, benchmark: str) -> str:
    """CTEs after BASE_CTES: flags (word-shuffling per paradigm), human, typed (per paradigm x method x template)."""
    return f""",
    flags AS (SELECT paradigm, word_shuffling FROM {_shuffling_table(store, model, benchmark)}
              WHERE model = $model AND benchmark = $benchmark),
    human AS ({_human_cte(store, benchmark)}),
    typed AS (
        SELECT p.method, p.template, p.paradigm, p.phenomenon, f.word_shuffling, p.pairs, 100 * p.acc AS accuracy,
               h.human_accuracy
        FROM per_paradigm p JOIN chosen USING (method, template)
        LEFT JOIN flags f USING (paradigm) LEFT JOIN human h USING (paradigm)
    )"""


def accuracy_by_paradigm_type(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                              template: str | None = "best") -> pd.DataFrame:
    """Per paradigm, flagged word-shuffling or not (Ide Fig. 4: one dot per paradigm).

    Columns: model, benchmark, method, template, paradigm, phenomenon, word_shuffling, pairs,
    accuracy (%), human_accuracy (% from Warstadt et al. 2020 for BLiMP, else NaN).
    """
    params = base_params(store, model, benchmark, methods, template)
    sql = f"""WITH {BASE_CTES}{_typed_paradigms_sql(store, model, benchmark)}
    SELECT $model AS model, $benchmark AS benchmark, method, template, paradigm, phenomenon, word_shuffling, pairs,
           accuracy, human_accuracy
    FROM typed ORDER BY method, TRY_CAST(template AS INTEGER) NULLS LAST, template, paradigm"""
    return store.query(sql, params)


def paradigm_type_summary(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                          template: str | None = "best") -> pd.DataFrame:
    """Mean over paradigms of each type (Ide Fig. 4 bars; §6 text 71.6 vs 87.9, humans 83.1 vs 89.7).

    Columns: model, benchmark, method, template, word_shuffling (True first), paradigms,
    pairs, accuracy (% mean over the type's paradigms), human_accuracy (% mean over the same
    paradigms, BLiMP only).
    """
    params = base_params(store, model, benchmark, methods, template)
    sql = f"""WITH {BASE_CTES}{_typed_paradigms_sql(store, model, benchmark)}
    SELECT $model AS model, $benchmark AS benchmark, method, template, word_shuffling, count(*) AS paradigms,
           sum(pairs)::BIGINT AS pairs, avg(accuracy) AS accuracy, avg(human_accuracy) AS human_accuracy
    FROM typed GROUP BY method, template, word_shuffling
    ORDER BY method, TRY_CAST(template AS INTEGER) NULLS LAST, template, word_shuffling DESC"""
    return store.query(sql, params)


def human_by_paradigm_type(store: Store, benchmark: str, flags: pd.DataFrame) -> pd.DataFrame:
    """A benchmark's human accuracy (%) by paradigm type (BLiMP's), for flags (paradigm, word_shuffling)
    from any source (e.g. :func:`word_shuffling` over the full data). Returns word_shuffling (True
    first), paradigms, human_accuracy (mean over paradigms)."""
    table = human_table(benchmark)
    if not table or not store.has_published(table):
        return pd.DataFrame(columns=["word_shuffling", "paradigms", "human_accuracy"])
    sql = f"""SELECT f.word_shuffling, count(*) AS paradigms, avg(100 * h.human_accuracy) AS human_accuracy
             FROM published_{table} h
             JOIN (SELECT unnest($paradigms) AS paradigm, unnest($flags) AS word_shuffling) f USING (paradigm)
             GROUP BY f.word_shuffling ORDER BY f.word_shuffling DESC"""
    return store.query(sql, {"paradigms": [str(p) for p in flags.paradigm],
                             "flags": [bool(f) for f in flags.word_shuffling]})


def sv_agreement_by_attractor(store: Store, model: str, benchmark: str,
                              methods: Iterable[str] | str | None = None, template: str | None = "best",
                              per_paradigm: bool = False) -> pd.DataFrame:
    """Subject-verb agreement accuracy by attractor type (Ide Fig. 5), over the paradigms the benchmark's
    descriptor groups by attractor (BLiMP's six).

    Columns: model, benchmark, method, template, attractor (none / relational_noun /
    relative_clause), paradigms, pairs, accuracy (% mean over the group's paradigms),
    human_accuracy (%, same mean; where published per paradigm). With ``per_paradigm`` one row per
    paradigm instead (``paradigm`` in place of ``paradigms``). Empty when the run has none of them.
    """
    groups = attractors(benchmark)
    params = base_params(store, model, benchmark, methods, template) | {
        "sv_paradigms": list(groups), "sv_attractors": list(groups.values()),
        "order": list(ATTRACTOR_ORDER)}
    ctes = f"""WITH {BASE_CTES},
    attractors AS (SELECT unnest($sv_paradigms) AS paradigm, unnest($sv_attractors) AS attractor),
    human AS ({_human_cte(store, benchmark)}),
    per AS (
        SELECT p.method, p.template, a.attractor, p.paradigm, p.pairs, 100 * p.acc AS accuracy, h.human_accuracy,
               list_position($order, a.attractor) AS ord
        FROM per_paradigm p JOIN chosen USING (method, template) JOIN attractors a USING (paradigm)
        LEFT JOIN human h USING (paradigm)
    )"""
    if per_paradigm:
        sql = ctes + """
    SELECT $model AS model, $benchmark AS benchmark, method, template, attractor, paradigm, pairs, accuracy, human_accuracy
    FROM per ORDER BY method, TRY_CAST(template AS INTEGER) NULLS LAST, template, ord, paradigm"""
    else:
        sql = ctes + """
    SELECT $model AS model, $benchmark AS benchmark, method, template, attractor, count(*) AS paradigms,
           sum(pairs)::BIGINT AS pairs, avg(accuracy) AS accuracy, avg(human_accuracy) AS human_accuracy
    FROM per GROUP BY method, template, attractor, ord
    ORDER BY method, TRY_CAST(template AS INTEGER) NULLS LAST, template, ord"""
    return store.query(sql, params)
