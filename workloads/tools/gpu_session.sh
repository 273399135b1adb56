#!/usr/bin/env bash
# One GPU-machine session for the workloads: build, verify every workload, benchmark, and (when
# the collector builds) record every scenario and print its overlap numbers.
# Usage (repo root, on the GPU machine): workloads/tools/gpu_session.sh BUILD_DIR OUT_DIR
# Steps, each on unless set to 0: CTEST, RUN, TRACE, TUNE, BENCH (BENCH_ARGS passed to bench).
set -u
build=$1; out=$2
targets="cuoverlap-scan cuoverlap-streams"
if cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUOVERLAP_BUILD_BENCH=OFF \
     > "$out/configure.log" 2>&1; then
  targets="$targets workloads_cli_test workloads_gpu_probe"
else
  echo "configure with tests failed; without tests"; CTEST=0
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUOVERLAP_BUILD_TESTS=OFF \
    -DCUOVERLAP_BUILD_BENCH=OFF > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
fi
cmake --build "$build" -j16 --target $targets > "$out/build.log" 2>&1 \
  || { grep -B2 -A5 error "$out/build.log" | head -60; exit 1; }
bin=$build/workloads
nvidia-smi --query-gpu=name,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv
if [ "${TUNE:-1}" = 1 ]; then echo "== scan tune"; $bin/cuoverlap-scan tune | tee "$out/scan_tune.md"; fi
if [ "${CTEST:-1}" = 1 ]; then
  echo "== ctest"; (cd "$build" && ctest -R workloads --output-on-failure) > "$out/ctest.log" 2>&1
  grep -E "tests passed|Passed|Failed|Skipped|\*\*\*" "$out/ctest.log" | head -40
fi
if [ "${RUN:-1}" = 1 ]; then
  for s in $($bin/cuoverlap-streams --list | awk '{print $1}'); do
    echo "== $s"; /usr/bin/time -f "elapsed %e s" $bin/cuoverlap-streams "$s" 2>&1 | grep -v "^  engine busy"
  done
fi
if [ "${TRACE:-1}" = 1 ] && cmake --build "$build" -j16 --target cuoverlap_collector >> "$out/build.log" 2>&1; then
  lib=$(find "$build" -name 'libcuoverlap_collector.so' | head -1)
  traces=/tmp/cuoverlap_traces; mkdir -p $traces
  for s in $($bin/cuoverlap-streams --list | awk '{print $1}'); do
    CUDA_INJECTION64_PATH=$lib NVTX_INJECTION64_PATH=$lib CUOVERLAP_OUTPUT=$traces/$s.sqlite \
      $bin/cuoverlap-streams "$s" --no-baseline > "$traces/$s.log" 2>&1 || echo "traced $s failed"
  done
  python3 workloads/tools/trace_overlap.py $traces/*.sqlite
  tar czf "$out/traces.tgz" -C $traces .
fi
if [ "${BENCH:-1}" = 1 ]; then
  echo "== scan bench"; $bin/cuoverlap-scan bench ${BENCH_ARGS:-} | tee "$out/scan_bench.md"
fi
