#!/usr/bin/env bash
# What the open issues need from a host with 2 GPUs (nvidia-h200-x2), in one lease. Each part is
# bounded in time and leaves what it made in OUT_DIR:
#   gputests  every target, then ctest -L gpu -j4 (the GPU tests on a 2-GPU host)
#   ddp       issue 21's golden: the 30-step DDP job under `record --summary -- torchrun`, one trace
#             and one summary per rank, each rank printing its own median step time; then the job
#             report from the traces and from the summaries, compared byte for byte (issue 23)
#   capture2  issue 22: scripts/gpu/capture_check.sh on 2 ranks (every rank captures steps 50-60)
#   overhead  issue 22: the closed-window cost (scripts/gpu/capture_overhead.sh, OVERHEAD_REPS reps);
#             OVERHEAD_ALT=LABEL=COLLECTOR adds a third configuration (an experimental collector)
# Usage: scripts/gpu/two_gpu_batch.sh OUT_DIR PART...     (BUILD_DIR default build-gpu)
set -uo pipefail
cd "$(dirname "$0")/../.."
T=${1:?usage: two_gpu_batch.sh OUT_DIR PART...}; shift
mkdir -p "$T"; T=$(cd "$T" && pwd)
build=${BUILD_DIR:-build-gpu}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
log() { echo "[$(date +%T)] $*" | tee -a "$T/batch.log"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$T/gpu.txt"
nvidia-smi topo -m > "$T/topo.txt" 2>&1

if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$T/configure.log" 2>&1 \
    || { tail -30 "$T/configure.log"; exit 1; }
fi
log "build cuoverlap, collector"
ninja -C "$build" cuoverlap cuoverlap_collector > "$T/build.log" 2>&1 \
  || { grep -B2 -A8 -E "error|FAILED" "$T/build.log" | head -60; exit 1; }
cli=$(pwd)/$build/cli/cuoverlap

for part in "$@"; do
  case $part in
    gputests)
      log "build all"
      ninja -C "$build" > "$T/build_all.log" 2>&1 || { grep -B2 -A8 -E "error|FAILED" "$T/build_all.log" | head -60; }
      log "ctest -L gpu"
      timeout "${GPUTESTS_TIMEOUT:-300}" ctest --test-dir "$build" -L gpu -j4 --output-on-failure --timeout 240 \
        > "$T/ctest_gpu.txt" 2>&1
      log "ctest rc=$?"
      tail -45 "$T/ctest_gpu.txt" ;;
    ddp)
      d=$T/ddp; mkdir -p "$d"
      log "ddp: 30 steps on 2 ranks, record --summary -- torchrun"
      CUDA_VISIBLE_DEVICES=0,1 timeout 240 "$cli" record --force --summary -o "$d/rank%r.sqlite" -- \
        torchrun --standalone --nproc_per_node 2 scripts/frameworks/ddp_step.py --steps 30 \
        > "$d/ddp.log" 2>&1
      log "ddp rc=$? $(grep -h median_step_ms "$d/ddp.log" | tr '\n' ' ')"
      ls -la "$d" | tee -a "$T/batch.log"
      "$cli" analyze "$d"/rank*.sqlite > "$d/report_traces.txt" 2>&1
      "$cli" analyze "$d"/rank*.sqlite --format json -o "$d/report_traces.json" 2>> "$d/ddp.log"
      "$cli" analyze "$d"/rank*.cosum --format json -o "$d/report_summaries.json" 2>> "$d/ddp.log"
      if cmp -s "$d/report_traces.json" "$d/report_summaries.json"; then
        log "ddp: job report from summaries equals the report from traces (byte for byte)"
      else
        log "ddp: job reports DIFFER"; diff <(tr ',' '\n' < "$d/report_traces.json") \
          <(tr ',' '\n' < "$d/report_summaries.json") | head -20
      fi
      grep -A4 -E '^steady state|no steady state' "$d/report_traces.txt" | head -20 ;;
    capture2)
      log "capture check on 2 ranks"
      REPS=0 timeout 180 bash scripts/gpu/capture_check.sh "$(pwd)/$build" 2 > "$T/capture2.txt" 2>&1
      log "capture2 rc=$?"
      cat "$T/capture2.txt" ;;
    overhead)
      log "closed-window overhead, ${OVERHEAD_REPS:-12} reps"
      configs=(none=none "closed=$(pwd)/$build/cli/libcuoverlap_collector.so")
      if [ -n "${OVERHEAD_ALT:-}" ]; then configs+=("$OVERHEAD_ALT"); fi
      timeout "${OVERHEAD_TIMEOUT:-400}" bash scripts/gpu/capture_overhead.sh "$cli" "${OVERHEAD_REPS:-12}" \
        "${STEPS:-600}" "${configs[@]}" > "$T/overhead.txt" 2>&1
      log "overhead rc=$?"
      cat "$T/overhead.txt" ;;
    *) log "unknown part $part" ;;
  esac
done
log "done"
