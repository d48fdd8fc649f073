#!/usr/bin/env bash
# Installs everything the app and the tests need on a fresh machine (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements-dev.txt
python3 -m pip install -q --no-deps -r requirements-nodeps.txt
