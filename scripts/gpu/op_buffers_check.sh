#!/usr/bin/env bash
# The op-buffer checks the forty-second session left for a GPU host (docs/collector.md, "Which memory an
# op touches"), in one call of about five minutes:
#   1. collector_gpu_op_buffers (the `reload` case: layouts per code epoch, checked by launch order);
#   2. the streams scenarios whose waits order slices of one buffer (wait-chain, event-dag-serialized) and
#      their twins, recorded with op buffers and analyzed: the findings should match those without;
#   3. JAX under record five times (it crashed with 627c60e's collector);
#   4. pytorch_step.py under record with and without op buffers, interleaved pairs;
#   5. pytorch_step.py once more under a measuring collector (CUOVERLAP_OP_BUFFER_STATS: counts and
#      times of the launch callbacks' work, printed at exit), built in BUILD_DIR-stats.
# Usage: scripts/gpu/op_buffers_check.sh OUT_DIR [PAIRS (default 6)]   (BUILD_DIR default build-gpu)
set -uo pipefail
cd "$(dirname "$0")/../.."
T=${1:?usage: op_buffers_check.sh OUT_DIR [PAIRS]}; pairs=${2:-6}
mkdir -p "$T"; T=$(cd "$T" && pwd)
build=${BUILD_DIR:-build-gpu}
export PYTHONUNBUFFERED=1
log() { echo "[$(date +%T)] $*" | tee -a "$T/check.log"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$T/gpu.txt"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUOVERLAP_WITH_CUDA=ON > "$T/configure.log" 2>&1 \
  || { tail -30 "$T/configure.log"; exit 1; }
ninja -C "$build" cuoverlap cuoverlap_collector cuoverlap-streams test_collector_gpu_op_buffers > "$T/build.log" 2>&1 \
  || { grep -B2 -A8 -E "error|FAILED" "$T/build.log" | head -60; exit 1; }
cli=$build/cli/cuoverlap
log "1. op buffers GPU test"
(cd "$build" && ctest -R collector_gpu_op_buffers --output-on-failure) > "$T/ctest.log" 2>&1
log "ctest rc=$? $(grep -E 'tests passed' "$T/ctest.log")"
log "2. streams scenarios"
for s in wait-chain wait-chain-fixed event-dag event-dag-serialized; do
  for mode in with without; do
    flag=""; [ $mode = without ] && flag="--no-op-buffers"
    timeout 60 "$cli" record $flag --force -o "$T/$s.$mode.sqlite" -- "$build/workloads/cuoverlap-streams" "$s" --no-baseline \
      > "$T/$s.$mode.log" 2>&1
    "$cli" analyze "$T/$s.$mode.sqlite" 2>&1 | grep -E "explain|^\s+\[" | sed "s/^/$s $mode: /" | tee -a "$T/check.log"
  done
done
log "3. JAX"
for i in 1 2 3 4 5; do
  timeout 90 "$cli" record --force -o "$T/jax.sqlite" -- python3 scripts/frameworks/jax_jit.py > "$T/jax_$i.log" 2>&1
  log "jax $i rc=$? $(grep -h 'signal' "$T/jax_$i.log")"
done
log "4. PyTorch step, $pairs interleaved pairs"
for i in $(seq 1 "$pairs"); do
  for mode in with without; do
    flag=""; [ $mode = without ] && flag="--no-op-buffers"
    log "$mode $(timeout 60 "$cli" record $flag --force -o "$T/step.sqlite" -- python3 bench/collector/pytorch_step.py \
      --steps 300 --warmup 50 2>&1 | grep -E '^steps')"
  done
done
log "5. measuring collector"
cmake -S . -B "$build-stats" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUOVERLAP_WITH_CUDA=ON -DCUOVERLAP_OP_BUFFER_STATS=ON \
  -DCUOVERLAP_BUILD_TESTS=OFF -DCUOVERLAP_BUILD_BENCH=OFF > "$T/configure_stats.log" 2>&1 &&
  ninja -C "$build-stats" cuoverlap cuoverlap_collector > "$T/build_stats.log" 2>&1 &&
  log "$(timeout 60 "$build-stats/cli/cuoverlap" record --force -o "$T/step.sqlite" -- python3 bench/collector/pytorch_step.py \
    --steps 300 --warmup 50 2>&1 | grep -E '^steps|op buffer stats')"
rm -f "$T"/*.sqlite-* "$T/step.sqlite" "$T/jax.sqlite"
log done
