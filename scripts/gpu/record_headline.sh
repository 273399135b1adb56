#!/usr/bin/env bash
# Issue 21: record the loops whose steady state, period and graph iterations the goldens check,
# with each program printing its own time per step ("median_step_ms=", "step_ms ..."), so a golden
# can compare the reported period with what the program measured (within 5%).
# Needs 2 GPUs of one host (the DDP job; nvidia-h200-x2); the single-GPU loops run on GPU 0.
# Usage: scripts/gpu/record_headline.sh OUT_DIR    (BUILD_DIR default build-headline)
# Then:  grep -h median_step_ms OUT_DIR/*.log; for f in OUT_DIR/*.sqlite; do
#          build-headline/cli/cuoverlap analyze "$f" | grep -A3 '^steady state'; done
set -uo pipefail
cd "$(dirname "$0")/../.."
T=${1:?OUT_DIR}; mkdir -p "$T"; T=$(cd "$T" && pwd)
build=${BUILD_DIR:-build-headline}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
if [ ! -x "$build/cli/cuoverlap" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUOVERLAP_BUILD_TESTS=OFF \
    -DCUOVERLAP_BUILD_BENCH=OFF > "$T/configure.log" 2>&1 || { tail -30 "$T/configure.log"; exit 1; }
  ninja -C "$build" cuoverlap cuoverlap_collector > "$T/build.log" 2>&1 || { tail -40 "$T/build.log"; exit 1; }
fi
cli=$(pwd)/$build/cli/cuoverlap
F=scripts/frameworks
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$T/gpu.txt"
rec() {  # rec NAME GPUS -- command...
  local name=$1 gpus=$2; shift 3
  CUDA_VISIBLE_DEVICES=$gpus timeout 300 "$cli" record --force -o "$T/$name.sqlite" -- "$@" > "$T/$name.log" 2>&1
  echo "$name rc=$? $(grep -h median_step_ms "$T/$name.log" | tr '\n' ' ')" >> "$T/runs.txt"
}
: > "$T/runs.txt"
rec headline_graphs 0 -- python3 $F/torch_mlp.py --mode graphs --nvtx --steps 200
rec headline_eager 0 -- python3 $F/torch_mlp.py --mode eager --nvtx --steps 40
rec headline_compile 0 -- python3 $F/torch_mlp.py --mode compile --nvtx --steps 40
rec headline_dataloader 0 -- python3 $F/torch_dataloader.py --nvtx --steps 40
rec headline_jax 0 -- python3 $F/jax_jit.py --steps 40
rec headline_ddp 0,1 -- python3 -m torch.distributed.run --nproc_per_node 2 $F/ddp_step.py --steps 30
for f in "$T"/*.sqlite; do
  echo "== $f"; "$cli" analyze "$f" 2>&1 | grep -A4 -E '^steady state'
done > "$T/steady.txt"
cat "$T/runs.txt" "$T/steady.txt"
