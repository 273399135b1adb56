#!/usr/bin/env bash
# On a GPU host: build, then record in one session every cuoverlap-streams scenario (each bad
# scenario and its fixed twin, for the counterfactual pairs of docs/findings.md), the framework
# pairs and goldens of issue 9 (PyTorch with pageable vs pinned inputs, torch.compile), and run
# the GPU tests. Everything lands in OUT_DIR as three archives and logs.
#   Usage: scripts/record_diagnosis_pairs.sh OUT_DIR      (BUILD_DIR default build-gpu)
set -uo pipefail
cd "$(dirname "$0")/.."
T=${1:?OUT_DIR}; mkdir -p "$T/streams" "$T/frameworks"; T=$(cd "$T" && pwd)
build=${BUILD_DIR:-build-gpu}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
log() { echo "[$(date +%T)] $*" | tee -a "$T/session.txt"; }
log "configure + build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$T/configure.log" 2>&1 \
  || { tail -30 "$T/configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" > "$T/build.log" 2>&1 \
  || { grep -B2 -A8 -E "error|FAILED" "$T/build.log" | head -80; exit 1; }
nvidia-smi --query-gpu=name,driver_version,pci.bus_id,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current --format=csv | tee -a "$T/session.txt"
cli=$build/cli/cuoverlap
streams=$build/workloads/cuoverlap-streams
log "streams scenarios"
for s in $($streams --list | awk '{print $1}'); do
  $cli record --force -o "$T/streams/streams_$s.sqlite" -- $streams "$s" --no-baseline > "$T/streams/record_$s.log" 2>&1 \
    || log "recording $s failed"
  grep -q "^  verified" "$T/streams/record_$s.log" || log "scenario $s did not verify"
done
python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT busLocation, pcieLinkGen, pcieLinkWidth FROM TARGET_INFO_GPU').fetchall())" \
  "$T/streams/streams_pageable.sqlite" 2>&1 | tee -a "$T/session.txt"
for d in /sys/bus/pci/devices/*; do  # the GPU's link as sysfs sees it (NVIDIA vendor 0x10de, class 0x03)
  grep -q 0x10de "$d/vendor" 2>/dev/null && grep -q '^0x03' "$d/class" 2>/dev/null && \
    echo "$d $(cat $d/max_link_speed $d/max_link_width $d/current_link_speed 2>&1 | tr '\n' ' ') parent $(cat $(dirname $(readlink -f $d))/max_link_speed 2>&1)" | tee -a "$T/session.txt"
done
grep -h -E "wall|speedup" "$T"/streams/record_*.log | head -80 > "$T/streams_walls.txt"
log "frameworks"
F=scripts/frameworks
rec() {  # rec NAME -- command...
  local name=$1; shift 2
  timeout 200 "$cli" record --force -o "$T/frameworks/$name.sqlite" -- "$@" > "$T/frameworks/$name.log" 2>&1
  log "$name rc=$? $(grep -h -E 'median' "$T/frameworks/$name.log" | tail -1)"
}
plain() {  # untraced step times
  local name=$1; shift 2
  timeout 200 "$@" > "$T/frameworks/$name.log" 2>&1
  log "$name rc=$? $(grep -h -E 'median' "$T/frameworks/$name.log" | tail -1)"
}
rec torch_input_pageable -- python3 $F/torch_mlp.py --nvtx --batch 8192 --steps 30 --host-setup-s 0.2 --pageable
rec torch_input_pinned -- python3 $F/torch_mlp.py --nvtx --batch 8192 --steps 30 --host-setup-s 0.2
plain untraced_input_pageable -- python3 $F/torch_mlp.py --batch 8192 --steps 30 --host-setup-s 0.2 --pageable
plain untraced_input_pinned -- python3 $F/torch_mlp.py --batch 8192 --steps 30 --host-setup-s 0.2
rec torch_compile -- python3 $F/torch_mlp.py --mode compile --nvtx --steps 30
(cd "$T" && tar czf streams.tar.gz streams && tar czf frameworks.tar.gz frameworks)
ls -la "$T"/*.tar.gz | tee -a "$T/session.txt"
log "gpu tests"
(cd "$build" && ctest -L gpu -j4 --output-on-failure --timeout 300) > "$T/ctest_gpu.log" 2>&1
grep -E "tests passed|\(Failed\)|\(Skipped\)|Not Run|Timeout" "$T/ctest_gpu.log" | tee -a "$T/session.txt"
log "done"
