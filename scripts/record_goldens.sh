#!/usr/bin/env bash
# On a GPU host: build, run the GPU tests, and record every bundled workload with the collector
# into tests/data/ (the golden traces the CPU tests read). Usage: scripts/record_goldens.sh [OUT_DIR]
#   BUILD_DIR (default build-gpu). Logs go to OUT_DIR (default out/).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-out}; mkdir -p "$out" tests/data
build=${BUILD_DIR:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUOVERLAP_WITH_CUDA=ON > "$out/configure.log" 2>&1 \
  || { tail -20 "$out/configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" > "$out/build.log" 2>&1 \
  || { grep -B2 -A6 -E "error|FAILED" "$out/build.log" | head -60; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
cuoverlap=$build/cli/cuoverlap
streams=$build/workloads/cuoverlap-streams
scan=$build/workloads/cuoverlap-scan
# Every scenario --list names, the fixed twins included (workloads/streams/scenarios.json pairs
# each bad scenario with its twin; tests pair the traces streams_<bad>.sqlite and
# streams_<twin>.sqlite).
for s in $($streams --list | awk '{print $1}'); do
  $cuoverlap record --force -o "tests/data/streams_$s.sqlite" -- $streams "$s" --no-baseline \
    > "$out/record_$s.log" 2>&1 || echo "recording $s failed (see $out/record_$s.log)"
  grep -q "^  verified" "$out/record_$s.log" || echo "scenario $s did not verify (see $out/record_$s.log)"
done
# Per pair: the scenario's own wall time (CUDA events) of the bad run and of its twin, what the fix
# saved, and both trace sizes (each should stay under 1 MB).
python3 - "$out" <<'PY' | tee "$out/pairs.txt"
import json, os, re, sys
out = sys.argv[1]
def wall(name):
    try:
        m = re.search(r"wall ([0-9.]+) ms", open(f"{out}/record_{name}.log").read())
        return float(m.group(1)) if m else float("nan")
    except OSError:
        return float("nan")
def size(name):
    path = f"tests/data/streams_{name}.sqlite"
    return os.path.getsize(path) / 1e6 if os.path.exists(path) else float("nan")
print("| bad | wall ms | fixed twin | wall ms | saved ms | saved % | trace MB (bad/twin) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for s in json.load(open("workloads/streams/scenarios.json"))["scenarios"]:
    if "fixed_twin" not in s:
        continue
    bad, twin = s["name"], s["fixed_twin"]
    b, t = wall(bad), wall(twin)
    print(f"| {bad} | {b:.3f} | {twin} | {t:.3f} | {b - t:.3f} | {100 * (b - t) / b:.1f} | "
          f"{size(bad):.2f}/{size(twin):.2f} |")
PY
$cuoverlap record --force -o tests/data/scan_streamed.sqlite -- $scan streamed > "$out/record_scan_streamed.log" 2>&1 \
  || echo "recording scan streamed failed"
$cuoverlap record --force -o tests/data/scan_run.sqlite -- $scan run > "$out/record_scan_run.log" 2>&1 \
  || echo "recording scan run failed"
# tests/data stores the traces gzip-compressed (deterministic: no name, no time); the analyzer
# reads them as they are.
for f in tests/data/*.sqlite; do gzip -9 -n -f "$f"; done
ls -la tests/data/*.sqlite.gz
for f in tests/data/*.sqlite.gz; do $cuoverlap analyze "$f"; done > "$out/analyze.txt" 2>&1
(cd "$build" && ctest -L gpu --output-on-failure) > "$out/ctest_gpu.log" 2>&1
grep -E "tests passed|\(Failed\)|\(Skipped\)|Not Run" "$out/ctest_gpu.log"
