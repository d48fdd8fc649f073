"""Imports run one way (the layers of DESIGN's "One way through the code"):

    models <- scoring <- methods <- engine <- service <- {runner, public API} <- cli;  service <- ui
    store <- analysis <- {service, cli}

The runner sits above service: its workers get their engines from the model host (service/host.py).

Every import counts, at the top of a module or inside a function. A module may import the
shared leaves (errors, schema, files, words, segment, prompts, settings, benchmarks) and the layers its own layer lists.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "accapp"
LEAVES = {"errors", "schema", "files", "words", "segment", "prompts", "settings", "benchmarks", "version", "logs", "languages"}
ALLOWED = {
    "models": set(),
    "scoring": {"models"},
    "methods": {"models", "scoring"},
    "engine": {"models", "scoring", "methods"},
    "store": set(),
    "analysis": {"store", "suites"},  # suites: the shipped suites' circuits and published accuracies
    # Above service: a Ray worker gets its engine from the model host, as the app and the API do.
    "runner": {"models", "scoring", "methods", "engine", "service", "suites"},
    # not runner: the benchmarks are a leaf; suites: the Design view scores a typed item as a one-item suite
    "service": {"models", "methods", "engine", "store", "analysis", "suites"},
    "public": {"models", "methods", "engine", "service"},  # engines from the model host
    "cli": {"models", "methods", "engine", "runner", "analysis", "store", "suites"},
    # SyntaxGym test suites: reading, formulas, region surprisals from the scoring layer's word probabilities
    "suites": {"scoring"},
    # The UI shows what the service hands it (issue 33): models, engines, the runner, the store and the
    # analyses only through service/ (the host, the catalog, Explore's view model).
    "ui": {"methods", "service"},
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


def _lint_imports(config: Path) -> tuple[int, str]:
    """import-linter's contracts (pyproject.toml's [tool.importlinter]) over the package: (exit code, report)."""
    import subprocess
    import sys

    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(config_filename=sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", code, str(config)], cwd=ROOT.parent, capture_output=True, text=True,
                          timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_import_linter_contracts_hold():
    """The contracts in pyproject.toml, checked by the tool made for it: ui imports only service/ and the
    leaves; service/ never reaches the runner, the CLI or the UI; the model host imports nothing from its
    callers; no circle among the modules of any package."""
    rc, report = _lint_imports(ROOT.parent / "pyproject.toml")
    assert rc == 0, report
    assert "4 kept, 0 broken" in report


def test_no_module_below_the_front_door_imports_the_package_root():
    """`import accapp` (the front door: accapp/__init__.py imports the Python API, which imports the
    service) from below it would draw an arrow back up; the version lives in a leaf (accapp/version.py)."""
    wrong = []
    for path, _ in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import) and any(a.name == "accapp" for a in node.names):
                wrong.append(f"{path.relative_to(ROOT.parent)}: import accapp")
            elif isinstance(node, ast.ImportFrom) and node.module == "accapp" and node.level == 0:
                wrong += [f"{path.relative_to(ROOT.parent)}: from accapp import {a.name}" for a in node.names
                          if not (ROOT / a.name).is_dir() and not (ROOT / f"{a.name}.py").is_file()]
    assert not wrong, "\n".join(wrong)


def test_import_linter_catches_a_broken_contract(tmp_path):
    """The same tool fails on a contract the code breaks (service/ imports models/), so the test above can fail."""
    config = tmp_path / "broken.toml"
    config.write_text('[tool.importlinter]\nroot_package = "accapp"\n\n[[tool.importlinter.contracts]]\n'
                      'name = "no models in the service"\ntype = "forbidden"\nsource_modules = ["accapp.service"]\n'
                      'forbidden_modules = ["accapp.models"]\n', encoding="utf-8")
    rc, report = _lint_imports(config)
    assert rc != 0 and "BROKEN" in report.upper()
