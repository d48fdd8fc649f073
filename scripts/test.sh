#!/usr/bin/env bash
# Sets up a fresh machine and runs the test suite: slow tests included, heavy ones not (pytest.ini).
#   bash scripts/test.sh          every test but the heavy ones (what CI runs)
#   bash scripts/test.sh --fast   the inner loop: no real model, no app process or server, no browser
#                                 (ACCAPP_FAST_TIER=1 makes a test that loads or starts one fail: tests/conftest.py)
# Further arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then fast=1; shift; fi
bash scripts/setup.sh
if [ "$fast" = 1 ]; then
    ACCAPP_FAST_TIER=1 python3 -m pytest -q -m "not slow and not heavy and not browser and not process" \
        -n 2 --dist loadfile --no-loadscope-reorder "$@"
    exit
fi
if [ -x scripts/setup-browser.sh ]; then bash scripts/setup-browser.sh; fi
python3 scripts/fetch_test_models.py >/dev/null  # a trained masked LM for the PLLs' numerics (tests/test_ties.py)
# two workers, a test file each (its module fixtures and servers start once); conftest.py sends the longest first
python3 -m pytest -q -m "not heavy" -n 2 --dist loadfile --no-loadscope-reorder "$@"  # every test but the heavy ones (pytest.ini)
