#!/usr/bin/env bash
# Reproduces the precomputed results the app ships (resumable: rerun to continue).
#   bash scripts/precompute.sh            # every method and template, N pairs per paradigm
#   PER_PARADIGM=30 bash scripts/precompute.sh
# Samples are nested (the first N of one seeded shuffle per paradigm), so a larger N only
# scores the pairs it adds. Units land in runs/, merged files in precomputed/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${PER_PARADIGM:-10}"
SEED="${SEED:-0}"
for job in "smollm2-135m-instruct blimp" "gemma3-270m climp" "gemma3-270m blimp"; do
  set -- $job
  python3 -m accapp bench --model "$1" --benchmark "$2" --per-paradigm "$N" --seed "$SEED" --out runs \
    --consolidate-to precomputed/results
done
