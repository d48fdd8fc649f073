"""The test-suite runner: SyntaxGym suites (accapp/suites/) scored with a causal LM, one unit file
per (model, suite), resumable like the benchmark runner.

A run folder holds, per model and collection (``syntaxgym2020`` for the shipped suites of Hu et
al. 2020, ``user`` for a user's own files):

  OUT/<model>/suites/<collection>/units/regions/<suite>.parquet    item, condition, region_number,
                                                                   region_name, content, surprisal_bits
  OUT/<model>/suites/<collection>/units/outcomes/<suite>.parquet   item, prediction, formula, passed, values
  OUT/<model>/suites/<collection>/manifest.json                    the run: model, versions, per suite its
                                                                   hash, items and seconds

The regions file is the unit: it carries its own manifest in its Parquet metadata (model, suite
id, the suite's SHA-256, word rule, convention, dtype, quantization, code commit), is written to a
temporary name and renamed (accapp/files.py), and a rerun skips a suite whose file is there with
a manifest that matches (the code commit is recorded, not compared: a commit that leaves the
scoring alone keeps the results). The outcomes follow from the regions and the suite's
predictions alone; a rerun rewrites them from the regions where they are missing. A rerun also
removes the temporary files a killed run left (remove_stale_temps).

consolidate_suites merges a collection's units into the store's compact files:
``DIR/<model>__<collection>.regions.parquet``, ``.outcomes.parquet`` (zstd) and ``.manifest.json``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from accapp.errors import UserError
from accapp.files import remove_stale_temps, run_file, safe_name, write_atomic, write_json_atomic
from accapp.suites import catalog
from accapp.suites.evaluate import evaluate_suite
from accapp.suites.score import COLUMNS, check_causal, score_suite
from accapp.suites.suite import Suite, read_suite, suite_as_dict

SHIPPED = "syntaxgym2020"  # the collection of the shipped suites (Hu et al. 2020)
SHIPPED_SOURCE = "Hu et al. 2020, cpllab/syntactic-generalization test_suites/json (assets/suites/README.md)"
USER = "user"  # the collection of a user's own suite files
ALL = "all"
OUTCOME_COLUMNS = ["item", "prediction", "formula", "passed", "values"]  # values: JSON {reference: bits}
META_KEY = b"accapp_suite_unit"
# What a unit's numbers depend on: a unit whose manifest differs in any of these is scored again.
MATCH_KEYS = ("model", "suite", "sha256", "word_rule", "convention", "dtype", "quantization")


@dataclass(frozen=True)
class SuiteSource:
    id: str  # the file-safe id the unit is named by
    suite: Suite
    collection: str
    source: str  # "shipped" or the user's path
    sha256: str


def suite_sha256(suite: Suite) -> str:
    """SHA-256 of the suite as canonical JSON (sorted keys): the same suite, however formatted, hashes alike."""
    text = json.dumps(suite_as_dict(suite), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _is_file_spec(spec: str) -> bool:
    return spec.endswith((".json", ".json.gz")) or "/" in spec or "\\" in spec or Path(spec).is_file()


def resolve_suites(spec: str) -> list[SuiteSource]:
    """The suites a ``--suite`` names: ``all`` (the shipped ones), shipped ids (comma-separated),
    or one path to a SyntaxGym JSON file. A bad file or an unknown id is one UserError sentence."""
    spec = (spec or "").strip()
    if not spec:
        raise UserError(f"--suite needs a shipped suite id, '{ALL}', or a SyntaxGym JSON file.")
    if spec == ALL:
        ids = catalog.suite_ids()
    elif _is_file_spec(spec):
        path = Path(spec)
        try:
            suite = read_suite(path)
        except UserError as exc:
            raise UserError(f"{path.name[:80]}: {exc}") from None
        sid = safe_name(path.name.split(".")[0]) or "suite"
        return [SuiteSource(sid, suite, USER, str(path), suite_sha256(suite))]
    else:
        ids = list(dict.fromkeys(s.strip() for s in spec.split(",") if s.strip()))
    out = []
    for sid in ids:
        suite = catalog.load_suite(sid)  # an unknown id: one sentence listing the shipped ones
        out.append(SuiteSource(sid, suite, SHIPPED, "shipped", suite_sha256(suite)))
    return out


# ---- paths -----------------------------------------------------------------------------------
def run_dir(out: Path, model: str, collection: str) -> Path:
    return Path(out) / safe_name(model) / "suites" / safe_name(collection)


def regions_path(out: Path, model: str, collection: str, suite_id: str) -> Path:
    return run_dir(out, model, collection) / "units" / "regions" / f"{safe_name(suite_id)}.parquet"


def outcomes_path(out: Path, model: str, collection: str, suite_id: str) -> Path:
    return run_dir(out, model, collection) / "units" / "outcomes" / f"{safe_name(suite_id)}.parquet"


# ---- unit files ------------------------------------------------------------------------------
def _write_with_meta(df: pd.DataFrame, path: Path, meta: dict | None = None, **kwargs) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    if meta is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: json.dumps(meta).encode()})
    return write_atomic(path, lambda tmp: pq.write_table(table, tmp, **kwargs))


def unit_manifest(path: Path) -> dict | None:
    """The manifest a regions unit file carries (None: no file, or not one of this runner's)."""
    import pyarrow.parquet as pq

    if not Path(path).is_file():
        return None
    try:
        meta = pq.read_schema(path).metadata or {}
        return json.loads(meta[META_KEY]) if META_KEY in meta else None
    except Exception:  # noqa: BLE001 - an unreadable file is not done; it is scored again
        return None


def outcomes_frame(evaluation) -> pd.DataFrame:
    """SuiteEvaluation.table() with ``values`` as JSON text ({reference: bits}, formula order)."""
    df = evaluation.table()
    df["values"] = [json.dumps(v) for v in df["values"]]
    return df[OUTCOME_COLUMNS]


def _write_outcomes(src: SuiteSource, regions: pd.DataFrame, path: Path) -> pd.DataFrame:
    df = outcomes_frame(evaluate_suite(src.suite, regions))
    _write_with_meta(df, path)
    return df


def engine_facts(engine) -> dict:
    """What a unit's manifest records of the engine."""
    lm = getattr(engine, "lm", None)
    convention = getattr(engine, "convention", None)
    return {"model": getattr(engine, "model_id", ""), "word_rule": getattr(engine, "word_rule", ""),
            "convention": getattr(convention, "id", None),
            "dtype": str(getattr(lm, "dtype", None)) if getattr(lm, "dtype", None) is not None else None,
            "quantization": getattr(lm, "quantization", None)}


# ---- running ---------------------------------------------------------------------------------
def run_suites(engine, sources: list[SuiteSource], out: Path, progress: bool = True) -> dict:
    """Score (or resume) the suites with a causal LM engine into the run folder; returns a summary
    {model, suites_written, suites_skipped, items_scored, seconds, per_suite: {id: {...}}}."""
    from tqdm.auto import tqdm

    check_causal(engine)
    facts = engine_facts(engine)
    model = facts["model"]
    versions = _versions()  # once: a commit made during the run is not this run's code
    commit = versions.get("commit")
    out = Path(out)
    for collection in dict.fromkeys(s.collection for s in sources):
        if run_dir(out, model, collection).is_dir():  # what a killed run (kill -9) left half-written
            remove_stale_temps(run_dir(out, model, collection))
    todo, skipped = [], []
    for src in sources:
        want = {**facts, "suite": src.id, "sha256": src.sha256}
        have = unit_manifest(regions_path(out, model, src.collection, src.id))
        if have is not None and all(have.get(k) == want[k] for k in MATCH_KEYS):
            skipped.append(src)
        else:
            todo.append(src)
    for src in skipped:  # outcomes follow from the regions: rewritten without the model where missing
        opath = outcomes_path(out, model, src.collection, src.id)
        if not opath.is_file():
            _write_outcomes(src, pd.read_parquet(regions_path(out, model, src.collection, src.id)), opath)
    t0 = time.perf_counter()
    per_suite: dict[str, dict] = {}
    total = sum(len(s.suite.items) for s in todo)
    bar = tqdm(total=total, unit="item", desc=f"{model} suites", disable=not progress)
    try:
        for src in todo:
            bar.set_postfix_str(src.id, refresh=True)
            start, before = time.perf_counter(), bar.n

            def tick(done: int, _total: int, _before=before) -> None:
                bar.update(_before + done - bar.n)

            scored = score_suite(engine, src.suite, progress=tick)
            seconds = time.perf_counter() - start
            meta = {**facts, "suite": src.id, "sha256": src.sha256, "collection": src.collection, "source": src.source,
                    "items": len(src.suite.items), "predictions": len(src.suite.predictions), "seconds": round(seconds, 2),
                    "commit": commit, "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
            _write_with_meta(scored.regions[COLUMNS], regions_path(out, model, src.collection, src.id), meta)
            outcomes = outcomes_frame(scored.evaluation)
            _write_with_meta(outcomes, outcomes_path(out, model, src.collection, src.id))
            per_suite[src.id] = {"items": len(src.suite.items), "accuracy": scored.evaluation.accuracy,
                                 "seconds": seconds}
            _update_manifest(out, model, src.collection, facts, versions, meta)
    finally:
        bar.close()
    return {"model": model, "suites_written": len(todo), "suites_skipped": len(skipped),
            "items_scored": total, "seconds": time.perf_counter() - t0, "per_suite": per_suite,
            "folders": sorted({str(run_dir(out, model, s.collection)) for s in sources})}


def _update_manifest(out: Path, model: str, collection: str, facts: dict, versions: dict, unit: dict) -> None:
    path = run_dir(out, model, collection) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    manifest.update({**facts, "collection": collection, "commit": versions.get("commit"), "versions": versions})
    if collection == SHIPPED:
        manifest["source"] = SHIPPED_SOURCE
    manifest.setdefault("suites", {})[unit["suite"]] = {k: unit[k] for k in ("sha256", "source", "items", "predictions",
                                                                            "seconds", "commit", "finished")}
    manifest["compute_seconds"] = round(sum(s["seconds"] for s in manifest["suites"].values()), 1)
    write_json_atomic(manifest, path)


def _versions() -> dict:
    from accapp.runner.runner import _versions as versions

    return versions()


# ---- consolidating ---------------------------------------------------------------------------
def consolidated_paths(folder: Path, model: str, collection: str = SHIPPED) -> dict[str, Path]:
    return {"regions": run_file(folder, model, collection, ".regions.parquet"),
            "outcomes": run_file(folder, model, collection, ".outcomes.parquet"),
            "manifest": run_file(folder, model, collection, ".manifest.json")}


SMALL_INTS = {"item": "int32", "region_number": "int16", "prediction": "int16"}


def _write_compact(df: pd.DataFrame, path: Path) -> Path:
    """zstd; small integer types; dictionary encoding except for the surprisals (float64, as the
    predictions were decided on) and the outcomes' values."""
    df = df.astype({c: t for c, t in SMALL_INTS.items() if c in df.columns})
    return _write_with_meta(df, path, compression="zstd", compression_level=9,
                            use_dictionary=[c for c in df.columns if c not in ("surprisal_bits", "values")])


def consolidate_suites(runs: Path, out: Path, model: str | None = None, collection: str = SHIPPED) -> list[Path]:
    """Merge each model's units of a collection into DIR/<model>__<collection>.{regions,outcomes}.parquet
    (zstd, with model and suite columns, sorted) and its manifest; returns the files written."""
    runs, out = Path(runs), Path(out)
    if out.is_dir():
        remove_stale_temps(out)
    written = []
    for manifest_path in sorted(runs.glob(f"*/suites/{safe_name(collection)}/manifest.json")):
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if model and manifest.get("model") != model:
            continue
        units = manifest_path.parent / "units"
        frames: dict[str, list[pd.DataFrame]] = {"regions": [], "outcomes": []}
        suites = {}
        for rpath in sorted((units / "regions").glob("*.parquet")):
            meta = unit_manifest(rpath)
            opath = units / "outcomes" / rpath.name
            if meta is None or not opath.is_file():
                continue
            suites[meta["suite"]] = {k: meta.get(k) for k in ("sha256", "source", "items", "predictions", "seconds",
                                                              "commit", "finished")}
            for kind, path in (("regions", rpath), ("outcomes", opath)):
                df = pd.read_parquet(path)
                df.insert(0, "suite", meta["suite"])
                df.insert(0, "model", manifest["model"])
                frames[kind].append(df)
        if not suites:
            continue
        paths = consolidated_paths(out, manifest["model"], collection)
        regions = pd.concat(frames["regions"], ignore_index=True).sort_values(
            ["suite", "item", "condition", "region_number"], kind="stable")
        outcomes = pd.concat(frames["outcomes"], ignore_index=True).sort_values(["suite", "item", "prediction"], kind="stable")
        for kind, df in (("regions", regions), ("outcomes", outcomes)):
            _write_compact(df.reset_index(drop=True), paths[kind])
        commits = sorted({str(u["commit"]) for u in suites.values()})  # the code that scored the units
        commit = commits[0] if len(commits) == 1 else commits
        merged = {**manifest, "commit": commit, "versions": {**manifest.get("versions", {}), "commit": commit},
                  "suites": suites, "compute_seconds": round(sum(s["seconds"] or 0 for s in suites.values()), 1),
                  "files": {k: p.name for k, p in paths.items() if k != "manifest"}}
        write_json_atomic(merged, paths["manifest"])
        written += [paths["regions"], paths["outcomes"]]
    return written
