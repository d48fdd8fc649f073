#!/usr/bin/env bash
# Installs everything the app and the tests need on a fresh machine (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements-dev.txt
python3 -m pip install -q --no-deps -r requirements-nodeps.txt
# The project itself, editable and without touching the pinned dependencies: the `accapp` command.
python3 -m pip install -q --no-deps -e .
