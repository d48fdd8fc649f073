"""Imports run one way (the layers of DESIGN's "One way through the code"):

    models <- scoring <- methods <- engine <- service <- {runner, public API} <- cli;  service <- ui
    store <- analysis <- {service, cli}

The runner sits above service: its workers get their engines from the model host (service/host.py).

Every import counts, at the top of a module or inside a function. A module may import the
shared leaves (errors, schema, files, words, prompts, settings, benchmarks) and the layers its own layer lists.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "accapp"
LEAVES = {"errors", "schema", "files", "words", "prompts", "settings", "benchmarks"}
ALLOWED = {
    "models": set(),
    "scoring": {"models"},
    "methods": {"models", "scoring"},
    "engine": {"models", "scoring", "methods"},
    "store": set(),
    "analysis": {"store"},
    # Above service: a Ray worker gets its engine from the model host, as the app and the API do.
    "runner": {"models", "scoring", "methods", "engine", "service"},
    "service": {"models", "methods", "engine", "store", "analysis"},  # not runner: the benchmarks are a leaf
    "public": {"models", "methods", "engine", "service"},  # engines from the model host
    "cli": {"models", "methods", "engine", "runner", "analysis", "store"},
    # The UI shows what the service hands it (issue 33): models, engines, the runner and the store only
    # through service/ (the host, the catalog). Explore still reads the analyses itself (to move).
    "ui": {"methods", "service", "analysis"},
}


def _layer(path: Path) -> str:
    part = path.relative_to(ROOT).parts[0]
    return part[:-3] if part.endswith(".py") else part


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}  # `from accapp import ui`
    return out


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        if path.parent == ROOT and path.name in ("__init__.py", "__main__.py"):
            continue  # the package's front door: lazy re-exports only
        yield path, _layer(path)


def _accapp_layers(names: set[str]) -> set[str]:
    return {n.split(".")[1] for n in names if n.startswith("accapp.") and n.count(".") >= 1}


def test_every_module_belongs_to_a_known_layer():
    assert {layer for _, layer in _modules()} <= set(ALLOWED) | LEAVES


def test_imports_run_one_way():
    wrong = []
    for path, layer in _modules():
        allowed = ALLOWED.get(layer, set()) | LEAVES | {layer}
        if layer in LEAVES:
            allowed = LEAVES | {"models"} if layer == "prompts" else LEAVES
        for target in sorted(_accapp_layers(_imports(path)) - allowed):
            wrong.append(f"{path.relative_to(ROOT.parent)} ({layer}) imports accapp.{target}")
    assert not wrong, "\n".join(wrong)


def test_scoring_never_imports_methods_and_ui_never_scores_or_queries():
    for path, layer in _modules():
        names = _imports(path)
        if layer == "scoring":
            assert not any(n.startswith("accapp.methods") for n in names), path
        if layer == "ui":
            assert not any(n.startswith("accapp.scoring") or n.split(".")[0] == "duckdb" for n in names), path


def test_the_check_catches_a_wrong_way_import(tmp_path):
    bad = tmp_path / "x.py"
    bad.write_text("def f():\n    from accapp.methods import resolve\n", encoding="utf-8")
    assert "accapp.methods" in _imports(bad)
    assert _accapp_layers(_imports(bad)) == {"methods"}
