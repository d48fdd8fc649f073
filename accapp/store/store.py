"""The results store: one in-memory DuckDB connection over the shipped Parquet files.

Where it looks (``Store()`` with no arguments):

- results: ``$ACCAPP_RESULTS_DIR`` if set, else ``<project>/precomputed/results``; every
  ``*.parquet`` file there (not hidden, not in sub-folders) becomes part of the ``results``
  view, and ``<model>__<benchmark>.manifest.json`` beside it is read by :meth:`Store.manifest`.
  With no files the view exists and is empty, with the full column set. A file DuckDB cannot
  read, or one without the key columns, is left out and listed in ``Store.skipped_files``. Results
  of single labelled sentences (a ``sentence_id``, ``label`` and ``score`` column: CoLA) form the
  ``sentences`` view instead (schema.SENTENCE_RESULT_COLUMNS), read by :meth:`Store.sentence_rows`.
- published: ``<project>/precomputed/published``; each ``<name>.parquet`` there becomes a
  view ``published_<name>`` (``published_ide2025_accuracy``, ``published_blimp2020_human``,
  ``published_blimp_paradigms``...). ``scripts/convert_published.py`` writes them.

Summaries: a query over a whole run scans its rows (3.4 M for all of BLiMP with every method); an
analysis that needs only counts asks :meth:`Store.derived` for a small table computed from them once a
run, kept in memory until the files change. Bound: a summary has a row per group it counts (3,417 for
all of BLiMP with every method, by method x template x paradigm x variant), for each run in the folder.

Safety: the connection is in-memory; it reads the two folders only (DuckDB's
``allowed_directories`` with external access otherwise disabled and the configuration
locked), nothing in this package writes a file through it (its only tables are the summaries, in
memory), every value that comes from a person is passed as a bound parameter, and the model / benchmark / method / template / paradigm /
phenomenon filters are checked against the values present before any query runs
(:class:`accapp.errors.UserError` names the known values otherwise). SQL text is only ever
written in this package, never assembled from user values.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Iterable, Sequence

import duckdb
import pandas as pd

from accapp import settings
from accapp.errors import UserError
from accapp.files import run_file
from accapp.schema import RESULT_COLUMNS, SENTENCE_RESULT_COLUMNS

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_RESULTS_DIR = PROJECT_ROOT / "precomputed" / "results"
DEFAULT_PUBLISHED_DIR = PROJECT_ROOT / "precomputed" / "published"

SENTENCE_KEYS = ("sentence_id", "label", "score")  # the columns that mark a results file of single sentences
STORE_MEMORY_MB = 256  # DuckDB's memory_limit for the results store
MEMO_MAX = 8  # frames Store.memo keeps (one Explore selection needs 1-3)
_NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")


def _sql_string(value: str) -> str:
    """A SQL string literal for a path this module found on disk (never a user value)."""
    return "'" + str(value).replace("'", "''") + "'"


_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "FLOAT", "DOUBLE", "DECIMAL")


def _mistyped(types: dict[str, str]) -> list[str]:
    """The result columns whose type in a file cannot become the view's (text where a number or
    a truth value belongs)."""
    out = []
    for col, want in RESULT_COLUMNS.items():
        have = types.get(col)
        if have is None or want == "VARCHAR":
            continue
        if not (have.startswith(_NUMERIC) or have == "BOOLEAN"):
            out.append(f"column {col} is {have}, not {want}")
    return out


def is_template_id(template: str) -> bool:
    """True for Ide et al.'s numbered templates ("1".."5"): the ones mean/sd/max run over."""
    return str(template).isdigit()


def template_sort_key(template: str):
    return (0, int(template), "") if is_template_id(template) else (1, 0, str(template))


class Store:
    """DuckDB over ``precomputed/results/*.parquet`` (view ``results``) and the published numbers.

    Methods return pandas DataFrames (or plain lists / dicts); the analyses in
    :mod:`accapp.analysis` take a Store and run their SQL through :meth:`query`.
    """

    def __init__(self, results_dir: str | os.PathLike | None = None, published_dir: str | os.PathLike | None = None):
        explicit = results_dir is not None or bool(settings.text("ACCAPP_RESULTS_DIR"))
        if results_dir is None:
            results_dir = settings.text("ACCAPP_RESULTS_DIR") or DEFAULT_RESULTS_DIR
        self.results_dir = Path(results_dir).resolve()
        self.published_dir = Path(published_dir if published_dir is not None else DEFAULT_PUBLISHED_DIR).resolve()
        if explicit and not self.results_dir.is_dir():
            raise UserError(f"Results folder not found: {results_dir}")
        self._lock = threading.RLock()
        self.con = duckdb.connect(":memory:")
        allowed = [str(d) for d in (self.results_dir, self.published_dir)]
        self.con.execute("SET allowed_directories = ?", [allowed])
        self.con.execute("SET enable_external_access = false")
        # DuckDB's buffers are a cache: bounded (queries spill or stream beyond it), so the whole
        # benchmarks' 3.4 M rows a file cost the app at most this much beside the models.
        self.con.execute(f"SET memory_limit = '{STORE_MEMORY_MB}MB'")
        self.con.execute("SET lock_configuration = true")
        self.result_files: list[Path] = []
        self.skipped_files: dict[str, str] = {}  # file name -> why it is not in the view
        self.published_tables: list[str] = []
        self.refresh()

    # ----------------------------------------------------------------- set-up
    def refresh(self) -> None:
        """(Re)build the views from the files now on disk and forget cached catalogs."""
        with self._lock:
            self._generation = getattr(self, "_generation", 0) + 1
            self._catalog: pd.DataFrame | None = None
            self._units: dict[tuple[str, str], pd.DataFrame] = {}
            self._memo: dict[tuple, pd.DataFrame] = {}
            self._kept: dict[tuple, pd.DataFrame] = {}
            for name in getattr(self, "_derived", {}):  # summaries of the files that were there
                self.con.execute(f"DROP TABLE IF EXISTS {name}")
            self._derived: dict[str, set[tuple[str, str]]] = {}  # table -> the runs it holds
            found = sorted(p for p in self.results_dir.glob("*.parquet") if not p.name.startswith(".")) if self.results_dir.is_dir() else []
            files, columns, skipped, sentence_files = [], set(), {}, []
            for path in found:  # a file DuckDB cannot read, or without the key columns, is skipped (and reported)
                try:
                    schema = self.con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
                except duckdb.Error as exc:
                    skipped[path.name] = str(exc).splitlines()[0]
                    continue
                names = {row[0] for row in schema}
                if set(SENTENCE_KEYS) <= names:  # single labelled sentences: their own view
                    sentence_files.append(path)
                    continue
                lacking = [c for c in ("model", "benchmark", "paradigm", "pair_id", "method", "correct") if c not in names]
                if lacking:
                    skipped[path.name] = f"missing columns {', '.join(lacking)}"
                    continue
                mistyped = _mistyped({row[0]: row[1] for row in schema})
                if mistyped:  # the view's CAST would fail on every query that reads this file
                    skipped[path.name] = "; ".join(mistyped)
                    continue
                files.append(path)
                columns |= names
            self.result_files, self.skipped_files, self.sentence_files = files, skipped, sentence_files
            self._sentence_view(sentence_files)
            if files:
                # a column no file has reads as NULL (template '-', variant and prediction '')
                defaults = {"template": "'-'", "variant": "''", "prediction": "''", "flag": "''"}
                cols = ", ".join(
                    f"CAST({c if c in columns else defaults.get(c, 'NULL')} AS {t}) AS {c}" for c, t in RESULT_COLUMNS.items())
                src = "read_parquet([" + ", ".join(_sql_string(p) for p in files) + "], union_by_name = true)"
                self.con.execute(f"CREATE OR REPLACE VIEW results AS SELECT {cols} FROM {src}")
            else:
                nulls = ", ".join(f"CAST(NULL AS {t}) AS {c}" for c, t in RESULT_COLUMNS.items())
                self.con.execute(f"CREATE OR REPLACE VIEW results AS SELECT {nulls} WHERE false")
            tables = []
            if self.published_dir.is_dir():
                for p in sorted(self.published_dir.glob("*.parquet")):
                    if not _NAME_RE.match(p.stem):
                        continue
                    name = f"published_{p.stem}"
                    self.con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({_sql_string(p)})")
                    tables.append(name)
            self.published_tables = tables

    def _sentence_view(self, files: list[Path]) -> None:
        """The ``sentences`` view over the results files of single sentences (empty without any)."""
        self._sentence_catalog: pd.DataFrame | None = None
        types = SENTENCE_RESULT_COLUMNS
        if files:
            src = "read_parquet([" + ", ".join(_sql_string(p) for p in files) + "], union_by_name = true)"
            cols = ", ".join(f"CAST({c} AS {t}) AS {c}" for c, t in types.items())
            self.con.execute(f"CREATE OR REPLACE VIEW sentences AS SELECT {cols} FROM {src}")
        else:
            nulls = ", ".join(f"CAST(NULL AS {t}) AS {c}" for c, t in types.items())
            self.con.execute(f"CREATE OR REPLACE VIEW sentences AS SELECT {nulls} WHERE false")

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ----------------------------------------------------------------- queries
    def query(self, sql: str, params: Sequence | dict | None = None) -> pd.DataFrame:
        """Run SQL written in this package; every outside value goes in ``params`` (bound)."""
        with self._lock:
            cur = self.con.cursor()
            try:
                return cur.execute(sql, params if params is not None else []).df()
            finally:
                cur.close()

    def memo(self, key: tuple, compute) -> pd.DataFrame:
        """compute()'s frame, kept for the next call with the same key until the files change
        (refresh). At most MEMO_MAX frames (the oldest goes first): Explore asks for the same
        per-pair rows for several views of one selection, 67,000 pairs a benchmark when whole."""
        with self._lock:
            if key not in self._memo:
                if len(self._memo) >= MEMO_MAX:
                    self._memo.pop(next(iter(self._memo)))
                self._memo[key] = compute()
            return self._memo[key].copy()

    def kept(self, key: tuple, compute) -> pd.DataFrame:
        """compute()'s frame, kept until the files change (refresh), with no bound on how many: for small
        summaries that are slow to make (a separation AUC's bootstrap: a few rows a run). compute() runs
        outside the store's lock, so other queries go on meanwhile; two callers at once may both compute."""
        with self._lock:
            if key in self._kept:
                return self._kept[key].copy()
            generation = self._generation
        frame = compute()
        with self._lock:
            if generation == self._generation:  # not made from files a refresh has since replaced
                self._kept[key] = frame
        return frame.copy()

    def derived(self, name: str, columns: str, select: str, model: str, benchmark: str, params: dict | None = None) -> str:
        """Table ``name`` (columns ``model, benchmark, <columns>``: SQL column definitions) holding
        ``select``'s rows for a run, computed from ``results`` the first time a run is asked for and
        kept until the files change (refresh). ``select`` is SQL of this package with $model and
        $benchmark bound; it returns the columns after model and benchmark. Returns ``name``."""
        if not _NAME_RE.match(name):
            raise ValueError(f"not a table name: {name!r}")
        self.check(model, benchmark)
        with self._lock:
            runs = self._derived.get(name)
            if runs is None:
                self.con.execute(f"CREATE OR REPLACE TABLE {name} (model VARCHAR, benchmark VARCHAR, {columns})")
                runs = self._derived[name] = set()
            if (model, benchmark) not in runs:
                self.con.execute(f"INSERT INTO {name} SELECT $model, $benchmark, * FROM ({select})",
                                 {"model": model, "benchmark": benchmark, **(params or {})})
                runs.add((model, benchmark))
            return name

    def has_published(self, name: str) -> bool:
        return f"published_{name}" in self.published_tables

    def published(self, name: str) -> pd.DataFrame:
        """A published table as shipped (``name`` without the ``published_`` prefix)."""
        if not self.has_published(name):
            known = ", ".join(t.removeprefix("published_") for t in self.published_tables) or "none"
            raise UserError(f"Unknown published table {name!r}; known: {known}. Run scripts/convert_published.py.")
        return self.query(f"SELECT * FROM published_{name}")

    # ----------------------------------------------------------------- catalog
    def catalog(self) -> pd.DataFrame:
        """One row per (model, benchmark, method, template) with its row count (cached)."""
        with self._lock:
            if self._catalog is None:
                self._catalog = self.query(
                    "SELECT model, benchmark, method, template, count(*) AS n_rows FROM results GROUP BY ALL "
                    "ORDER BY model, benchmark, method, template"
                )
            return self._catalog

    def models(self, benchmark: str | None = None) -> list[str]:
        cat = self.catalog()
        if benchmark is not None:
            cat = cat[cat.benchmark == benchmark]
        return sorted(set(cat.model))

    def benchmarks(self, model: str | None = None) -> list[str]:
        cat = self.catalog()
        if model is not None:
            cat = cat[cat.model == model]
        return sorted(set(cat.benchmark))

    def methods(self, model: str, benchmark: str) -> list[str]:
        self.check(model, benchmark)
        cat = self.catalog()
        return sorted(set(cat[(cat.model == model) & (cat.benchmark == benchmark)].method))

    def templates(self, model: str, benchmark: str, method: str) -> list[str]:
        self.check(model, benchmark, [method])
        cat = self.catalog()
        sel = cat[(cat.model == model) & (cat.benchmark == benchmark) & (cat.method == method)]
        return sorted(set(sel.template), key=template_sort_key)

    def units(self, model: str, benchmark: str) -> pd.DataFrame:
        """Paradigms and phenomena of one run: paradigm, phenomenon, pairs (cached)."""
        self.check(model, benchmark)
        key = (model, benchmark)
        with self._lock:
            if key not in self._units:
                self._units[key] = self.query(
                    "SELECT paradigm, any_value(phenomenon) AS phenomenon, count(DISTINCT pair_id) AS pairs "
                    "FROM results WHERE model = $model AND benchmark = $benchmark GROUP BY paradigm ORDER BY paradigm",
                    {"model": model, "benchmark": benchmark},
                )
            return self._units[key]

    def manifest(self, model: str, benchmark: str) -> dict:
        """The run's manifest (``<model>__<benchmark>.manifest.json``), or {} when there is none."""
        self.check(model, benchmark)
        path = run_file(self.results_dir, model, benchmark, ".manifest.json")
        if not path.is_file():
            return {}
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:  # a corrupt manifest: the results still show
            self.skipped_files[path.name] = f"unreadable manifest: {exc}"
            return {}
        return manifest if isinstance(manifest, dict) else {}

    # ----------------------------------------------------------------- single sentences
    def sentence_catalog(self) -> pd.DataFrame:
        """One row per (model, benchmark, method) of the single-sentence results, with its sentences (cached)."""
        with self._lock:
            if self._sentence_catalog is None:
                self._sentence_catalog = self.query(
                    "SELECT model, benchmark, method, count(*) AS sentences FROM sentences GROUP BY ALL "
                    "ORDER BY model, benchmark, method")
            return self._sentence_catalog

    def has_sentences(self, model: str, benchmark: str) -> bool:
        """True when the folder holds single-sentence results of the model on the benchmark."""
        cat = self.sentence_catalog()
        return bool(((cat.model == model) & (cat.benchmark == benchmark)).any())

    def sentence_models(self, benchmark: str) -> list[str]:
        cat = self.sentence_catalog()
        return sorted(set(cat[cat.benchmark == benchmark].model))

    def sentence_methods(self, model: str, benchmark: str, methods: Iterable[str] | str | None = None) -> list[str]:
        """The methods of a single-sentence run (all when None), or UserError naming the known values."""
        cat = self.sentence_catalog()
        if not ((cat.model == model) & (cat.benchmark == benchmark)).any():
            known = ", ".join(f"{m} on {b}" for m, b in sorted(set(zip(cat.model, cat.benchmark)))) or "none"
            raise UserError(f"No single-sentence results for model {model!r} on {benchmark!r}; there are: {known}.")
        present = sorted(set(cat[(cat.model == model) & (cat.benchmark == benchmark)].method))
        if methods is None:
            return present
        wanted = list(dict.fromkeys([methods] if isinstance(methods, str) else methods))
        bad = [m for m in wanted if m not in present]
        if bad:
            raise UserError(f"Unknown method {bad[0]!r} for {model} on {benchmark}; methods with results: {', '.join(present)}.")
        return wanted

    def sentence_rows(self, model: str, benchmark: str, methods: Iterable[str] | str | None = None) -> pd.DataFrame:
        """The single-sentence rows of a run (schema.SENTENCE_RESULT_COLUMNS), by method and sentence."""
        methods = self.sentence_methods(model, benchmark, methods)
        return self.query(
            "SELECT * FROM sentences WHERE model = $model AND benchmark = $benchmark AND list_contains($methods, method) "
            "ORDER BY method, paradigm, length(sentence_id), sentence_id",
            {"model": model, "benchmark": benchmark, "methods": methods})

    # ----------------------------------------------------------------- validation
    def check(self, model: str, benchmark: str, methods: Iterable[str] | None = None, template: str | None = None,
              paradigm: str | None = None, phenomenon: str | None = None) -> list[str]:
        """Validate filter values against those present; return the methods (all when None).

        Raises UserError naming the known values. A value is only ever compared as a plain
        string: "lp' OR 1=1 --" is simply an unknown method.
        """
        cat = self.catalog()
        if not isinstance(model, str) or model not in set(cat.model):
            known = ", ".join(sorted(set(cat.model))) or "none (no results in " + str(self.results_dir) + ")"
            raise UserError(f"Unknown model {model!r}; models with results: {known}.")
        sub = cat[cat.model == model]
        if not isinstance(benchmark, str) or benchmark not in set(sub.benchmark):
            raise UserError(f"No results for model {model!r} on benchmark {benchmark!r}; "
                            f"benchmarks with results for it: {', '.join(sorted(set(sub.benchmark)))}.")
        sub = sub[sub.benchmark == benchmark]
        present = sorted(set(sub.method))
        if methods is None:
            out = present
        else:
            if isinstance(methods, str):
                methods = [methods]
            out = list(dict.fromkeys(methods))
            bad = [m for m in out if not isinstance(m, str) or m not in present]
            if bad:
                raise UserError(f"Unknown method {bad[0]!r} for {model} on {benchmark}; methods with results: {', '.join(present)}.")
        if template is not None:
            have = set(sub[sub.method.isin(out)].template)
            if not isinstance(template, str) or template not in have:
                raise UserError(f"Unknown template {template!r} for {', '.join(out)}; templates: "
                                f"{', '.join(sorted(have, key=template_sort_key))}.")
        if paradigm is not None or phenomenon is not None:
            units = self.units(model, benchmark)
            if paradigm is not None and (not isinstance(paradigm, str) or paradigm not in set(units.paradigm)):
                raise UserError(f"Unknown paradigm {paradigm!r} in {benchmark}.")
            if phenomenon is not None and (not isinstance(phenomenon, str) or phenomenon not in set(units.phenomenon)):
                raise UserError(f"Unknown phenomenon {phenomenon!r} in {benchmark}; phenomena: "
                                f"{', '.join(sorted(set(units.phenomenon)))}.")
        return out

    # ----------------------------------------------------------------- rows
    def rows(self, model: str, benchmark: str, methods: Iterable[str] | str | None = None, template: str | None = None,
             paradigm: str | None = None, phenomenon: str | None = None, wrong_only: bool = False,
             columns: Sequence[str] | None = None, limit: int | None = None) -> pd.DataFrame:
        """Per-pair result rows matching the filters (all bound parameters), ordered by pair.

        ``wrong_only`` keeps rows with correct < 1 (wrong, tied, or an ensemble that lost some
        draws): the pairs the app links back to the probe.
        """
        methods = self.check(model, benchmark, methods, template, paradigm, phenomenon)
        cols = list(columns) if columns else list(RESULT_COLUMNS)
        bad = [c for c in cols if c not in RESULT_COLUMNS]
        if bad:
            raise UserError(f"Unknown column {bad[0]!r}; columns: {', '.join(RESULT_COLUMNS)}.")
        if limit is not None:
            limit = int(limit)
            if limit < 0:
                raise UserError("limit must be >= 0")
        sql = (
            f"SELECT {', '.join(cols)} FROM results WHERE model = $model AND benchmark = $benchmark "
            "AND list_contains($methods, method) "
            "AND ($template IS NULL OR template = $template) AND ($paradigm IS NULL OR paradigm = $paradigm) "
            "AND ($phenomenon IS NULL OR phenomenon = $phenomenon) AND (NOT $wrong OR correct < 1) "
            "ORDER BY paradigm, length(pair_id), pair_id, method, template, variant"
            + (" LIMIT $limit" if limit is not None else "")
        )
        params = {"model": model, "benchmark": benchmark, "methods": methods, "template": template,
                  "paradigm": paradigm, "phenomenon": phenomenon, "wrong": bool(wrong_only)}
        if limit is not None:
            params["limit"] = limit
        return self.query(sql, params)

    def pair_rows(self, model: str, *, benchmark: str | None = None, paradigm: str | None = None,
                  pair_id: str | None = None, good: str | None = None, bad: str | None = None) -> pd.DataFrame:
        """One pair's result rows for a model (every method, template and order): the pair named
        by benchmark + paradigm + pair_id, or by its two sentences. Empty when no run has it."""
        by_id = benchmark is not None and paradigm is not None and pair_id is not None
        if not by_id and (good is None or bad is None):
            raise ValueError("pair_rows needs benchmark, paradigm and pair_id, or good and bad")
        cols = "method, template, variant, correct, score_good, score_bad, benchmark, paradigm, phenomenon, pair_id"
        where = ("benchmark = $benchmark AND paradigm = $paradigm AND pair_id = $pair_id" if by_id
                 else "good = $good AND bad = $bad")
        params = ({"benchmark": str(benchmark), "paradigm": str(paradigm), "pair_id": str(pair_id)} if by_id
                  else {"good": str(good), "bad": str(bad)})
        return self.query(f"SELECT {cols} FROM results WHERE model = $model AND {where}",
                          {"model": str(model), **params})
