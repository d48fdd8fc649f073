"""A long benchmark run on this project's 2-core CPU machines: two processes of one torch thread each (faster
here than one process of two threads), each on half of the paradigms still to do, resumed from the shipped
results file, then merged and shipped: every unit (a paradigm's method and template) either process finished.

    python scripts/cpu_halves.py start scamp_plausible gemma3-270m \
        --methods lp,mean_lp,pen_lp,slor,bayes_factor_uniform,bayes_factor_unigram
    python scripts/cpu_halves.py start scamp_implausible smollm2-135m-instruct --methods all --per-paradigm 30
    python scripts/cpu_halves.py status scamp_plausible gemma3-270m
    python scripts/cpu_halves.py stop scamp_plausible gemma3-270m        # before a timing run or the test suite
    python scripts/cpu_halves.py ship scamp_plausible gemma3-270m        # after both stopped or finished

`start` picks the paradigms where the shipped file (precomputed/results/MODEL__BENCH.parquet) lacks a
requested method on the requested pairs (every pair without --per-paradigm), so a run stopped at the end of a
session resumes in the next from what was shipped. `ship` keeps only the units that reached all their pairs (a
unit stopped halfway is finished next time: its pairs so far stay in the run folder), checks that every row shipped before is
still there and unchanged (in a shipped sample's unit run again on every pair: moved by float noise only, within its tie
tolerance, no verdict changed), writes the file, its manifest (compute seconds: the shipped run's plus these two
processes') and its separation summary into precomputed/results/, and prints `accapp report`'s JSON.
The work folder (--work, default /tmp/cpu-halves) holds the processes' run folders and logs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from accapp.benchmarks import bench_name, load_benchmark, stratified_sample  # noqa: E402
from accapp.files import safe_name  # noqa: E402
from accapp.methods import resolve  # noqa: E402
from accapp.methods.ties import tolerances_of_results  # noqa: E402
from accapp.runner.runner import consolidate, consolidated_path, manifest_beside  # noqa: E402

SHIPPED = ROOT / "precomputed" / "results"
KEY = ["paradigm", "method", "template", "variant", "pair_id"]


def shipped_file(shipped: Path, bench: str, model: str) -> Path:
    return consolidated_path(shipped, model, bench_name(bench))


def wanted_pairs(bench: str, per_paradigm: int | None, seed: int) -> pd.DataFrame:
    """The pairs a run covers, as the runner samples them: (paradigm, pair_id)."""
    df = load_benchmark(bench)
    if per_paradigm:
        df = stratified_sample(df, per_paradigm, seed=seed)
    return df[["paradigm", "pair_id"]].astype({"pair_id": str})


def finished_paradigms(rows: pd.DataFrame, wanted: pd.DataFrame, methods: list[str]) -> set[str]:
    """Paradigms where every method has a row for every wanted pair."""
    need = wanted.groupby("paradigm").pair_id.apply(set).to_dict()
    have = rows[rows.method.isin(methods)].astype({"pair_id": str}).groupby(["paradigm", "method"]).pair_id.apply(set)
    return {p for p, ids in need.items() if all(ids <= have.get((p, m), set()) for m in methods)}


def method_ids(spec: str) -> list[str]:
    return [m.id for m in resolve(spec, "causal")]  # 'all' or comma-separated ids, as --methods takes them


def folders(work: Path, bench: str, model: str, half: int) -> tuple[Path, Path, Path]:
    """(run folder, consolidate folder, log) of one half."""
    base = work / f"{safe_name(bench_name(bench))}__{safe_name(model)}__{half}"
    return base / "runs", base / "consolidated", base / "log.txt"


def run_folder(work: Path, bench: str, model: str, half: int) -> Path:
    """Where the runner writes one half's units and manifest (RUNS/<model>/<benchmark>/)."""
    return folders(work, bench, model, half)[0] / safe_name(model) / safe_name(bench_name(bench))


def plan_file(work: Path, bench: str, model: str) -> Path:
    return work / f"{safe_name(bench_name(bench))}__{safe_name(model)}.json"


def plan_halves(bench: str, model: str, methods: str, per_paradigm: int | None, seed: int,
                shipped_dir: Path) -> tuple[set[str], list[list[str]]]:
    """(paradigms the shipped file has finished, the rest split in two: every other one, in name order)."""
    wanted = wanted_pairs(bench, per_paradigm, seed)
    shipped = shipped_file(shipped_dir, bench, model)
    done = finished_paradigms(pd.read_parquet(shipped, columns=["paradigm", "method", "pair_id"]), wanted,
                              method_ids(methods)) if shipped.exists() else set()
    todo = sorted(set(wanted.paradigm) - done)
    return done, [todo[0::2], todo[1::2]]


def write_plan(work: Path, bench: str, model: str, methods: str, per_paradigm: int | None, seed: int,
               shipped_dir: Path) -> list[list[str]]:
    """Plan the two halves (plan_halves) and write what ship needs to know of them; returns the halves."""
    done, halves = plan_halves(bench, model, methods, per_paradigm, seed, shipped_dir)
    print(f"{len(done)} paradigms finished in the shipped file, {sum(map(len, halves))} to do")
    # Each half's compute seconds before it starts: its run folder's (one an earlier session stopped and shipped) or,
    # in a fresh folder, the shipped run's, which the runner restores; ship adds what each half added to it. A start
    # again after a stop with no ship between keeps the plan's: the stopped processes' seconds are not shipped yet.
    shipped_manifest = manifest_beside(shipped_file(shipped_dir, bench, model))
    shipped_text = shipped_manifest.read_text() if shipped_manifest.exists() else ""
    shipped_seconds = json.loads(shipped_text)["compute_seconds"] if shipped_text else 0.0
    run = {"methods": methods, "per_paradigm": per_paradigm, "seed": seed,
           "shipped": hashlib.sha256(shipped_text.encode()).hexdigest()}  # a ship rewrites the manifest
    old = plan_file(work, bench, model)
    old = json.loads(old.read_text()) if old.exists() else {}
    if all(old.get(k) == v for k, v in run.items()):
        earlier = old["earlier"]
    else:
        earlier = []
        for half in (0, 1):
            manifest = run_folder(work, bench, model, half) / "manifest.json"
            earlier.append(json.loads(manifest.read_text())["compute_seconds"] if manifest.exists() else shipped_seconds)
    plan_file(work, bench, model).write_text(json.dumps({**run, "earlier": earlier}))
    return halves


def start(args) -> None:
    shipped = shipped_file(args.shipped, args.benchmark, args.model)
    halves = write_plan(args.work, args.benchmark, args.model, args.methods, args.per_paradigm, args.seed, args.shipped)
    for half, paradigms in enumerate(halves):
        if not paradigms:
            continue
        runs, cons, log = folders(args.work, args.benchmark, args.model, half)
        cons.mkdir(parents=True, exist_ok=True)
        if shipped.exists():  # the runner restores the shipped units from here and skips them
            for f in (shipped, manifest_beside(shipped)):
                shutil.copy2(f, cons / f.name)
        cmd = [sys.executable, "-m", "accapp", "bench", "--model", args.model, "--benchmark", args.benchmark,
               "--methods", args.methods, "--seed", str(args.seed), "--threads", "1", "--paradigms", ",".join(paradigms),
               "--out", str(runs), "--consolidate-to", str(cons)]
        if args.per_paradigm:
            cmd += ["--per-paradigm", str(args.per_paradigm)]
        with open(log, "a", encoding="utf-8") as out:
            proc = subprocess.Popen(["nice", "-n", "5", *cmd], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # runs on when this script and its shell end
        (log.parent / "pid").write_text(str(proc.pid))
        print(f"half {half}: {len(paradigms)} paradigms, pid {proc.pid}, log {log}")


def running(work: Path, bench: str, model: str) -> list[int]:
    pids = []
    for half in (0, 1):
        pid_file = folders(work, bench, model, half)[2].parent / "pid"
        if pid_file.exists():
            pid = int(pid_file.read_text())
            try:
                os.kill(pid, 0)
                pids.append(pid)
            except ProcessLookupError:
                pass
    return pids


def status(args) -> None:
    for half in (0, 1):
        log = folders(args.work, args.benchmark, args.model, half)[2]
        if log.exists():
            tail = log.read_text(encoding="utf-8", errors="replace")[-400:].split("\r")[-1].strip()
            print(f"half {half}: {tail}")
    print("running:", running(args.work, args.benchmark, args.model) or "none")


def stop(args) -> None:
    for pid in running(args.work, args.benchmark, args.model):
        os.killpg(pid, signal.SIGTERM)
        print("stopped", pid)


def ship(args) -> None:
    if running(args.work, args.benchmark, args.model):
        raise SystemExit("a half still runs: stop it first (`stop`)")
    merge_and_ship(args.work, args.benchmark, args.model, args.shipped, args.dry_run)
    if not args.dry_run:
        print(subprocess.run([sys.executable, "-m", "accapp", "report", "--benchmark", args.benchmark, "--model", args.model,
                              "--format", "json"], cwd=ROOT, capture_output=True, text=True).stdout[-3000:])


def merge_and_ship(work: Path, bench: str, model: str, shipped_dir: Path, dry_run: bool = False) -> dict:
    """Merge the halves' units (with the shipped ones they restored), keep whole units only, check that
    every shipped row is kept unchanged, and (unless dry_run) write the file, manifest and summary into
    shipped_dir. Returns {finished: the paradigms every method finished, paradigms, compute_seconds, rows_added}."""
    plan = json.loads(plan_file(work, bench, model).read_text())
    methods = method_ids(plan["methods"])
    wanted = wanted_pairs(bench, plan["per_paradigm"], plan["seed"])
    merged = work / f"{safe_name(bench_name(bench))}__{safe_name(model)}__merged"
    shutil.rmtree(merged, ignore_errors=True)
    target = merged / "runs" / safe_name(model) / safe_name(bench_name(bench))
    shipped = shipped_file(shipped_dir, bench, model)
    old_manifest = json.loads(manifest_beside(shipped).read_text()) if shipped.exists() else None
    seconds, manifest, finished = 0.0, None, []
    for half in (0, 1):
        run = run_folder(work, bench, model, half)
        if not (run / "manifest.json").exists():
            continue
        half_manifest = json.loads((run / "manifest.json").read_text())
        seconds += half_manifest["compute_seconds"] - plan["earlier"][half]  # a stopped process's too: its blocks'
        manifest = manifest or half_manifest
        finished += [half_manifest["finished"]] if "finished" in half_manifest else []
        for f in sorted((run / "units").rglob("*.parquet")):
            dest = target / "units" / f.relative_to(run / "units")
            # The shipped units both halves restored, the rest from the half that ran them. A shipped sample's unit
            # that a half ran again whole (more pairs) is restored in the other half too: the larger one wins.
            if not dest.exists() or _rows(f) > _rows(dest):
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest)
    if manifest is None:
        raise SystemExit("no run folder found")
    # Only whole units ship: one stopped halfway is left for the next run (Explore says which methods lack paradigms).
    units = {f: pd.read_parquet(f, columns=["paradigm", "method", "pair_id"])
             for f in sorted((target / "units").rglob("*.parquet"))}
    done = finished_paradigms(pd.concat(units.values()), wanted, methods)
    need = wanted.groupby("paradigm").pair_id.apply(set)
    for f, unit in units.items():
        paradigm, method = unit.paradigm.iloc[0], unit.method.iloc[0]
        if paradigm not in done and method in methods and not need[paradigm] <= set(unit.pair_id.astype(str)):
            f.unlink()
    base = old_manifest["compute_seconds"] if old_manifest else 0.0
    manifest["compute_seconds"] = round(base + seconds, 1)
    manifest["last_run_seconds"] = round(seconds, 1)  # this run's: both processes' compute
    manifest["finished"] = max(finished) if finished else manifest.get("finished")
    if old_manifest:
        manifest["started"] = old_manifest["started"]
    (target / "manifest.json").write_text(json.dumps(manifest))
    written = consolidate(merged / "runs", merged / "consolidated", model, bench_name(bench))[0]
    new = pd.read_parquet(written)
    added = len(new)
    if shipped.exists():  # every row shipped before is still there, bit for bit (or re-scored: kept_or_rescored)
        old = pd.read_parquet(shipped)
        added = len(new) - len(old)
        print(f"{kept_or_rescored(old, new)}; {added:,} rows added")
    figures = {"finished": sorted(done), "paradigms": int(wanted.paradigm.nunique()),
               "compute_seconds": manifest["compute_seconds"], "rows_added": added}
    print(f"finished paradigms: {len(done)} of {figures['paradigms']}; compute seconds {base} + {seconds:.1f}")
    if dry_run:
        return figures
    shipped_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(written, shipped)
    man = json.loads(manifest_beside(written).read_text())
    manifest_beside(shipped).write_text(json.dumps(man, indent=1, ensure_ascii=False), encoding="utf-8")  # as shipped
    from accapp.analysis.separation import write_summary

    write_summary(shipped)
    return figures


def _rows(path: Path) -> int:
    return pq.ParquetFile(path).metadata.num_rows


def kept_or_rescored(old: pd.DataFrame, new: pd.DataFrame) -> str:
    """Every row shipped before is in the new file. Its scores are the same bit for bit, except in a unit the run
    scored again because it now covers more pairs (a shipped sample's unit run whole: its pairs share passes with
    others, so float32 sums move). There each score may move by at most its tie tolerance, and no verdict may
    change. Raises SystemExit otherwise; returns what it found, in a line."""
    both = old.merge(new, on=KEY, how="left", suffixes=("", "_new"), indicator=True)
    lost = int((both._merge != "both").sum())
    moved = ((both.score_good != both.score_good_new) & both.score_good.notna()).to_numpy() | (
        (both.score_bad != both.score_bad_new) & both.score_bad.notna()).to_numpy()
    unit = ["paradigm", "method", "template", "variant"]
    sizes = new.groupby(unit, dropna=False).size()
    grew = sizes > old.groupby(unit, dropna=False).size().reindex(sizes.index, fill_value=0)
    rescored = pd.MultiIndex.from_frame(both[unit]).isin(grew[grew].index)
    drift = np.maximum(np.abs(both.score_good - both.score_good_new), np.abs(both.score_bad - both.score_bad_new))
    within = drift.to_numpy() <= tolerances_of_results(old)
    same = (((both.correct == both.correct_new) | (both.correct.isna() & both.correct_new.isna()))
            & (both.tie == both.tie_new)).to_numpy()
    bad = moved & ~(rescored & within & same)
    if lost or bad.any():
        raise SystemExit(f"{lost} shipped rows missing and {int(bad.sum())} scores changed: nothing shipped")
    if not moved.any():
        return f"every one of the {len(old):,} shipped rows kept unchanged"
    return (f"every one of the {len(old):,} shipped rows kept; {int(moved.sum()):,} of them in units scored again on more "
            f"pairs moved by at most {float(drift[moved].max()):.1e} nats, each within its tie tolerance, no verdict changed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["start", "status", "stop", "ship"])
    ap.add_argument("benchmark")
    ap.add_argument("model")
    ap.add_argument("--methods", default="all")
    ap.add_argument("--per-paradigm", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=Path("/tmp/cpu-halves"))
    ap.add_argument("--shipped", type=Path, default=SHIPPED, help="the shipped results folder (default: precomputed/results)")
    ap.add_argument("--dry-run", action="store_true", help="ship: merge and check, write nothing into precomputed/")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    {"start": start, "status": status, "stop": stop, "ship": ship}[args.action](args)


if __name__ == "__main__":
    main()
