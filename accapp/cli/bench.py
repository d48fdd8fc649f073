"""`python -m accapp bench` and `python -m accapp consolidate`."""

from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path


def cmd_bench(args) -> int:
    from accapp.cli import model_kind
    from accapp.errors import UserError
    from accapp.methods import resolve, resolve_strings
    from accapp.runner.runner import check_scorable

    shape = check_scorable(args.benchmark)  # an unknown id, before a model loads
    if shape == "sentences" and args.ray is not None:
        raise UserError(f"{args.benchmark} is single sentences: score it without --ray (the Ray runner scores pairs).")
    models = [m.strip() for m in args.model.split(",") if m.strip()]
    for model in models:  # bad models or method ids (a pair's method for single sentences) fail before a model loads
        (resolve_strings if shape == "sentences" else resolve)(args.methods, model_kind(args, model))
    paradigms = [p for p in (args.paradigms or "").split(",") if p] or None
    ray = connected = None
    if args.ray is not None:  # one connection for every model of the run (a clear message without Ray)
        from accapp.runner.ray_runner import connect

        ray, connected = connect(args.ray or None)
    try:
        with _stopped_by_signals():
            for model in models:
                _bench_model(args, model, paradigms)
    finally:
        if connected:
            ray.shutdown()
    return 0


def _bench_model(args, model: str, paradigms) -> None:
    from accapp.benchmarks import bench_name, shape_of
    from accapp.runner import runner, sentences

    steps = sentences if shape_of(args.benchmark) == "sentences" else runner  # restore_units, consolidate
    if args.consolidate_to:
        shipped = runner.consolidated_path(Path(args.consolidate_to), model, bench_name(args.benchmark))
        restored = steps.restore_units(shipped, Path(args.out))
        if restored:
            print(f"resumed from {args.consolidate_to}: {restored} unit files restored")
    if steps is sentences:
        _print_sentence_summary(_run_sentences(args, model, paradigms))
    else:
        _print_summary(_run_one(args, model, paradigms))
        _ratings_report(args, model)
    if args.consolidate_to:
        # Only this run's benchmark: another benchmark's run in the same folder may be unfinished.
        for path in steps.consolidate(Path(args.out), Path(args.consolidate_to), model, bench_name(args.benchmark)):
            print(f"consolidated: {path}")
            _summarise(path)


def _summarise(results_file: Path) -> None:
    """Write the run's separation summary beside its consolidated file (Explore and report read it)."""
    from accapp.analysis.separation import write_summary

    summary = write_summary(results_file)
    if summary is not None:
        print(f"separation summary: {summary}")


def _engine(args, model: str):
    import argparse

    from accapp.cli import engine_from_args  # the same model options as `score`

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    return engine_from_args(argparse.Namespace(**{**vars(args), "model": model}))


def _run_sentences(args, model: str, paradigms) -> dict:
    """One model's run over single sentences, in this process (the per-string methods)."""
    from accapp.runner.sentences import run_sentences

    return run_sentences(_engine(args, model), args.benchmark, args.methods, Path(args.out), args.per_paradigm, args.seed,
                         paradigms, block_size=args.block_size)


def _print_sentence_summary(summary: dict) -> None:
    n, seconds = summary["sentences_scored"], summary["seconds"]
    line = (f"{summary['model']} {summary['benchmark']}: units written: {summary['units_written']}, "
            f"skipped (already done): {summary['units_skipped']}")
    if summary["units_failed"]:
        line += f", failed: {summary['units_failed']} (listed in {summary['failed_file']}; a rerun tries them again)"
    print(line + f"; {n} sentences in {seconds:.1f} s ({n / seconds if seconds else 0.0:.2f} sentences/s)")
    if summary["sentences_failed"]:
        first = summary["errors"][0]
        print(f"sentences not scored: {summary['sentences_failed']} (listed in {summary['errors_file']}); "
              f"first: sentence {first['sentence_id']}: {first['error']}")


def _ratings_report(args, model: str) -> None:
    """A file with human ratings (rating_good/rating_bad, human_delta, fc_good): r between the model's
    and the humans' differences per method, printed and written beside the run (ratings.csv)."""
    from accapp.analysis import ratings
    from accapp.benchmarks import BUILTIN, bench_name, load_benchmark
    from accapp.files import safe_name, write_csv_atomic

    if args.benchmark in BUILTIN:
        return
    pairs = load_benchmark(args.benchmark)
    if not ratings.has_ratings(pairs):
        return
    import pandas as pd

    folder = Path(args.out) / safe_name(model) / safe_name(bench_name(args.benchmark))
    units = sorted((folder / "units").glob("*/*/*.parquet"))
    if not units:
        return
    summary = ratings.summary(ratings.results_points(pd.concat(pd.read_parquet(u) for u in units), pairs))
    path = write_csv_atomic(summary, folder / "ratings.csv")
    for _, r in summary.iterrows():
        tag = "".join(f" [{x}]" for x in (r["template"], r["variant"]) if x not in ("", "-"))
        print(f"  {r['method']}{tag}: Pearson r = {r['pearson_r']:.3f} [{r['pearson_low']:.3f}, {r['pearson_high']:.3f}], "
              f"Spearman r = {r['spearman_r']:.3f}, {int(r['pairs'])} pairs (with the humans' ratings)")
    print(f"ratings: {path}")


@contextlib.contextmanager
def _stopped_by_signals():
    """SIGINT and SIGTERM (Ctrl-C, kill, a job scheduler) stop a run as Ctrl-C does: the runner writes what it
    has scored, and the command exits 130. Also where the run was started with SIGINT ignored, as a shell starts
    its background jobs (`nohup ... &`; scripts/gpu/device.sh stops its runs with SIGINT)."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread sets handlers
        yield
        return
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in before:
        signal.signal(s, signal.default_int_handler)
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)


def _run_one(args, model: str, paradigms) -> dict:
    """One model's run: in this process, or on Ray with --ray."""
    from accapp.runner.runner import run_benchmark

    block_size = args.block_size  # None: the runner's default for these methods (runner.default_block_size)
    if args.ray is None:
        return run_benchmark(_engine(args, model), args.benchmark, args.methods, Path(args.out), args.per_paradigm,
                             args.seed, paradigms, block_size=block_size)
    from accapp.runner.ray_runner import run_benchmark_ray

    config = {"model": model, "dtype": args.dtype, "quantization": args.quantization, "language": args.language,
              "in_template_scope": args.in_template_scope, "batch_size": args.batch_size,
              "convention": getattr(args, "convention", None)}
    return run_benchmark_ray(config, args.benchmark, args.methods, Path(args.out), args.per_paradigm, args.seed, paradigms,
                             address=args.ray or None, workers=args.workers, gpus_per_worker=args.gpus_per_worker,
                             cpus_per_worker=args.cpus_per_worker, block_size=block_size, max_restarts=args.max_restarts)


def _print_summary(summary: dict) -> None:
    line = (f"{summary['model']} {summary['benchmark']}: units written: {summary['units_written']}, "
            f"skipped (already done): {summary['units_skipped']}")
    if summary["units_failed"]:
        line += f", failed: {summary['units_failed']} (listed in {summary['failed_file']}; a rerun tries them again)"
    rate = summary["pairs_scored"] / summary["seconds"] if summary["seconds"] else 0.0
    line += f"; {summary['pairs_scored']} pairs in {summary['seconds']:.1f} s ({rate:.2f} pairs/s)"
    if "workers" in summary:
        line += (f"; Ray: {summary['workers']} workers, started in {summary['startup_seconds']:.1f} s, "
                 f"{summary['worker_restarts']} restarts, {summary['blocks_retried']} blocks retried")
    print(line)
    if summary.get("pairs_identical"):
        print(f"pairs with identical sentences: {summary['pairs_identical']} (flagged \"identical\" in the rows: no pair, "
              "left out of accuracy)")
    if summary.get("pairs_duplicated"):
        print(f"duplicated pairs: {summary['pairs_duplicated']} (the same good and bad sentences as an earlier pair; "
              "each is scored and counted)")
    if summary["pairs_failed"]:
        first = summary["errors"][0]
        print(f"pairs not scored: {summary['pairs_failed']} (listed in {summary['errors_file']}); "
              f"first: pair {first['pair_id']}: {first['error']}")


def cmd_consolidate(args) -> int:
    from accapp.runner import runner, sentences

    for steps in (runner, sentences):  # pairs, then single sentences
        for path in steps.consolidate(Path(args.runs), Path(args.out), args.model, args.benchmark):
            print(path)
            _summarise(path)
    return 0


def register(sub, add_model_args) -> None:
    from accapp.benchmarks import NAMES  # the built-in benchmarks, for the help

    p = sub.add_parser("bench", help="run methods over a benchmark (resumable; one file per unit)",
                       description="--model may list several models (a,b): they run one after another.")
    p.add_argument("--benchmark", default=None, help=f"{', '.join(NAMES)} (or more from ACCAPP_BENCHMARKS), or a "
                   "CSV/JSONL file with good/bad columns")
    p.add_argument("--per-paradigm", type=int, default=None, help="stratified sample of N pairs per paradigm (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs", help="results folder (units + manifest)")
    p.add_argument("--paradigms", default=None, help="comma-separated subset of paradigms")
    p.add_argument("--consolidate-to", default=None, help="also merge the units into DIR/<model>__<benchmark>.parquet")
    p.add_argument("--block-size", type=int, default=None,
                   help="pairs per engine call (a Ray task; what a kill can lose); the same size, and the same torch threads, "
                        "give the same scores (default: 256; 32 where a method builds prompts: runner.default_block_size)")
    p.add_argument("--threads", type=int, default=None, help="torch threads of the serial runner (default: torch's)")
    g = p.add_argument_group("Ray (pip install -r requirements-ray.txt)")
    g.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="score on Ray: alone, the cluster RAY_ADDRESS or `ray start` names, else a new local Ray; "
                        "'auto' (an existing cluster only), 'local', or HOST:6379 / ray://HOST:10001")
    g.add_argument("--workers", type=int, default=None, help="workers per model (default: as many as the cluster holds)")
    g.add_argument("--gpus-per-worker", type=float, default=None,
                   help="GPUs a worker declares, fractional to share one (default: 1 for 3B+ parameters, 0.5 for 1-3B, "
                        "0.25 below; 0 without GPUs)")
    g.add_argument("--cpus-per-worker", type=float, default=1, help="CPU slots a worker declares (= its torch threads)")
    g.add_argument("--max-restarts", type=int, default=3, help="times Ray restarts a dead worker and retries its blocks")
    add_model_args(p)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("consolidate", help="merge a runs folder into precomputed/results")
    p.add_argument("--runs", default="runs")
    p.add_argument("--out", default="precomputed/results")
    p.add_argument("--model", default=None)
    p.add_argument("--benchmark", default=None)
    p.set_defaults(func=cmd_consolidate)
