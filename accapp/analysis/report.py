"""`python -m accapp report`: accuracy of every method of a run, from the store.

    python -m accapp report --benchmark blimp --model M [--format table|json] [--results DIR] [--methods a,b]

For every method: one row per template (its id, "-" for methods without one), and for methods
with numbered templates (Ide et al.'s 1-5) also "mean", "sd" (sample sd, ddof=1) and "max"
(the best template's row; ``best_template`` names it). Each row: pairs, overall accuracy (mean
over paradigms) and accuracy per phenomenon (mean over its items), in percent, by the papers' rule
(right when score(good) > score(bad): BLiMP, Ide et al. 2025, Kauf & Ivanova 2023); beside it
``accuracy_ties_wrong``, the project's rule (``ties``: judgments within the method's tie tolerance,
counted wrong; the table shows it where it differs), and ``left_out``, pairs flagged "identical"
(the same sentence twice) that no accuracy counts.

Then, for each per-string measure the run holds (LP, MeanLP, PenLP, the Bayes factors, SLOR), one row
with ``measure: "separation_auc"``: Hu et al. 2025's separation of every string pooled (§6.3; good
sentences class 1), its 95 % bootstrap interval, and the strings it pools (accapp.analysis.separation).
A benchmark of single labelled sentences (CoLA) has these rows only.
"""

from __future__ import annotations

import json
import math


def _num(x, digits: int = 4):
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else round(x, digits)


def report_rows(store, model: str, benchmark: str, methods=None) -> list[dict]:
    """The report as a list of dicts: method, template, [best_template], pairs, ties, accuracy,
    accuracy_ties_wrong, left_out, by_phenomenon (accuracy: the papers' rule; ties and
    accuracy_ties_wrong: the project's)."""
    from accapp.analysis.accuracy import TIES, left_out, method_summary

    df = method_summary(store, model, benchmark, methods)
    ours = method_summary(store, model, benchmark, methods, rule=TIES)
    ours = ours[ours.phenomenon == "overall"].set_index(["method", "template"])
    gone = left_out(store, model, benchmark, methods).groupby("method").pairs.sum()
    out: list[dict] = []
    index: dict[tuple, dict] = {}
    for rec in df.itertuples(index=False):
        key = (rec.method, rec.template)
        if key not in index:
            row = {"method": rec.method, "template": rec.template}
            best = rec.best_template
            if isinstance(best, str) and best:
                row["best_template"] = best
            row.update({"pairs": None, "ties": None, "accuracy": None, "by_phenomenon": {}})
            index[key] = row
            out.append(row)
        row = index[key]
        if rec.phenomenon == "overall":
            tied = ours.loc[(rec.method, rec.template)]
            row["pairs"], row["ties"], row["accuracy"] = int(rec.pairs), int(tied.ties), _num(rec.accuracy)
            row["accuracy_ties_wrong"] = _num(tied.accuracy)
            row["left_out"] = int(gone.get(rec.method, 0))
        else:
            row["by_phenomenon"][rec.phenomenon] = _num(rec.accuracy)
    return out


def separation_rows(store, model: str, benchmark: str, methods=None) -> list[dict]:
    """One row per per-string measure of the run: method, template "-", measure "separation_auc", strings,
    n_good, n_bad, auc, ci_low, ci_high, interval (how the interval is made)."""
    from accapp.analysis.separation import INTERVAL_SOURCE, SEPARATION_METRICS, separation_intervals

    if methods is not None and not store.has_sentences(model, benchmark):
        methods = [m for m in methods if m in SEPARATION_METRICS]
        if not methods:
            return []
    df = separation_intervals(store, model, benchmark, methods)
    return [{"method": r.metric, "template": "-", "measure": "separation_auc", "strings": int(r.strings),
             "n_good": int(r.n_good), "n_bad": int(r.n_bad), "auc": _num(r.auc), "ci_low": _num(r.ci_low),
             "ci_high": _num(r.ci_high), "interval": INTERVAL_SOURCE} for r in df.itertuples(index=False)]


def _separation_table(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    lines = ["", "separation AUC (Hu et al. 2025 §6.3: every string pooled, acceptable = class 1; "
             f"{rows[0]['interval']})", f"{'method':27} {'strings':>8} {'good':>7} {'bad':>7} {'AUC':>7}  95 % interval"]
    for r in rows:
        lines.append(f"{r['method']:27} {r['strings']:>8} {r['n_good']:>7} {r['n_bad']:>7} {r['auc']:7.4f}  "
                     f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]")
    return lines


def _table(rows: list[dict], model: str, benchmark: str) -> str:
    phenomena = sorted({p for r in rows for p in r["by_phenomenon"]})
    short = [p[:10] for p in phenomena]
    head = (f"{'method':27} {'template':11} {'pairs':>6} {'ties':>5} {'acc':>6} {'ties-w':>6}  "
            + " ".join(f"{s:>10}" for s in short))
    lines = [f"model: {model}   benchmark: {benchmark}   (accuracy in %, overall = mean over paradigms)",
             "acc: the papers' rule, right when score(good) > score(bad); ties-w: this project's, the ties (within the "
             "method's tolerance) wrong, where it differs", head, "-" * len(head)]
    def fmt(v):
        return "      -" if v is None else f"{v:6.1f}"
    for r in rows:
        t = r["template"] + (f"({r['best_template']})" if r.get("best_template") else "")
        cells = " ".join(f"{'-' if r['by_phenomenon'].get(p) is None else format(r['by_phenomenon'][p], '.1f'):>10}"
                         for p in phenomena)
        ours = r.get("accuracy_ties_wrong")
        beside = fmt(ours) if ours is not None and r["accuracy"] is not None and round(ours, 1) != round(r["accuracy"], 1) else " " * 6
        lines.append(f"{r['method']:27} {t:11} {r['pairs']:>6} {r['ties']:>5} {fmt(r['accuracy'])} {beside}  {cells}")
    left = {r["method"]: r["left_out"] for r in rows if r.get("left_out")}
    if left:
        lines.append("")
        lines.append("left out of every accuracy (pairs whose two sentences are identical): "
                     + ", ".join(f"{m} {n}" for m, n in left.items()))
    if phenomena:
        lines.append("")
        lines.append("phenomena: " + ", ".join(phenomena))
    return "\n".join(lines)


def cmd_report(args) -> int:
    from accapp.errors import UserError
    from accapp.store import Store

    with Store(args.results) as store:
        check_benchmark(store, args.benchmark)
        model = args.model
        if model is None:
            models = store.models(args.benchmark) or store.sentence_models(args.benchmark)
            if len(models) != 1:
                known = ", ".join(models) if models else "none"
                raise UserError(f"Give --model; models with {args.benchmark} results: {known}.")
            model = models[0]
        methods = None if args.methods in (None, "", "all") else [m for m in args.methods.split(",") if m]
        sentences = store.has_sentences(model, args.benchmark)
        rows = [] if sentences else report_rows(store, model, args.benchmark, methods)
        separation = separation_rows(store, model, args.benchmark, methods)
    if args.format == "json":
        print(json.dumps(rows + separation, ensure_ascii=False, indent=1))
    else:
        head = [f"model: {model}   benchmark: {args.benchmark}   (single labelled sentences)"] if sentences else [
            _table(rows, model, args.benchmark)]
        print("\n".join(head + _separation_table(separation)))
    return 0


def check_benchmark(store, benchmark) -> None:
    """UserError, in one sentence listing the known ones, for a benchmark that is neither built in nor
    in the results folder (a user file's results go under its name)."""
    from accapp.benchmarks import NAMES
    from accapp.errors import UserError

    found = set(store.benchmarks()) | set(store.sentence_catalog().benchmark)
    if benchmark not in NAMES and benchmark not in found:
        known = list(NAMES) + sorted(found - set(NAMES))
        raise UserError(f"Unknown benchmark {benchmark!r}; the known ones are {', '.join(known)}.")


def register(sub, add_model_args=None) -> None:
    from accapp.benchmarks import NAMES  # the built-in benchmarks, for the help

    """Add `report` to the CLI's sub-parsers (the model options of other commands are not needed here)."""
    p = sub.add_parser("report", help="accuracy of every method of a benchmark run, from precomputed results")
    p.add_argument("--benchmark", default=None, help=f"{', '.join(NAMES)}, or a user file's name (or --suites)")
    p.add_argument("--model", default=None, help="model id of the run (default: the only one with results)")
    p.add_argument("--format", default="table", choices=["table", "json"])
    p.add_argument("--results", default=None,
                   help="results folder (default: $ACCAPP_RESULTS_DIR or precomputed/results)")
    p.add_argument("--methods", default="all", help="comma-separated method ids, or 'all'")
    p.set_defaults(func=cmd_report)
