"""scripts/installed.py, the check that lets scripts/setup.sh skip pip where nothing is missing: it
must call a requirement missing whenever pip would install something, and follow -r includes."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import installed  # noqa: E402 - scripts/ is not a package


def test_what_is_installed_is_not_missing_and_the_rest_is(tmp_path):
    numpy = metadata.version("numpy")
    (tmp_path / "inner.txt").write_text(f"numpy=={numpy}  # pinned as installed\n", encoding="utf-8")
    (tmp_path / "outer.txt").write_text(
        "# a comment\n-r inner.txt\npandas\n"
        f"numpy<{numpy}\n"  # installed, but at a version this line does not allow
        "no-such-package-accapp==1.0\n"
        "requests @ https://example.org/requests.whl\n"  # a URL: pip decides
        "scipy; python_version < '3'\n", encoding="utf-8")  # a marker: pip decides
    lacking = installed.missing([str(tmp_path / "outer.txt")])
    assert lacking == [f"numpy<{numpy} (installed {numpy})", "no-such-package-accapp==1.0",
                       "requests @ https://example.org/requests.whl", "scipy; python_version < '3'"]
    assert installed.missing([str(tmp_path / "inner.txt")]) == []


def test_the_projects_own_requirements_are_met_here():
    # the machine the tests run on was set up by scripts/setup.sh: nothing of its pins is missing
    assert installed.missing(["requirements-dev.txt", "requirements-nodeps.txt"]) == []
