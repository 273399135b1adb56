#!/usr/bin/env bash
# One command for the collector overhead benchmark on a GPU host: configures and builds what the
# benchmark needs (Release, CUDA on), then runs run_collector_bench.py; the table comes last.
# usage: bench/collector/run_all.sh [BUILD_DIR (default build-bench)] [run_collector_bench.py options]
#   PYTHON: the interpreter that has torch (default python3); without torch the PyTorch row is
#   skipped with a line saying why.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-bench}
[ $# -gt 0 ] && shift
log=$(mktemp)
if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUOVERLAP_WITH_CUDA=ON &&
       cmake --build "$build" -j"$(nproc)" --target cuoverlap cuoverlap_collector bench_empty_launch \
         cuoverlap_floor_tracer cuoverlap-streams; } > "$log" 2>&1; then
  grep -B2 -A8 -E "error|Error|FAILED" "$log" | head -60
  echo "error: configuring or building $build failed (log: $log)" >&2
  exit 1
fi
rm -f "$log"
exec "${PYTHON:-python3}" bench/collector/run_collector_bench.py "$build" --python "${PYTHON:-python3}" "$@"
