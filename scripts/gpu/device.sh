#!/usr/bin/env bash
# On the GPU machine: one step of a lease's calls (docs/gpu-runbook.md lists them in order).
#   machine                 what the machine has -> $OUT/machine.json (first: its Python decides the payload's)
#   stage K                 take chunk .gpu/cK in (scripts/gpu/stage.py); exits 3 on a fresh machine, 4 when the
#                           payload's wheels are for another Python
#   smoke                   the CUDA path on a tiny random model (scripts/gpu/smoke.py)
#   app                     the app on the GPU, /probe with every method, where it ran (scripts/gpu/app_probe.py)
#   host                    bench/host_cost.py on CUDA: 200 BLiMP pairs, LP and every method in fp32, LP in bf16
#   agree MODEL BENCH N     scripts/gpu/agree.py on N pairs, 4 precisions -> $OUT/agree-MODEL-BENCH.tar
#   check-block MODEL BENCH PARADIGM BLOCK  one block of a whole run scored again on CUDA in one process, seven ways: as the
#                           run's process sized it (2048 strings, 2195 projection rows); so, with plain SDPA's shared
#                           key-value memory (as the run had it); after the paradigm's earlier blocks; with eager
#                           attention; with SDPA's math kernel; unpacked; sized by the free memory. Each
#                           against the carried CPU reference .gpu/check/MODEL-BENCH-PARADIGM-BLOCK.parquet
#                           (scripts/gpu/check_block.py) -> $OUT/check-block.txt
#   full-start MODEL BENCH PROCS  the whole benchmark, every method, fp32, PROCS processes in the background (setsid);
#                           PROCS auto: as many as the GPU's free memory takes now (scripts/gpu/procs.py);
#                           resumed from .gpu/resume/MODEL__BENCH.parquet where a call carries it (scripts/gpu/resume_full.py)
#   full-status             the background runs' progress
#   pause | resume          stop / continue the background runs (while timing something else)
#   finish MODEL BENCH      stop that benchmark's background runs (others run on); merge them here (over the carried resume file), the consolidated
#                           file -> $OUT in 15 MB pieces with its manifest and SHA-256, logs -> $OUT/logs.txt
#   collect                 stop the background runs; logs -> $OUT/logs.txt, the unit files -> 15 MB pieces, the first 6 -> $OUT
#   more K                  pieces K.. of the last collect -> $OUT
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} ACCAPP_CACHE=/tmp/accapp-cache PYTHONUNBUFFERED=1 \
       HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false ACCAPP_COMMIT=${ACCAPP_COMMIT:-unknown}
OUT=${OUT:-/tmp/out}
RUNS=/tmp/runs
step=$1; shift
stop_runs() {  # continue the paused, interrupt, then kill what is left; the logs' tails and the GPU use -> $OUT/logs.txt
  # $1: only the runs whose command line matches (a model and benchmark); the GPU sampling stops with the last run.
  local runs="[a]ccapp bench${1:+.*$1}" logs="/tmp/full-${2:-*}.log"
  pkill -CONT -f "$runs"; pkill -INT -f "$runs"; sleep 5; pkill -KILL -f "$runs"
  pgrep -f "[a]ccapp bench" >/dev/null || pkill -f "[n]vidia-smi --query-gpu=timestamp"
  { for f in $logs; do echo "== $f"; tail -c 2000 "$f" | tr '\r' '\n' | tail -5; done
    echo "== gpu use (timestamp, utilization, memory)"; cat /tmp/gpu-use.csv 2>/dev/null; } > "$OUT/logs.txt"
  echo "unit files: $(find "$RUNS" -name '*.parquet' | wc -l)"
}
case $step in
  stage)
    python3 scripts/gpu/stage.py ".gpu/c$1" || exit $?
    mkdir -p "$ACCAPP_CACHE/unigram" "$ACCAPP_CACHE/tokenizers/smollm2-135m-instruct"
    cp -n /tmp/stage/files/*.npy "$ACCAPP_CACHE/unigram/" 2>/dev/null
    cp -n /tmp/stage/files/smollm2-tokenizer/* "$ACCAPP_CACHE/tokenizers/smollm2-135m-instruct/" 2>/dev/null
    true ;;
  machine) python3 scripts/gpu/machine.py | tee "$OUT/machine.json" /tmp/machine.json; nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv ;;
  smoke) python3 scripts/gpu/smoke.py ;;
  app) python3 scripts/gpu/app_probe.py "$@" ;;
  host)
    for run in "fp32" "bf16 --skip-all"; do
      set -- $run
      python3 bench/host_cost.py --device cuda --dtype "$@" 2>&1 | grep -v -E "Loading weights|de-quantizing|it/s\]$" \
        | tee "$OUT/host-cuda-$1.txt" | tail -1
    done ;;
  agree)
    model=$1 bench=$2 n=$3; shift 3
    dir=/tmp/agree-$model-$bench; mkdir -p "$dir"
    python3 scripts/gpu/agree.py --model "$model" --benchmark "$bench" --pairs "$n" --out "$dir" "$@" 2>&1 \
      | grep -v -E "Loading weights|de-quantizing|it/s\]$"
    tar -cf "$OUT/agree-$model-$bench.tar" -C /tmp "agree-$model-$bench" ;;
  check-block)
    model=$1 bench=$2 paradigm=$3 block=$4; ref=".gpu/check/$model-$bench-$paradigm-$block.parquet"
    [ -f "$ref" ] || { echo "no CPU reference $ref carried"; exit 2; }
    for variant in "--batch-size 2048 --head-rows 2195" "--batch-size 2048 --head-rows 2195 --shared-kv" \
                   "--batch-size 2048 --head-rows 2195 --history" \
                   "--batch-size 2048 --head-rows 2195 --eager" \
                   "--batch-size 2048 --head-rows 2195 --sdpa-math" "--batch-size 2048 --head-rows 2195 --no-pack" ""; do
      echo "== cuda ${variant:-(sizes from the free memory)}"
      python3 scripts/gpu/check_block.py score --model "$model" --benchmark "$bench" --paradigm "$paradigm" --block "$block" \
        --device cuda $variant --out /tmp/check.parquet 2>&1 | grep -v -E "Loading weights|de-quantizing|it/s\]$" | tail -1
      python3 scripts/gpu/check_block.py compare "$ref" /tmp/check.parquet
    done 2>&1 | tee "$OUT/check-block.txt" ;;
  full-start)
    # PROCS processes, each on every PROCS-th paradigm, each into its own folder (merged on the CPU machine);
    # GPU use sampled every 5 s into /tmp/gpu-use.csv (collect brings it back with the logs).
    model=$1 bench=$2 procs=$3; shift 3
    if [ "$procs" = auto ]; then
      python3 scripts/gpu/machine.py > /tmp/machine-now.json && procs=$(python3 scripts/gpu/procs.py --machine /tmp/machine-now.json) || exit 5
    fi
    echo "$procs processes"
    mkdir -p "$RUNS"
    pgrep -f "[n]vidia-smi --query-gpu=timestamp" >/dev/null || setsid nohup nvidia-smi \
      --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -l 5 > /tmp/gpu-use.csv 2>&1 < /dev/null &
    resume=".gpu/resume/${model}__${bench}.parquet"
    [ -f "$resume" ] && python3 scripts/gpu/resume_full.py --from "$resume" --runs "$RUNS" --model "$model" \
      --benchmark "$bench" --procs "$procs"
    lists=$(python3 scripts/gpu/resume_full.py --lists --benchmark "$bench" --procs "$procs")
    k=0
    for paradigms in $lists; do
      setsid nohup python3 -m accapp bench --model "$model" --benchmark "$bench" --methods all --dtype fp32 \
        --block-size 256 --threads 1 --paradigms "$paradigms" --out "$RUNS/$model-$bench-$k" "$@" \
        > "/tmp/full-$model-$bench-$k.log" 2>&1 < /dev/null &
      k=$((k + 1))
    done
    date -u +%s > "/tmp/full-$model-$bench.started"
    sleep 20; tail -c 300 "/tmp/full-$model-$bench-0.log" | tr '\r' '\n' | tail -2; echo ;;
  full-status)
    for f in /tmp/full-*.log; do echo "== $f"; tail -c 300 "$f" | tr '\r' '\n' | tail -2; done
    echo "unit files: $(find "$RUNS" -name '*.parquet' | wc -l)"; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader ;;
  # "[a]ccapp": the pattern never matches the calling shell, whose command line may name the runs.
  pause) pkill -STOP -f "[a]ccapp bench" && echo paused ;;
  resume) pkill -CONT -f "[a]ccapp bench" && echo resumed ;;
  finish)
    # What this lease did, and what earlier ones brought back (the carried resume file), in one consolidated
    # file (float32 scores: a whole BLiMP is about 26 MB), back in 15 MB pieces; on the CPU machine:
    #   cat MODEL__BENCH.parquet.?? > .gpu/resume/MODEL__BENCH.parquet && sha256sum -c (docs/gpu-runbook.md)
    model=$1 bench=$2; name="${model}__${bench}"
    stop_runs "--model $model --benchmark $bench " "$model-$bench-*"
    previous=(); [ -f ".gpu/resume/$name.parquet" ] && previous=(--previous ".gpu/resume/$name.parquet")
    rm -rf /tmp/merged
    python3 scripts/gpu/merge_full.py --runs "$RUNS" --model "$model" --benchmark "$bench" --out /tmp/merged \
      "${previous[@]}" > /tmp/merge.txt 2>&1; rc=$?
    tail -c 6000 /tmp/merge.txt > "$OUT/merge.txt"; tail -3 /tmp/merge.txt; [ $rc = 0 ] || exit $rc
    (cd /tmp/merged && sha256sum "$name.parquet") | tee "$OUT/$name.sha256"
    cp "/tmp/merged/$name.manifest.json" "$OUT/"
    split -b 15M -d "/tmp/merged/$name.parquet" "$OUT/$name.parquet."; ls -la "$OUT" ;;
  collect)
    # Stop the runs; the logs' tails and the GPU use in one file; the unit files in 15 MB pieces,
    # the first six into $OUT (8 files come back a call); `more K` brings pieces K.. on the next call.
    stop_runs
    rm -rf /tmp/pieces; mkdir -p /tmp/pieces
    tar -czf /tmp/runs.tar.gz -C /tmp runs && split -b 15M -d /tmp/runs.tar.gz /tmp/pieces/runs.tar.gz.
    sha256sum /tmp/runs.tar.gz | tee "$OUT/runs.sha256"; ls -la /tmp/pieces
    cp $(ls /tmp/pieces/* | head -6) "$OUT/" ;;
  more) cp $(ls /tmp/pieces/* | tail -n +"$1" | head -8) "$OUT/"; ls -la "$OUT" ;;
  *) echo "unknown step $step"; exit 2 ;;
esac
