"""Command line: `python -m accapp models|score|bench|consolidate|report ...` (also the `accapp` script)."""

from __future__ import annotations

import argparse
import json
import sys

from accapp import languages, settings
from accapp.errors import UserError, shown


def _add_model_args(p: argparse.ArgumentParser) -> None:
    from accapp.engine import convention_ids
    from accapp.models import DEFAULT_MODEL

    p.add_argument("--model", default=DEFAULT_MODEL,
                   help="a registry id (python -m accapp models), a Hugging Face hub id org/name[@revision], "
                        "a local folder (config.json, weights, tokenizer) or a .gguf file")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="let a model that ships its own code (auto_map in its config) run it: only for code you trust")
    p.add_argument("--max-memory", default=None, metavar="SIZE",
                   help="refuse a model whose estimated memory exceeds SIZE ('16GB', '1500MB', bytes) before it loads "
                        "(default: ACCAPP_MEMORY_BUDGET, else this machine's memory less 1 GiB)")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--quantization", default=None, choices=["nf4"], help="4-bit NF4 through bitsandbytes")
    p.add_argument("--methods", default="all", help="comma-separated method ids, or 'all'")
    p.add_argument("--language", default=None, choices=languages.codes(),
                   help="template language, a code of the language table (default: detected)")
    p.add_argument("--in-template-scope", default="whole", choices=["whole", "sentence"],
                   help="in-template LP over the whole input string (the paper's choice) or the sentence only")
    p.add_argument("--batch-size", type=int, default=None,
                   help="strings per forward pass (masked LMs: masked copies); default: the scorer's own")
    p.add_argument("--convention", default="project", choices=convention_ids(),
                   help="project (default: start token, eq. 5 softmax, the project's words) or the authors' code "
                        "reproduced exactly (authors; authors_raw_logit adds their raw-logit Yes/No ratio)")


def cmd_models(args) -> int:
    from accapp.models import registry

    if args.inspect:
        return cmd_inspect(args)
    specs = registry().values()
    if args.format == "json":
        keys = ("id", "name", "kind", "variant", "languages", "hub_id", "start_token", "license", "embedded")
        print(json.dumps([{k: getattr(s, k) for k in keys} for s in specs], ensure_ascii=False, indent=1))
        return 0
    print(f"{'id':28} {'kind':7} {'variant':9} {'languages':10} {'offline':8} license")
    for s in specs:
        print(f"{s.id:28} {s.kind:7} {s.variant:9} {','.join(s.languages):10} {'yes' if s.embedded else 'hub':8} {s.license}")
    return 0


def _mib(n: int) -> str:
    if n < 2**20:
        return f"{n / 2**10:,.0f} KiB"
    return f"{n / 2**20:,.0f} MiB" if n < 2**30 else f"{n / 2**30:,.2f} GiB"


def cmd_inspect(args) -> int:
    """`models --inspect MODEL`: the conventions found from the model, its parameters and memory, no weights loaded."""
    from accapp.models.describe import describe_model

    info = describe_model(args.inspect, getattr(args, "trust_remote_code", False))
    if args.format == "json":
        print(json.dumps(info, ensure_ascii=False, indent=1, default=str))
        return 0
    found, mem = info["found"], info["weight_bytes"]
    where = info["source"].get("path") or info["hub_id"] or info["source"].get("type")
    print(f"model:        {info['model']}  ({'registry' if info['in_registry'] else info['source']['type']}: {where}"
          f"{'@' + info['revision'] if info['revision'] else ''})")
    print(f"kind:         {info['kind']}" + (f" ({', '.join(info['architectures'])})" if info["architectures"] else ""))
    print(f"parameters:   {info['params']:,} ({info['estimate']})")
    print("memory:       weights " + " · ".join(f"{k if k != 'nf4' else '4-bit NF4'} {_mib(v)}" for k, v in mem.items()))
    print(f"start token:  {found['start_token'] or 'none'}  ({found['start_token_from']})")
    print(f"variant:      {found['variant']}  ({found['variant_from']})")
    for name, answers in found.get("answers", {}).items():
        said = ", ".join(f"{a}={f['id']}" if f["one_token"] else f"{a}: {len(f['after_prompt'])} tokens"
                         for a, f in answers.items())
        print(f"answers:      {name}: {said}")
    if "zh_answers" in found:
        print(f"Chinese:      prompts ask for {found['zh_answers']}")
    print(f"languages:    {found['languages']}")
    for reason in info["unavailable"].values():
        print(f"unavailable:  {reason}")
    if info["in_registry"]:
        used = info["used"]
        print(f"registry:     start token {used['start_token'] or 'none'}, {used['variant']}, languages "
              f"{','.join(used['languages']) if isinstance(used['languages'], list) else used['languages']} "
              "(the registry's facts are used)")
    return 0


def max_memory_of(args) -> int:
    """The CLI's memory budget for a model: --max-memory, else ACCAPP_MEMORY_BUDGET, else the
    machine's memory less 1 GiB (the command line hosts nothing else)."""
    from accapp.models.budget import machine_memory, parse_bytes
    from accapp.models.memory import GiB

    value = getattr(args, "max_memory", None) or settings.text("ACCAPP_MEMORY_BUDGET")
    if not value:
        return max(GiB // 2, machine_memory() - GiB)
    try:
        return parse_bytes(value)
    except ValueError as exc:
        raise UserError(f"--max-memory '{shown(value)}' is not a size; write it as 16GB, 1500MB or bytes.") from exc


def model_kind(args, model: str | None = None) -> str:
    """The model's kind from its config alone (before any weight loads): bad model names fail here."""
    from accapp.models.resolve import resolve_model

    return resolve_model(model or args.model, getattr(args, "trust_remote_code", False)).kind


def engine_from_args(args):
    """The engine for the CLI's model options (accapp.engine.build_engine, as the app and runner use)."""
    from accapp.engine import build_engine

    return build_engine(args.model, args.dtype, args.quantization, language=args.language,
                        in_template_scope=args.in_template_scope, batch_size=args.batch_size,
                        convention=getattr(args, "convention", None),
                        trust_remote_code=getattr(args, "trust_remote_code", False), max_memory=max_memory_of(args))


def cmd_score(args) -> int:
    from accapp.errors import check_context, validate_sentence
    from accapp.methods import resolve
    from accapp.schema import IDENTICAL_WARNING, pair_flag

    resolve(args.methods, model_kind(args))  # fail fast on bad input, before loading a model
    validate_sentence(args.good, "acceptable sentence")
    validate_sentence(args.bad, "unacceptable sentence")
    check_context(args.context)
    engine = engine_from_args(args)
    result = engine.score_pair(args.good, args.bad, args.methods, args.language, context=args.context)
    unavailable = result.unavailable  # methods the model cannot run, each with its reason, in place of its scores
    flag = pair_flag(result.pair.good, result.pair.bad)
    warnings = [IDENTICAL_WARNING] if flag else []
    if args.format == "json":
        for w in warnings:  # on stderr too, so a pipe of the JSON still shows it
            print(f"warning: {w}", file=sys.stderr)
        print(json.dumps({
            "model": args.model,
            "good": result.pair.good,
            "bad": result.pair.bad,
            "flag": flag,
            "warnings": warnings,
            **({"context": result.pair.context} if result.pair.context else {}),
            "tokens": result.tokens,
            "methods": result.rows,
            **({"unavailable": unavailable} if unavailable else {}),
        }, ensure_ascii=False, indent=1))
        return 0
    context = f"context (not scored): {result.pair.context}\n" if result.pair.context else ""
    print(f"model: {args.model}\n{context}good:  {result.pair.good}\nbad:   {result.pair.bad}\n")
    print(f"{'method':28} {'template':11} {'variant':8} {'score_good':>12} {'score_bad':>12}  verdict")
    for r in result.scores:
        print(f"{r.method:28} {r.template:11} {r.variant:8} {r.score_good:12.4f} {r.score_bad:12.4f}  {r.verdict}")
    for method, reason in unavailable.items():
        print(f"{method:28} {'-':11} {'':8} {'unavailable':>12}  {reason}")
    for w in warnings:
        print(f"\nwarning: {w}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accapp", description="Acceptability Explorer: LM grammaticality judgments.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("models", help="list the model registry, or inspect any model (--inspect)")
    p.add_argument("--format", default="table", choices=["table", "json"])
    p.add_argument("--inspect", default=None, metavar="MODEL",
                   help="what is found from MODEL (a registry id, hub id, folder or .gguf file) without loading its "
                        "weights: start token, base or instruct, answer tokens, parameters, memory per dtype and 4-bit")
    p.add_argument("--trust-remote-code", action="store_true", help="let a model that ships its own code run it")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("score", help="score one minimal pair under every selected method")
    p.add_argument("--good", required=True)
    p.add_argument("--bad", required=True)
    p.add_argument("--context", default=None, help="text both sentences follow (a discourse, a question), not scored: "
                   "the LP family and PLL condition on it; in-template and prompting methods do not read it")
    p.add_argument("--format", default="table", choices=["table", "json"])
    _add_model_args(p)
    p.set_defaults(func=cmd_score)

    for extra in _extra_commands():
        extra(sub, _add_model_args)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("error: out of memory; try a smaller --batch-size or a smaller model", file=sys.stderr)
        return 3
    except Exception as exc:  # noqa: BLE001 - the CLI prints a message, never a traceback
        if settings.flag("ACCAPP_DEBUG"):
            raise
        print(f"error: {type(exc).__name__}: {exc} (set ACCAPP_DEBUG=1 for details)", file=sys.stderr)
        return 1


def _extra_commands():
    """Sub-commands that live beside what they run: bench and consolidate, report; then the suites'
    options of bench and report (cli/suites.py)."""
    from accapp.analysis import report
    from accapp.cli import bench, suites

    return [bench.register, report.register, suites.register]
