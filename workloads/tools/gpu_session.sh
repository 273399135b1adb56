#!/usr/bin/env bash
# One GPU-machine session for the workloads: build, verify every workload, benchmark, and (when
# the collector builds) record every scenario and print its overlap numbers.
# Usage (repo root, on the GPU machine): workloads/tools/gpu_session.sh BUILD_DIR OUT_DIR [bench args]
set -u
build=$1; out=$2; shift 2
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUOVERLAP_BUILD_TESTS=OFF \
  -DCUOVERLAP_BUILD_BENCH=OFF > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build "$build" -j16 --target cuoverlap-scan cuoverlap-streams > "$out/build.log" 2>&1 \
  || { grep -B2 -A5 error "$out/build.log" | head -60; exit 1; }
have_collector=0
cmake --build "$build" -j16 --target cuoverlap_collector >> "$out/build.log" 2>&1 && have_collector=1
bin=$build/workloads
nvidia-smi --query-gpu=name,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv
echo "== scan check"; $bin/cuoverlap-scan check --max-n $(( (1 << 28) + 3 )) | grep -v "^ok" 
echo "rc=$?"
echo "== scan streamed"; $bin/cuoverlap-scan streamed; echo "rc=$?"
for s in $($bin/cuoverlap-streams --list | awk '{print $1}'); do
  echo "== $s"; /usr/bin/time -f "elapsed %e s" $bin/cuoverlap-streams "$s"; echo "rc=$?"
done
echo "== pipeline3 breadth"; $bin/cuoverlap-streams pipeline3 --order breadth | head -4
if [ $have_collector = 1 ]; then
  lib=$(find "$build" -name 'libcuoverlap_collector.so' | head -1)
  traces=/tmp/cuoverlap_traces; mkdir -p $traces
  for s in $($bin/cuoverlap-streams --list | awk '{print $1}'); do
    CUDA_INJECTION64_PATH=$lib NVTX_INJECTION64_PATH=$lib CUOVERLAP_OUTPUT=$traces/$s.sqlite \
      $bin/cuoverlap-streams "$s" --no-baseline > "$traces/$s.log" 2>&1 || echo "traced $s failed"
  done
  python3 workloads/tools/trace_overlap.py $traces/*.sqlite
  tar czf "$out/traces.tgz" -C $traces .
else
  echo "collector did not build"; grep -m5 error "$out/build.log"
fi
echo "== scan bench"; $bin/cuoverlap-scan bench "$@" | tee "$out/scan_bench.md"
