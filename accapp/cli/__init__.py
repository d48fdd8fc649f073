"""Command line: `python -m accapp models|score|bench|consolidate|report ...` (also the `accapp` script)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from accapp.errors import UserError


def _add_model_args(p: argparse.ArgumentParser) -> None:
    from accapp.engine import convention_ids
    from accapp.models import DEFAULT_MODEL

    p.add_argument("--model", default=DEFAULT_MODEL, help="a registry model id (python -m accapp models)")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--quantization", default=None, choices=["nf4"], help="4-bit NF4 through bitsandbytes")
    p.add_argument("--methods", default="all", help="comma-separated method ids, or 'all'")
    p.add_argument("--language", default=None, choices=["en", "zh"], help="template language (default: detected)")
    p.add_argument("--in-template-scope", default="whole", choices=["whole", "sentence"],
                   help="in-template LP over the whole input string (the paper's choice) or the sentence only")
    p.add_argument("--batch-size", type=int, default=None,
                   help="strings per forward pass (masked LMs: masked copies); default: the scorer's own")
    p.add_argument("--convention", default="project", choices=convention_ids(),
                   help="project (default: start token, eq. 5 softmax, the project's words) or the authors' code "
                        "reproduced exactly (authors; authors_raw_logit adds their raw-logit Yes/No ratio)")


def cmd_models(args) -> int:
    from accapp.models import registry

    specs = registry().values()
    if args.format == "json":
        keys = ("id", "name", "kind", "variant", "languages", "hub_id", "start_token", "license", "embedded")
        print(json.dumps([{k: getattr(s, k) for k in keys} for s in specs], ensure_ascii=False, indent=1))
        return 0
    print(f"{'id':28} {'kind':7} {'variant':9} {'languages':10} {'offline':8} license")
    for s in specs:
        print(f"{s.id:28} {s.kind:7} {s.variant:9} {','.join(s.languages):10} {'yes' if s.embedded else 'hub':8} {s.license}")
    return 0


def engine_from_args(args):
    """The engine for the CLI's model options (accapp.engine.build_engine, as the app and runner use)."""
    from accapp.engine import build_engine

    return build_engine(args.model, args.dtype, args.quantization, language=args.language,
                        in_template_scope=args.in_template_scope, batch_size=args.batch_size,
                        convention=getattr(args, "convention", None))


def cmd_score(args) -> int:
    from accapp.errors import validate_sentence
    from accapp.methods import resolve
    from accapp.models import get_spec

    resolve(args.methods, get_spec(args.model).kind)  # fail fast on bad input, before loading a model
    validate_sentence(args.good, "good sentence")
    validate_sentence(args.bad, "bad sentence")
    engine = engine_from_args(args)
    result = engine.score_pair(args.good, args.bad, args.methods, args.language)
    if args.format == "json":
        print(json.dumps({
            "model": args.model,
            "good": result.pair.good,
            "bad": result.pair.bad,
            "tokens": result.tokens,
            "methods": result.rows,
        }, ensure_ascii=False, indent=1))
        return 0
    print(f"model: {args.model}\ngood:  {result.pair.good}\nbad:   {result.pair.bad}\n")
    print(f"{'method':28} {'template':11} {'variant':8} {'score_good':>12} {'score_bad':>12}  verdict")
    for r in result.scores:
        print(f"{r.method:28} {r.template:11} {r.variant:8} {r.score_good:12.4f} {r.score_bad:12.4f}  {r.verdict}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accapp", description="Acceptability Explorer: LM grammaticality judgments.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("models", help="list the model registry")
    p.add_argument("--format", default="table", choices=["table", "json"])
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("score", help="score one minimal pair under every selected method")
    p.add_argument("--good", required=True)
    p.add_argument("--bad", required=True)
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
        if os.environ.get("ACCAPP_DEBUG"):
            raise
        print(f"error: {type(exc).__name__}: {exc} (set ACCAPP_DEBUG=1 for details)", file=sys.stderr)
        return 1


def _extra_commands():
    """Sub-commands that live beside what they run: bench and consolidate, report."""
    from accapp.analysis import report
    from accapp.cli import bench

    return [bench.register, report.register]
