#!/usr/bin/env bash
# On a GPU host (2 GPUs for the DDP part): record every framework program in this folder with
# `cuoverlap record`, their torch.profiler (Kineto) twins, and untraced step times.
# Usage: scripts/frameworks/record_all.sh OUT_DIR   (BUILD_DIR default build-fw)
set -uo pipefail
cd "$(dirname "$0")/../.."
T=${1:?OUT_DIR}; mkdir -p "$T"; T=$(cd "$T" && pwd)
build=${BUILD_DIR:-build-fw}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
if [ ! -x "$build/cli/cuoverlap" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUOVERLAP_BUILD_TESTS=OFF \
    -DCUOVERLAP_BUILD_BENCH=OFF > "$T/configure.log" 2>&1 || { tail -30 "$T/configure.log"; exit 1; }
  ninja -C "$build" cuoverlap cuoverlap_collector > "$T/build.log" 2>&1 || { tail -40 "$T/build.log"; exit 1; }
fi
cli=$(pwd)/$build/cli/cuoverlap
collector=$(pwd)/$build/cli/libcuoverlap_collector.so
F=scripts/frameworks
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$T/gpu.txt"
rec() {  # rec NAME GPU -- command...
  local name=$1 gpu=$2; shift 3
  CUDA_VISIBLE_DEVICES=$gpu timeout 150 "$cli" record --force -o "$T/$name.sqlite" -- "$@" > "$T/$name.log" 2>&1
  echo "$name rc=$? $(grep -h -E 'median|ms=' "$T/$name.log" | tail -1)" >> "$T/runs.txt"
}
plain() {  # plain NAME GPU -- command...   (untraced)
  local name=$1 gpu=$2; shift 3
  CUDA_VISIBLE_DEVICES=$gpu timeout 150 "$@" > "$T/$name.log" 2>&1
  echo "$name rc=$? $(grep -h -E 'median|ms=' "$T/$name.log" | tail -1)" >> "$T/runs.txt"
}
single() {
(
  rec torch_eager_nvtx 0 -- python3 $F/torch_mlp.py --mode eager --nvtx
  rec torch_eager_plain 0 -- python3 $F/torch_mlp.py --mode eager
  rec torch_graphs 0 -- python3 $F/torch_mlp.py --mode graphs --nvtx
  rec torch_compile 0 -- python3 $F/torch_mlp.py --mode compile --nvtx --steps 30
  rec torch_dataloader 0 -- python3 $F/torch_dataloader.py --nvtx
  plain untraced_torch_eager_nvtx 0 -- python3 $F/torch_mlp.py --mode eager --nvtx
) &
(
  plain torch_eager_nvtx.kineto 1 -- python3 $F/torch_mlp.py --mode eager --nvtx --kineto "$T/torch_eager_nvtx.kineto.json"
  rec torch_both 1 -- python3 $F/torch_mlp.py --mode eager --nvtx --kineto "$T/torch_both.kineto.json"
  rec jax_jit 1 -- python3 $F/jax_jit.py
  rec cupy_blocking 1 -- python3 $F/cupy_pipeline.py --blocking
  rec cupy_nonblocking 1 -- python3 $F/cupy_pipeline.py
  rec numba_jit 1 -- python3 $F/numba_jit.py
  plain torch_graphs.kineto 1 -- python3 $F/torch_mlp.py --mode graphs --nvtx --kineto "$T/torch_graphs.kineto.json"
) &
wait
}
ddp() {  # ddp NAME MODE [extra]   recorded per rank through the injection variables
  local name=$1 mode=$2; shift 2
  CUDA_INJECTION64_PATH=$collector NVTX_INJECTION64_PATH=$collector CUOVERLAP_QUIET=1 \
  CUOVERLAP_RANK_OUTPUT="$T/${name}_rank{rank}.sqlite" timeout 150 \
    python3 -m torch.distributed.run --nproc_per_node 2 $F/ddp_step.py --mode $mode "$@" > "$T/$name.log" 2>&1
  echo "$name rc=$? $(grep -h median "$T/$name.log" | tr '\n' ' ')" >> "$T/runs.txt"
}
ddpplain() {
  local name=$1 mode=$2; shift 2
  timeout 150 python3 -m torch.distributed.run --nproc_per_node 2 $F/ddp_step.py --mode $mode "$@" > "$T/$name.log" 2>&1
  echo "$name rc=$? $(grep -h median "$T/$name.log" | tr '\n' ' ')" >> "$T/runs.txt"
}
multi() {
ddp ddp ddp
ddp ddp_onebucket ddp-onebucket
ddp fsdp fsdp
ddpplain untraced_ddp ddp --steps 30
ddpplain untraced_ddp_onebucket ddp-onebucket --steps 30
ddpplain ddp_kineto ddp --kineto "$T/ddp_rank{rank}.kineto.json"
# the reproduction of issue 10: record around torchrun
timeout 150 "$cli" record --force -o "$T/torchrun_record.sqlite" -- python3 -m torch.distributed.run --nproc_per_node 2 $F/ddp_step.py --steps 4 > "$T/torchrun_record.log" 2>&1
echo "torchrun_record rc=$?" >> "$T/runs.txt"
}
channels() {  # slower communication (fewer NCCL channels, like a slower link): overlap matters more
  local c
  for c in ${NCCL_CHANNEL_SET:-2 4}; do
    NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c ddp ddp_ch$c ddp
    NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c ddp ddp_onebucket_ch$c ddp-onebucket
    NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c ddpplain untraced_ddp_ch$c ddp --steps 30
    NCCL_MIN_NCHANNELS=$c NCCL_MAX_NCHANNELS=$c ddpplain untraced_ddp_onebucket_ch$c ddp-onebucket --steps 30
  done
}
extra() { rec numba_jit 0 -- python3 $F/numba_jit.py; }
for section in ${SECTIONS:-single extra multi}; do $section; done
for f in "$T"/*.sqlite; do echo "== $f"; "$cli" analyze "$f" 2>&1 | head -60; done > "$T/analyze_current.txt"
ls -la "$T" >> "$T/runs.txt"
cat "$T/runs.txt"
