#!/usr/bin/env bash
# Capture windows on a GPU host with PyTorch (issue 22). Usage: scripts/gpu/capture_check.sh BUILD_DIR N
#  (a) records scripts/frameworks/torch_mlp.py (one NVTX range "step" per step, 100 steps) with
#      `record --capture nvtx:step@50-60` on N ranks (N = 1: python3; N >= 2: torchrun
#      --nproc_per_node N, one GPU each) and checks, per process, that the trace holds exactly 11
#      "step" ranges and only GPU work inside them, and that analyze says it is a capture window
#      (KEEP_TRACE=FILE keeps that trace);
#  (b) measures the collector's cost while the window is closed (scripts/gpu/capture_overhead.sh):
#      REPS (default 5; 0 skips it) interleaved runs of STEPS (600) steps with no collector and with
#      `record --capture nvtx:step@1000000` (never opens); a Markdown table for docs/BENCHMARKS.md.
# Exits 77 when python3 with torch and N GPUs is not there.
set -euo pipefail
build=${1:?usage: capture_check.sh BUILD_DIR N}
ranks=${2:-1}
reps=${REPS:-5}
here=$(cd "$(dirname "$0")/../.." && pwd)
cli="$build/cli/cuoverlap"
mlp="$here/scripts/frameworks/torch_mlp.py"
work=$(mktemp -d /tmp/cuoverlap_capture_check.XXXXXX)
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.device_count() >= $ranks else 1)" 2>/dev/null || {
  echo "SKIP: python3 with torch and $ranks GPU(s) needed"; exit 77; }

launch=(python3)
if [ "$ranks" -ge 2 ]; then launch=(torchrun --standalone --nproc_per_node "$ranks"); fi

echo "== (a) --capture nvtx:step@50-60 on $ranks rank(s)"
trace="$work/steps.sqlite"
"$cli" record -o "$trace" --capture nvtx:step@50-60 -- "${launch[@]}" "$mlp" --steps 100 \
  --step-name step --host-setup-s 0.2 2> "$work/record.log"
cat "$work/record.log"
# KEEP_TRACE=FILE keeps the recorded window (tests/data/capture/ holds one for the CPU tests).
if [ -n "${KEEP_TRACE:-}" ]; then cp "$trace" "$KEEP_TRACE"; fi
python3 - "$trace" "$ranks" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
ranks = int(sys.argv[2])
rows = db.execute("SELECT globalTid >> 24, count(*), min(start), max(end) FROM NVTX_EVENTS "
                  "WHERE text = 'step' AND eventType = 59 GROUP BY globalTid >> 24").fetchall()
failed = False
if len(rows) != ranks:
    print(f"FAIL: {len(rows)} process(es) with step ranges, expected {ranks}"); failed = True
for pid_key, count, first, last in rows:
    outside = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid >> 24 = ? "
                         "AND (start < ? OR end > ? + 50000000)", (pid_key, first, last)).fetchone()[0]
    kernels = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid >> 24 = ?",
                         (pid_key,)).fetchone()[0]
    calls = db.execute("SELECT count(*), sum(r.start < ? OR r.start > ?) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                       "WHERE r.globalTid >> 24 = ?", (first, last, pid_key)).fetchone()
    print(f"process {pid_key & 0xffffff}: {count} step ranges, {kernels} kernels, {outside} outside them; "
          f"{calls[0]} runtime calls, {calls[1] or 0} outside the steps")
    if count != 11 or kernels == 0 or outside != 0 or calls[0] == 0 or (calls[1] or 0) != 0: failed = True
opened = db.execute("SELECT value FROM CUOVERLAP_SESSION WHERE key = 'capture_opened'").fetchone()
if not opened or opened[0] != "1":
    print("FAIL: capture_opened is not 1"); failed = True
print("FAIL" if failed else "OK: exactly steps 50-60 on every rank")
sys.exit(1 if failed else 0)
PY
"$cli" analyze "$trace" | grep "trace is a capture window: nvtx:step@50-60"

# (b) through capture_overhead.sh: interleaved, pinned, the median of per-rep ratios (REPS=0: skip).
if [ "$reps" -gt 0 ]; then
  echo "== (b) overhead with the window closed: $reps interleaved reps of ${STEPS:-600} steps"
  bash "$here/scripts/gpu/capture_overhead.sh" "$cli" "$reps" "${STEPS:-600}" none=none \
    "closed=$(cd "$build" && pwd)/cli/libcuoverlap_collector.so"
fi
rm -rf "$work"
