#!/usr/bin/env bash
# Sets up a fresh machine and runs the test suite: slow tests included, heavy ones not (pytest.ini).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -x scripts/setup-browser.sh ]; then bash scripts/setup-browser.sh; fi
python3 -m pytest -q -m "not heavy" "$@"  # every test but the heavy ones (pytest.ini)
