"""`bench --suite` and `report --suites`: SyntaxGym test suites from the command line.

    python -m accapp bench --suite ID|all|FILE.json --model M [--out runs] [--consolidate-to precomputed/suites]
    python -m accapp report --suites --model M [--format table|json] [--by suite|circuit] [--results DIR]

They are options of the `bench` and `report` commands, added to their parsers here (register).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from accapp.errors import UserError


def _num(x, digits: int = 4):
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else round(x, digits)


# ---- bench --suite ---------------------------------------------------------------------------
def cmd_bench_suites(args) -> int:
    from accapp.cli import engine_from_args, model_kind
    from accapp.runner.suites import consolidate_suites, resolve_suites, run_suites

    if getattr(args, "benchmark", None):
        raise UserError("Give --benchmark or --suite, not both.")
    sources = resolve_suites(args.suite)  # an unknown id or a bad file, before a model loads
    models = [m.strip() for m in args.model.split(",") if m.strip()]
    for model in models:
        kind = model_kind(args, model)
        if kind != "causal":
            raise UserError(f"Region surprisal needs a causal language model, and {model} is a {kind} LM, "
                            "which gives no left-to-right token surprisals.")
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
    for model in models:
        engine = engine_from_args(argparse.Namespace(**{**vars(args), "model": model}))
        summary = run_suites(engine, sources, Path(args.out))
        rate = summary["items_scored"] / summary["seconds"] if summary["seconds"] else 0.0
        print(f"{summary['model']} suites: written: {summary['suites_written']}, skipped (already done): "
              f"{summary['suites_skipped']}; {summary['items_scored']} items in {summary['seconds']:.1f} s "
              f"({rate:.2f} items/s)")
        for sid, s in summary["per_suite"].items():
            print(f"  {sid}: accuracy {s['accuracy']:.3f} over {s['items']} items ({s['seconds']:.1f} s)")
        for folder in summary["folders"]:
            print(f"results: {folder}")
        if args.consolidate_to:
            for collection in dict.fromkeys(s.collection for s in sources):
                for path in consolidate_suites(Path(args.out), Path(args.consolidate_to), engine.model_id, collection):
                    print(f"consolidated: {path}")
    return 0


# ---- report --suites -------------------------------------------------------------------------
def report_rows(model: str | None, folder=None, by: str = "suite") -> tuple[str, list[dict]]:
    """(model, rows): one dict per suite (or per circuit, then "SG score"), accuracies in [0, 1]."""
    from accapp.analysis import suites as S

    model = model or (S.models(folder)[0] if len(S.models(folder)) == 1 else None)
    outcomes = S.read(model, "outcomes", folder)
    model = str(outcomes["model"].iloc[0]) if len(outcomes) else str(model)
    table = S.circuit_table(outcomes=outcomes) if by == "circuit" else S.suite_table(outcomes=outcomes)
    label = S.published_label()
    rows = []
    for rec in table.to_dict("records"):
        row = {k: (_num(v) if isinstance(v, float) else v) for k, v in rec.items()}
        if "prediction_accuracy" in row:
            row["prediction_accuracy"] = [_num(v) for v in row["prediction_accuracy"]]
        row["interval"] = S.INTERVALS
        row["published_gpt2_source"] = label
        rows.append(row)
    return model, rows


def _fmt(v) -> str:
    return "     -" if v is None else f"{v:6.3f}"


def _suite_lines(rows: list[dict]) -> list[str]:
    head = f"{'suite':26} {'circuit':27} {'items':>5} {'preds':>5} {'acc':>6}  {'95% interval':15} {'GPT-2*':>6}"
    lines = [head, "-" * len(head)]
    for r in rows:
        circuit = (r["circuit"] or "-") + ("" if r["in_paper_figures"] else " (not in figures)")
        ci = "-" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
        lines.append(f"{r['suite']:26} {circuit[:27]:27} {r['items']:>5} {r['predictions']:>5} {_fmt(r['accuracy'])}  "
                     f"{ci:15} {_fmt(r['published_gpt2'])}")
    return lines


def _circuit_lines(rows: list[dict]) -> list[str]:
    head = f"{'circuit':27} {'suites':>6} {'items':>5} {'acc':>6}  {'95% interval':15} {'GPT-2*':>6}"
    lines = [head, "-" * len(head)]
    for r in rows:
        ci = "-" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
        lines.append(f"{r['circuit']:27} {r['suites']:>6} {r['items']:>5} {_fmt(r['accuracy'])}  {ci:15} "
                     f"{_fmt(r['published_gpt2'])}")
    return lines


def cmd_report_suites(args) -> int:
    if getattr(args, "benchmark", None):
        raise UserError("Give --benchmark or --suites, not both.")
    folder = args.results
    by = args.by or "suite"
    model, rows = report_rows(args.model, folder, by)
    if args.format == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    _, circuits = report_rows(model, folder, "circuit") if by == "suite" else (model, rows)
    label = rows[0]["published_gpt2_source"] if rows else ""
    lines = [f"model: {model}   SyntaxGym test suites (Hu et al. 2020)   accuracy: share of items on which every "
             "prediction holds", f"interval: {rows[0]['interval'] if rows else ''}", f"GPT-2*: {label}", ""]
    if by == "suite":
        lines += _suite_lines(rows) + [""]
    lines += ["per circuit: the mean of its suites' accuracies (the suites of the paper's figures)"]
    lines += _circuit_lines(circuits)
    print("\n".join(lines))
    return 0


# ---- the options on `bench` and `report` -------------------------------------------------------
def register(sub, add_model_args=None) -> None:
    """Add --suite to `bench` and --suites to `report` (parsers made by cli/bench.py and
    analysis/report.py), routing to this module's commands when they are given."""
    bench = sub.choices["bench"]
    bench.add_argument("--suite", default=None, metavar="ID|all|FILE",
                       help="score SyntaxGym test suites instead of a benchmark: a shipped suite id (comma-separated "
                            "ids), 'all' for the 34 of Hu et al. 2020, or a SyntaxGym JSON file of your own; region "
                            "surprisals and each item's predictions, one file per suite under OUT/<model>/suites/ "
                            "(resumable); --consolidate-to DIR merges them for `report --suites` (precomputed/suites)")
    bench_func = bench.get_default("func")
    bench.set_defaults(func=lambda args: cmd_bench_suites(args) if args.suite else _needs(args, "--benchmark", bench_func))

    report = sub.choices["report"]
    report.add_argument("--suites", action="store_true",
                        help="the SyntaxGym test suites' report instead of a benchmark's: per suite, items, predictions, "
                             "accuracy (share of items passing every prediction) with its 95%% bootstrap interval over "
                             "items and the published GPT-2's; the table format adds the per-circuit summary below "
                             "(read from --results, default precomputed/suites)")
    report.add_argument("--by", default=None, choices=["suite", "circuit"],
                        help="with --suites: one row per suite (default) or per circuit of Hu et al. 2020 and the SG score")
    report_func = report.get_default("func")
    report.set_defaults(func=lambda args: cmd_report_suites(args) if args.suites else _needs(args, "--benchmark", report_func))


def _needs(args, option: str, func) -> int:
    if not getattr(args, option.lstrip("-"), None):
        raise UserError(f"Give {option} (or --suite for bench, --suites for report).")
    return func(args)
