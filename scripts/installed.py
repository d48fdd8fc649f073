"""Exit 0 when every requirement in the given files is installed at a version it allows (with
--editable: when this folder is the installed accapp, editable); 1 otherwise (then scripts/setup.sh
runs pip for what is missing).

Where nothing is missing, pip's own check costs about 18 s of this project's set-up (three
resolutions of the whole dependency tree); this one reads installed metadata only. A requirement it
cannot judge (a URL, an environment marker, an unreadable line) counts as missing: pip decides.

    python3 scripts/installed.py requirements-dev.txt requirements-nodeps.txt
    python3 scripts/installed.py --editable
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def requirement_lines(path: Path, seen: set[Path] | None = None):
    """The requirement strings of a requirements file, following its -r includes."""
    seen = seen if seen is not None else set()
    path = path.resolve()
    if path in seen:
        return
    seen.add(path)
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ")):
            yield from requirement_lines(path.parent / line.split(None, 1)[1], seen)
        else:
            yield line


def missing(files: list[str]) -> list[str]:
    """The requirements not satisfied by what is installed (empty: nothing to install)."""
    from packaging.requirements import Requirement

    out = []
    for line in (x for f in files for x in requirement_lines(ROOT / f)):
        try:
            req = Requirement(line)
        except ValueError:
            out.append(line)
            continue
        if req.url or req.marker:
            out.append(line)
            continue
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            out.append(line)
            continue
        if not req.specifier.contains(version, prereleases=True):
            out.append(f"{line} (installed {version})")
    return out


def editable_here() -> bool:
    """This folder's accapp is the installed one, editable (pip install -e .)."""
    try:
        text = metadata.distribution("accapp").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return False
    info = json.loads(text or "{}")
    return bool(info.get("dir_info", {}).get("editable")) and info.get("url") == ROOT.as_uri()


def main(files: list[str]) -> int:
    if files == ["--editable"]:
        return 0 if editable_here() else 1
    try:
        lacking = missing(files)
    except Exception as exc:  # noqa: BLE001 - anything unexpected: let pip decide
        print(f"installed.py: {exc}; pip will check", file=sys.stderr)
        return 1
    if lacking:
        print("to install: " + ", ".join(lacking), file=sys.stderr)
    return 0 if not lacking else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
