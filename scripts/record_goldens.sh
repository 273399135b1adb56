#!/usr/bin/env bash
# On a GPU host: build, run the GPU tests, and record every bundled workload with the collector
# into tests/data/ (the golden traces the CPU tests read). Usage: scripts/record_goldens.sh [OUT_DIR]
#   BUILD_DIR (default build-gpu). Logs go to OUT_DIR (default out/).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-out}; mkdir -p "$out" tests/data
build=${BUILD_DIR:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/configure.log" 2>&1 \
  || { tail -20 "$out/configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" > "$out/build.log" 2>&1 \
  || { grep -B2 -A6 -E "error|FAILED" "$out/build.log" | head -60; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
cuoverlap=$build/cli/cuoverlap
streams=$build/workloads/cuoverlap-streams
scan=$build/workloads/cuoverlap-scan
for s in $($streams --list | awk '{print $1}'); do
  $cuoverlap record --force -o "tests/data/streams_$s.sqlite" -- $streams "$s" --no-baseline \
    > "$out/record_$s.log" 2>&1 || echo "recording $s failed (see $out/record_$s.log)"
done
$cuoverlap record --force -o tests/data/scan_streamed.sqlite -- $scan streamed > "$out/record_scan_streamed.log" 2>&1 \
  || echo "recording scan streamed failed"
$cuoverlap record --force -o tests/data/scan_run.sqlite -- $scan run > "$out/record_scan_run.log" 2>&1 \
  || echo "recording scan run failed"
ls -la tests/data/*.sqlite
for f in tests/data/*.sqlite; do $cuoverlap analyze "$f"; done > "$out/analyze.txt" 2>&1
(cd "$build" && ctest -L gpu --output-on-failure) > "$out/ctest_gpu.log" 2>&1
grep -E "tests passed|\(Failed\)|\(Skipped\)|Not Run" "$out/ctest_gpu.log"
