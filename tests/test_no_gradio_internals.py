"""One adapter, accapp/ui/gradio_internals.py, reads Gradio's private parts; no other file does: the
app's scheduling is its own (accapp.service.file_jobs), not read out of Gradio's queue. Two checks:
the names of Gradio's queue internals the app once read, as text, anywhere but the adapter; and any
private attribute (``x._name``, ``getattr(x, "_name")``) that accapp does not define itself, in ui/
and in every other module that imports Gradio (where Gradio's objects are in hand)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "accapp"
# Gradio's queue and app internals (Blocks._queue and what hangs from it, Event._id, the routes' state)
GRADIO_INTERNALS = re.compile(r"\._queue\b|\._id\b|event_queue_per_concurrency_id|active_jobs|pending_messages_per_session"
                              r"|pending_event_ids_session|event_ids_to_events|iterators_to_reset|\.server_app\b"
                              r"|\.blocks_config\b|_drop_run_streams|process_time_per_fn")


ADAPTER = ROOT / "ui" / "gradio_internals.py"


def _outside_service():
    """Every module but the adapter."""
    return [p for p in sorted(ROOT.rglob("*.py")) if p != ADAPTER]


def _private(name) -> bool:
    return isinstance(name, str) and name.startswith("_") and not name.startswith("__")


def _defined_by_accapp() -> set[str]:
    """Private attributes accapp itself defines: those it assigns (``x._name = ...``) and the
    methods and class attributes of its own classes."""
    names = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        names.add(item.name)
                    elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                        targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {n for n in names if _private(n)}


def _imports_gradio(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "gradio" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gradio":
            return True
    return False


def _gradio_side(path: Path) -> bool:
    return path.relative_to(ROOT).parts[0] == "ui" or _imports_gradio(ast.parse(path.read_text(encoding="utf-8")))


def private_uses(path: Path, ours: set[str]) -> list[str]:
    """The private attributes a module reads that accapp does not define."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute) and _private(node.attr):
            name = node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr", "setattr")
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and _private(node.args[1].value)):
            name = node.args[1].value
        if name and name not in ours:
            found.append(f"{path.name}:{node.lineno}: {name}")
    return found


def test_no_gradio_internals_outside_the_service():
    found = [f"{p.relative_to(ROOT.parent)}:{n}: {line.strip()}" for p in _outside_service()
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1) if GRADIO_INTERNALS.search(line)]
    assert not found, "Gradio's internals used outside accapp/ui/gradio_internals.py:\n" + "\n".join(found)


def test_no_private_attribute_of_gradio_outside_the_service():
    ours = _defined_by_accapp()
    checked = [p for p in _outside_service() if _gradio_side(p)]
    assert len(checked) >= 10  # every tab's module at least
    found = [f for p in checked for f in private_uses(p, ours)]
    assert not found, "private attributes accapp does not define, outside accapp/ui/gradio_internals.py:\n" + "\n".join(found)


def test_the_checks_see_what_the_old_queue_view_did(tmp_path):
    """The checks catch the reads an old ui/queues.py made of Gradio 6's queue."""
    old = tmp_path / "queues.py"
    old.write_text("import gradio as gr\n\n\ndef file_jobs(blocks):\n    queue = getattr(blocks, '_queue', None)\n"
                   "    waiting = queue.event_queue_per_concurrency_id.get('file')\n"
                   "    return [ev._id for ev in waiting.queue] + [blocks._queue.max_size]\n", encoding="utf-8")
    assert GRADIO_INTERNALS.search(old.read_text(encoding="utf-8"))
    ours = _defined_by_accapp()
    assert not {"_queue", "_id"} & ours  # names accapp does not define: the check sees them
    assert sorted(u.split(": ")[1] for u in private_uses(old, ours)) == ["_id", "_queue", "_queue"]
