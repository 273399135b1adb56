#!/usr/bin/env bash
# What record --gpu-metrics costs the traced program, on a GPU host: gpu_metrics_app's phase
# times (event-timed, ms) and wall time, REPS runs each of: untraced, record, record --gpu-metrics
# at 100, 20 and 10 µs; then each traced run's samples, lost samples and file size. Prints a table.
# Usage: scripts/gpu/gpu_metrics_overhead.sh BUILD_DIR OUT_DIR   (REPS, default 5)
set -uo pipefail
build=${1:?usage: gpu_metrics_overhead.sh BUILD_DIR OUT_DIR}; out=${2:?}
mkdir -p "$out"
cli=$build/cli/cuoverlap
app=$build/tests/collector/gpu_metrics_app
reps=${REPS:-5}
run_one() {  # LABEL COMMAND...: one run, its PHASE lines and wall time appended to $out/LABEL.txt
  local label=$1; shift
  local t0=$(date +%s%N)
  "$@" > "$out/$label.log" 2>&1
  local rc=$?
  local t1=$(date +%s%N)
  echo "rc $rc wall_ms $(( (t1 - t0) / 1000000 )) $(grep ^PHASE "$out/$label.log" | awk '{printf "%s %s ", $2, $3}')" >> "$out/$label.txt"
}
for i in $(seq "$reps"); do
  run_one plain "$app"
  run_one record "$cli" record --force -o "$out/record.sqlite" -- "$app"
  for us in 100 20 10; do
    run_one "metrics$us" "$cli" record --force --gpu-metrics "$us" -o "$out/metrics$us.sqlite" -- "$app"
  done
done
printf '%-10s %8s %8s %8s %8s %8s %10s %8s %10s\n' config wall_ms sweep pair spin samples lost size_MB error
for label in plain record metrics100 metrics20 metrics10; do
  med() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' "$out/$label.txt" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
  samples=- lost=- size=- err=-
  if [ -f "$out/$label.sqlite" ]; then
    q() { python3 -c "import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(\"SELECT value FROM CUOVERLAP_SESSION WHERE key=?\", (sys.argv[2],)).fetchone(); print(r[0] if r and r[0] != '' else '-')" "$out/$label.sqlite" "$1"; }
    samples=$(q gpu_metrics.samples); lost=$(q gpu_metrics.lost); err=$(q gpu_metrics.error | tr ' ' '_' | cut -c1-40)
    size=$(( $(stat -c %s "$out/$label.sqlite") / 1048576 ))
  fi
  printf '%-10s %8s %8s %8s %8s %8s %10s %8s %10s\n' "$label" "$(med wall_ms)" "$(med sweep)" "$(med pair)" "$(med spin)" "$samples" "$lost" "$size" "$err"
done
