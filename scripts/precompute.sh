#!/usr/bin/env bash
# Reproduces the precomputed results the app ships (resumable: rerun to continue, also on
# another machine: each run first restores the units already in precomputed/results/).
#   bash scripts/precompute.sh
#   PER_PARADIGM=30 TOP_PER_PARADIGM=100 bash scripts/precompute.sh
# Phase 1: every method and template on PER_PARADIGM pairs per paradigm. Phase 2: the paper's
# two top methods (in-template LP, Yes/No prob comp, all five templates), their ensembles and
# LP, MeanLP, PenLP on TOP_PER_PARADIGM pairs (0 skips it). Samples are nested (the first N of
# one seeded shuffle per paradigm), so a larger N only scores the pairs it adds.
# Units land in runs/, merged files in precomputed/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${PER_PARADIGM:-30}"
TOP_N="${TOP_PER_PARADIGM:-100}"
SEED="${SEED:-0}"
JOBS=("smollm2-135m-instruct blimp" "gemma3-270m climp" "gemma3-270m blimp")
TOP_METHODS="lp,mean_lp,pen_lp,in_template_lp,yes_no_prob_comp,ens_p_only,ens_mix_p3,ens_mix_l3,ens_l_only"

run() {  # model benchmark per-paradigm methods
  python3 -m accapp bench --model "$1" --benchmark "$2" --per-paradigm "$3" --methods "$4" --seed "$SEED" \
    --out runs --consolidate-to precomputed/results
}
for job in "${JOBS[@]}"; do
  set -- $job
  run "$1" "$2" "$N" all
done
if [ "$TOP_N" -gt 0 ]; then
  for job in "${JOBS[@]}"; do
    set -- $job
    run "$1" "$2" "$TOP_N" "$TOP_METHODS"
  done
fi
