#!/usr/bin/env bash
# Everything the open issues need recorded on a one-GPU host, in one lease (docs/lab.md,
# tests/data/README.md). Each part is bounded in time and leaves what it made in OUT_DIR:
#   lab       re-record the lab corpus (scripts/lab_record.sh: LAB_COUNT programs from seed 1)
#   loops     the single-GPU loops of scripts/gpu/record_headline.sh, each program printing its own
#             median step time (graph replay, eager, torch.compile, DataLoader, JAX)
#   capture   scripts/gpu/capture_check.sh on one rank (the 11-step trace and the closed-window cost)
#   gputests  every remaining target, then ctest -L gpu -j4
# Usage: scripts/gpu/one_gpu_batch.sh OUT_DIR PART...     (BUILD_DIR default build-gpu)
set -uo pipefail
cd "$(dirname "$0")/../.."
T=${1:?usage: one_gpu_batch.sh OUT_DIR PART...}; shift
mkdir -p "$T"; T=$(cd "$T" && pwd)
build=${BUILD_DIR:-build-gpu}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
log() { echo "[$(date +%T)] $*" | tee -a "$T/batch.log"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$T/gpu.txt"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$T/configure.log" 2>&1 \
    || { tail -30 "$T/configure.log"; exit 1; }
fi
log "build cuoverlap, collector, cuoverlap-lab"
ninja -C "$build" cuoverlap cuoverlap_collector cuoverlap-lab > "$T/build.log" 2>&1 \
  || { grep -B2 -A8 -E "error|FAILED" "$T/build.log" | head -60; exit 1; }
cli=$(pwd)/$build/cli/cuoverlap

for part in "$@"; do
  case $part in
    lab)
      log "lab: ${LAB_COUNT:-320} programs"
      SKIP_BUILD=1 BUILD_DIR=$build timeout "${LAB_TIMEOUT:-330}" bash scripts/lab_record.sh "$T/lab" "${LAB_COUNT:-320}" 1 \
        > "$T/lab.log" 2>&1
      log "lab rc=$?"
      tail -4 "$T/lab.log"
      (cd "$T/lab" && tar czf "$T/lab_corpus.tgz" corpus lab_record.log) ;;
    loops)
      F=scripts/frameworks
      : > "$T/loops.txt"
      rec() {  # rec NAME -- command...
        local name=$1; shift 2
        timeout 150 "$cli" record --force -o "$T/loops/$name.sqlite" -- "$@" > "$T/loops/$name.log" 2>&1
        echo "$name rc=$? $(grep -h median_step_ms "$T/loops/$name.log" | tr '\n' ' ')" | tee -a "$T/loops.txt"
      }
      mkdir -p "$T/loops"
      rec headline_graphs -- python3 $F/torch_mlp.py --mode graphs --nvtx --steps 200 --host-setup-s 0.2
      rec headline_eager -- python3 $F/torch_mlp.py --mode eager --nvtx --steps 40 --host-setup-s 0.2
      rec headline_compile -- python3 $F/torch_mlp.py --mode compile --nvtx --steps 40 --host-setup-s 0.2
      rec headline_dataloader -- python3 $F/torch_dataloader.py --nvtx --steps 40
      rec headline_jax -- python3 $F/jax_jit.py --steps 40
      for f in "$T"/loops/*.sqlite; do
        echo "== $(basename "$f")"; "$cli" analyze "$f" 2>&1 | grep -A3 -E '^steady state|no steady state'
      done > "$T/loops_steady.txt" 2>&1
      cat "$T/loops_steady.txt"
      (cd "$T" && tar czf loops.tgz loops loops.txt loops_steady.txt) ;;
    capturetest)
      ninja -C "$build" test_collector_gpu_capture capture_app > "$T/build_capture.log" 2>&1 \
        || { tail -30 "$T/build_capture.log"; }
      ctest --test-dir "$build" -R collector_gpu_capture --output-on-failure > "$T/ctest_capture.txt" 2>&1
      log "collector_gpu_capture rc=$?"
      tail -30 "$T/ctest_capture.txt" ;;
    capture)
      log "capture check"
      REPS=${CAPTURE_REPS:-5} timeout 240 bash scripts/gpu/capture_check.sh "$(pwd)/$build" 1 \
        > "$T/capture.txt" 2>&1
      log "capture rc=$?"
      cat "$T/capture.txt" ;;
    gputests)
      log "build all"
      ninja -C "$build" > "$T/build_all.log" 2>&1 || { grep -B2 -A8 -E "error|FAILED" "$T/build_all.log" | head -60; }
      log "ctest -L gpu"
      timeout 300 ctest --test-dir "$build" -L gpu -j4 --output-on-failure --timeout 240 > "$T/ctest_gpu.txt" 2>&1
      log "ctest rc=$?"
      tail -25 "$T/ctest_gpu.txt" ;;
    *) log "unknown part $part" ;;
  esac
done
log "done"
