#!/usr/bin/env bash
# Installs everything the app and the tests need on a fresh machine (idempotent: pip runs only for
# what scripts/installed.py finds missing, a pinned requirement or this folder's editable accapp).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 scripts/installed.py requirements-dev.txt requirements-nodeps.txt; then
    python3 -m pip install -q -r requirements-dev.txt
    python3 -m pip install -q --no-deps -r requirements-nodeps.txt
fi
# The project itself, editable and without touching the pinned dependencies: the `accapp` command.
if ! python3 scripts/installed.py --editable; then python3 -m pip install -q --no-deps -e .; fi
