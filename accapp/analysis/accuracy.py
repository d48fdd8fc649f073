"""Accuracy of the judgment methods over a benchmark run, as DuckDB SQL over the store.

Definitions (Ide et al. 2025 §4-5):

- A row is one pair x method x template x variant; ``correct`` is 1/0 (for the ensembles the
  share of the 10 seeded draws that were right).
- Two rules (``rule``): "strict", the papers' (BLiMP, Ide et al. 2025, Kauf & Ivanova
  2023): right when score_good > score_bad, the default, since every accuracy here is shown beside
  published numbers; and "ties", the project's: right when score_good is higher by more than the
  method's tie tolerance (methods/ties.py; the stored ``correct`` and ``tie`` columns). Ties (equal
  scores under "strict", within the tolerance under "ties") are wrong and are counted (``ties``);
  ensemble rows never count as ties (their "tie" is a 5/10 vote share) and keep their stored share
  under both rules (their votes are the in-template LP and Yes/No verdicts of the project's rule).
- Rows flagged at scoring time (``flag``: "identical", a pair whose two sentences are the same
  after normalisation) are no pairs: left out of every accuracy here (``left_out`` counts them).
- Accuracy of a paradigm = mean of ``correct`` over its rows (for ab_prompting that is the
  mean over both orders, good=A and good=B).
- Overall accuracy = mean over paradigms of the per-paradigm accuracy.
- Accuracy of a phenomenon = mean over its items (rows).
- All accuracies are in percent. ``pairs`` counts pairs (there is one row per pair and
  variant, so a paradigm's pairs = its largest per-variant row count).

The ``template`` argument of the functions here: ``None`` = every template, one row each; a
template id ("1".."5", "-", "judgment", ...) = that one; ``"best"`` = each method's best
template (highest overall accuracy; a tie goes to the lowest id).
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from accapp.errors import UserError
from accapp.store import ENSEMBLE_METHODS, Store

# Sort order of templates: numbered templates numerically, then the rest by name.
TEMPLATE_ORDER = "TRY_CAST(template AS INTEGER) NULLS LAST, template"
NUMERIC_TEMPLATE = "regexp_full_match(template, '[0-9]+')"

# The papers' rule (STRICT) on a row of ``results``: its correct (an ensemble keeps its stored share of
# votes) and whether it is a tie. One home for the summaries below and BASE_CTES' ``ruled``.
STRICT_CORRECT = "CASE WHEN list_contains($ens, method) THEN correct ELSE (score_good > score_bad)::DOUBLE END"
STRICT_TIE = "(NOT list_contains($ens, method) AND score_good = score_bad)"

# The counts every accuracy is made of, per method x template x paradigm x variant of a run, under
# both rules (s: the sum of correct; ties), flagged rows left out: a table computed once a run
# (Store.derived), as a scan of the run's rows is 0.1-0.2 s and one Explore page asks for a dozen.
VARIANT_COUNTS = "variant_counts"
VARIANT_COUNTS_COLUMNS = ("method VARCHAR, template VARCHAR, paradigm VARCHAR, variant VARCHAR, phenomenon VARCHAR, "
                          "n BIGINT, s_strict DOUBLE, s_ties DOUBLE, ties_strict BIGINT, ties_ties BIGINT")
VARIANT_COUNTS_SQL = f"""
    SELECT method, template, paradigm, variant, any_value(phenomenon), count(*),
           sum({STRICT_CORRECT}), sum(correct),
           count(*) FILTER (WHERE {STRICT_TIE}), count(*) FILTER (WHERE tie AND NOT list_contains($ens, method))
    FROM results WHERE model = $model AND benchmark = $benchmark AND coalesce(flag, '') = ''
    GROUP BY method, template, paradigm, variant"""

# Shared CTEs: ruled and sel (rows of the run, for the analyses that need rows), per_variant (the
# counts), per_paradigm, overall (per method x template), chosen (the templates kept: all, one, or
# each method's best). Parameters: $model, $benchmark, $methods (list), $template (NULL, an id, or
# 'best'), $ens (the ensemble method ids), $rule.
BASE_CTES = f"""
ruled AS (
    SELECT * REPLACE (
        CASE WHEN $rule = 'strict' THEN {STRICT_CORRECT} ELSE correct END AS correct,
        CASE WHEN $rule = 'strict' THEN {STRICT_TIE} ELSE tie END AS tie)
    FROM results
    WHERE model = $model AND benchmark = $benchmark AND list_contains($methods, method)
      AND ($template IS NULL OR $template = 'best' OR template = $template)
),
sel AS (SELECT * FROM ruled WHERE coalesce(flag, '') = ''),
per_variant AS (
    SELECT method, template, paradigm, variant, phenomenon, n,
           CASE WHEN $rule = 'strict' THEN s_strict ELSE s_ties END AS s,
           CASE WHEN $rule = 'strict' THEN ties_strict ELSE ties_ties END AS ties
    FROM {VARIANT_COUNTS}
    WHERE model = $model AND benchmark = $benchmark AND list_contains($methods, method)
      AND ($template IS NULL OR $template = 'best' OR template = $template)
),
per_paradigm AS (  -- pairs: one row per pair and variant, so the largest variant count
    SELECT method, template, paradigm, any_value(phenomenon) AS phenomenon, max(n) AS pairs,
           sum(ties)::BIGINT AS ties, sum(n)::BIGINT AS n, sum(s) AS s, sum(s) / sum(n) AS acc
    FROM per_variant GROUP BY method, template, paradigm
),
overall AS (
    SELECT method, template, count(*) AS paradigms, sum(pairs)::BIGINT AS pairs, sum(ties)::BIGINT AS ties, avg(acc) AS acc
    FROM per_paradigm GROUP BY method, template
),
chosen AS (
    SELECT method, template FROM overall WHERE $template IS DISTINCT FROM 'best'
    UNION ALL
    SELECT method, template FROM overall WHERE $template = 'best'
    QUALIFY row_number() OVER (PARTITION BY method ORDER BY acc DESC, {TEMPLATE_ORDER}) = 1
)
"""


STRICT, TIES = "strict", "ties"
RULES = {  # the accuracy rules and their labels on the page
    STRICT: "the papers' rule: right when score(good) > score(bad)",
    TIES: "this project's rule: ties within the method's tolerance counted wrong",
}

AB_METHOD = "ab_prompting"  # the method whose answers ab_prompting() counts (Ide et al. 2025 Table 12)

def base_params(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None,
                template: str | None = None, rule: str = STRICT) -> dict:
    """Validate the filters and return the bound parameters of BASE_CTES."""
    methods = store.check(model, benchmark, methods)
    if template is not None and template != "best":
        store.check(model, benchmark, methods, template=template)
    if rule not in RULES:
        raise UserError(f"Unknown accuracy rule {rule!r}; the rules: {', '.join(RULES)}.")
    store.derived(VARIANT_COUNTS, VARIANT_COUNTS_COLUMNS, VARIANT_COUNTS_SQL, model, benchmark,
                  {"ens": list(ENSEMBLE_METHODS)})
    return {"model": model, "benchmark": benchmark, "methods": methods, "template": template,
            "ens": list(ENSEMBLE_METHODS), "rule": rule}


def left_out(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None) -> pd.DataFrame:
    """Per method and flag: the rows left out of accuracy (flagged pairs). Columns: method, flag, pairs, rows."""
    params = base_params(store, model, benchmark, methods)
    sql = f"""WITH {BASE_CTES}
    SELECT method, flag, count(DISTINCT (paradigm, pair_id)) AS pairs, count(*) AS rows
    FROM ruled WHERE coalesce(flag, '') <> '' GROUP BY method, flag ORDER BY method, flag"""
    return store.query(sql, params)


def accuracy_by_paradigm(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                         template: str | None = None, rule: str = STRICT) -> pd.DataFrame:
    """Per paradigm: model, benchmark, method, template, paradigm, phenomenon, pairs, ties, accuracy (%)."""
    sql = f"""WITH {BASE_CTES}
    SELECT $model AS model, $benchmark AS benchmark, p.method, p.template, p.paradigm, p.phenomenon,
           p.pairs, p.ties, 100 * p.acc AS accuracy
    FROM per_paradigm p JOIN chosen USING (method, template)
    ORDER BY p.method, TRY_CAST(p.template AS INTEGER) NULLS LAST, p.template, p.paradigm"""
    return store.query(sql, base_params(store, model, benchmark, methods, template, rule=rule))


def accuracy_by_phenomenon(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                           template: str | None = None, rule: str = STRICT) -> pd.DataFrame:
    """Per phenomenon (mean over its items): model, benchmark, method, template, phenomenon,
    paradigms, pairs, ties, accuracy (%)."""
    sql = f"""WITH {BASE_CTES}
    SELECT $model AS model, $benchmark AS benchmark, p.method, p.template, p.phenomenon,
           count(*) AS paradigms, sum(p.pairs)::BIGINT AS pairs, sum(p.ties)::BIGINT AS ties,
           100 * sum(p.s) / sum(p.n) AS accuracy
    FROM per_paradigm p JOIN chosen USING (method, template)
    GROUP BY p.method, p.template, p.phenomenon
    ORDER BY p.method, TRY_CAST(p.template AS INTEGER) NULLS LAST, p.template, p.phenomenon"""
    return store.query(sql, base_params(store, model, benchmark, methods, template, rule=rule))


def accuracy_overall(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                     template: str | None = None, rule: str = STRICT) -> pd.DataFrame:
    """Overall (mean over paradigms): model, benchmark, method, template, paradigms, pairs, ties, accuracy (%)."""
    sql = f"""WITH {BASE_CTES}
    SELECT $model AS model, $benchmark AS benchmark, o.method, o.template, o.paradigms, o.pairs, o.ties,
           100 * o.acc AS accuracy
    FROM overall o JOIN chosen USING (method, template)
    ORDER BY o.method, TRY_CAST(o.template AS INTEGER) NULLS LAST, o.template"""
    return store.query(sql, base_params(store, model, benchmark, methods, template, rule=rule))


def template_methods(store: Store, model: str, benchmark: str) -> list[str]:
    """Methods of the run that have numbered templates (Ide et al.'s five per method)."""
    cat = store.catalog()
    sel = cat[(cat.model == model) & (cat.benchmark == benchmark) & cat.template.str.fullmatch(r"[0-9]+")]
    return sorted(set(sel.method))


def template_stats(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None) -> pd.DataFrame:
    """Statistics over the numbered templates of each template method (Ide Tables 3 and 11).

    Columns: model, benchmark, method, n_templates, mean, sd, max, min, best_template.
    ``sd`` is the SAMPLE standard deviation (ddof=1, DuckDB stddev_samp; NaN with one
    template); mean/sd/max/min are over the templates' overall accuracies (%).
    ``best_template`` is the template with the highest overall accuracy (lowest id on a tie).
    Methods without numbered templates are left out.
    """
    wanted = [m for m in store.check(model, benchmark, methods) if m in template_methods(store, model, benchmark)]
    params = base_params(store, model, benchmark, wanted)
    sql = f"""WITH {BASE_CTES},
    numbered AS (SELECT * FROM overall WHERE {NUMERIC_TEMPLATE}),
    best AS (SELECT method, template AS best_template FROM numbered
             QUALIFY row_number() OVER (PARTITION BY method ORDER BY acc DESC, {TEMPLATE_ORDER}) = 1)
    SELECT $model AS model, $benchmark AS benchmark, n.method, count(*) AS n_templates,
           100 * avg(n.acc) AS mean, 100 * stddev_samp(n.acc) AS sd, 100 * max(n.acc) AS max,
           100 * min(n.acc) AS min, any_value(b.best_template) AS best_template
    FROM numbered n JOIN best b USING (method)
    GROUP BY n.method ORDER BY n.method"""
    return store.query(sql, params)


def best_template(store: Store, model: str, benchmark: str, method: str) -> str:
    """The best template of a method (highest overall accuracy; lowest id on a tie).

    For a method with a single template (e.g. "-") that template.
    """
    df = accuracy_overall(store, model, benchmark, [method], template="best")
    if df.empty:
        raise UserError(f"No results for {method} on {benchmark} with {model}.")
    return str(df.template.iloc[0])


def method_summary(store: Store, model: str, benchmark: str, methods: Iterable[str] | str | None = None,
                   rule: str = STRICT) -> pd.DataFrame:
    """Everything the ``report`` command prints, in long format.

    One row per (method, template, phenomenon) with phenomenon "overall" for the overall
    accuracy (mean over paradigms) and the phenomena (mean over items) besides. ``template``
    is each template id, and for methods with numbered templates also
    - "mean": mean over the numbered templates (Ide Table 3), ties summed over them;
    - "sd": sample sd (ddof=1) over the numbered templates, ties summed over them;
    - "max": the best template's row (its overall accuracy is the max over templates, Ide
      Table 11; its phenomena are that template's, as in Ide Fig. 3); ``best_template`` names it.
    Columns: model, benchmark, method, template, best_template, phenomenon, pairs, ties, accuracy (%).
    """
    params = base_params(store, model, benchmark, methods, rule=rule)
    sql = f"""WITH {BASE_CTES},
    per_template AS (
        SELECT method, template, 'overall' AS phenomenon, pairs, ties, acc FROM overall
        UNION ALL
        SELECT method, template, phenomenon, sum(pairs)::BIGINT, sum(ties)::BIGINT, sum(s) / sum(n)
        FROM per_paradigm GROUP BY method, template, phenomenon
    ),
    numbered AS (SELECT * FROM per_template WHERE {NUMERIC_TEMPLATE}),
    best AS (SELECT method, template AS best_template FROM numbered WHERE phenomenon = 'overall'
             QUALIFY row_number() OVER (PARTITION BY method ORDER BY acc DESC, {TEMPLATE_ORDER}) = 1),
    rows AS (
        SELECT method, template, NULL AS best_template, phenomenon, pairs, ties, acc, 0 AS kind FROM per_template
        UNION ALL
        SELECT method, 'mean', NULL, phenomenon, max(pairs), sum(ties)::BIGINT, avg(acc), 1 FROM numbered GROUP BY method, phenomenon
        UNION ALL
        SELECT method, 'sd', NULL, phenomenon, max(pairs), sum(ties)::BIGINT, stddev_samp(acc), 2 FROM numbered GROUP BY method, phenomenon
        UNION ALL
        SELECT n.method, 'max', b.best_template, n.phenomenon, n.pairs, n.ties, n.acc, 3
        FROM numbered n JOIN best b ON n.method = b.method AND n.template = b.best_template
    )
    SELECT $model AS model, $benchmark AS benchmark, method, template, best_template, phenomenon,
           pairs, ties, 100 * acc AS accuracy
    FROM rows
    ORDER BY method, kind, TRY_CAST(template AS INTEGER) NULLS LAST, template,
             phenomenon <> 'overall', phenomenon"""
    return store.query(sql, params)


def ab_prompting(store: Store, model: str, benchmark: str, template: str | None = None) -> pd.DataFrame:
    """A/B prompting by order (Ide App. D.2, Table 12).

    One row per template and variant ("good=A", "good=B", and "both" = the mean of the two
    orders' accuracies, the method's accuracy), plus template "mean" rows averaging the
    templates. Columns: model, benchmark, template, variant, pairs, ties, accuracy (% , mean
    over paradigms), share_A (% of rows whose prediction is "A"; ties count in the denominator).
    """
    params = base_params(store, model, benchmark, [AB_METHOD], template)
    sql = f"""WITH {BASE_CTES},
    pv AS (
        SELECT template, variant, paradigm, count(*) AS pairs, count(*) FILTER (WHERE tie) AS ties,
               avg(correct) AS acc, count(*) FILTER (WHERE prediction = 'A') AS n_a, count(*) AS n
        FROM sel JOIN chosen USING (method, template) GROUP BY template, variant, paradigm
    ),
    tv AS (
        SELECT template, variant, sum(pairs)::BIGINT AS pairs, sum(ties)::BIGINT AS ties, avg(acc) AS acc,
               sum(n_a) / sum(n) AS share_a
        FROM pv GROUP BY template, variant
    ),
    tb AS (
        SELECT template, 'both' AS variant, max(pairs) AS pairs, sum(ties)::BIGINT AS ties, avg(acc) AS acc,
               sum(share_a) / count(*) AS share_a
        FROM tv GROUP BY template
    ),
    allrows AS (SELECT * FROM tv UNION ALL SELECT * FROM tb),
    withmean AS (
        SELECT template, variant, pairs, ties, acc, share_a, 0 AS kind FROM allrows
        UNION ALL
        SELECT 'mean', variant, max(pairs), sum(ties)::BIGINT, avg(acc), avg(share_a), 1 FROM allrows
        WHERE {NUMERIC_TEMPLATE} GROUP BY variant
    )
    SELECT $model AS model, $benchmark AS benchmark, template, variant, pairs, ties,
           100 * acc AS accuracy, 100 * share_a AS share_A
    FROM withmean ORDER BY kind, TRY_CAST(template AS INTEGER) NULLS LAST, template, variant = 'both', variant"""
    return store.query(sql, params)


ENSEMBLE_SETTINGS = {"ens_p_only": "p_only", "ens_mix_p3": "mix_p3", "ens_mix_l3": "mix_l3", "ens_l_only": "l_only"}


def ensembles(store: Store, model: str, benchmark: str) -> pd.DataFrame:
    """Ide Table 5: the four voting ensembles and, beside them, the oracle (best template) of
    in_template_lp and yes_no_prob_comp.

    Columns: model, benchmark, setting (p_only, mix_p3, mix_l3, l_only, in_template_lp_oracle,
    yes_no_prob_comp_oracle: the ids of the published table), method, template, accuracy (%).
    Settings whose method the run lacks are left out.
    """
    present = set(store.methods(model, benchmark))
    parts = []
    ens = [m for m in ENSEMBLE_SETTINGS if m in present]
    if ens:
        df = accuracy_overall(store, model, benchmark, ens)
        df["setting"] = df.method.map(ENSEMBLE_SETTINGS)
        df["order"] = df.method.map(list(ENSEMBLE_SETTINGS).index)
        parts.append(df)
    for i, m in enumerate(("in_template_lp", "yes_no_prob_comp")):
        if m in present:
            df = accuracy_overall(store, model, benchmark, [m], template="best")
            df["setting"] = f"{m}_oracle"
            df["order"] = 4 + i
            parts.append(df)
    cols = ["model", "benchmark", "setting", "method", "template", "accuracy"]
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts, ignore_index=True).sort_values("order")
    return out[cols].reset_index(drop=True)


def correlation(fn, x, y) -> tuple[float, float]:
    """(r, p) of a scipy.stats correlation, NaN where it is undefined (fewer than 3 points,
    or a constant variable)."""
    import warnings

    import numpy as np

    if len(x) > 2 and np.ptp(x) > 0 and np.ptp(y) > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fn(x, y)
        return float(res.statistic), float(res.pvalue)
    return float("nan"), float("nan")
