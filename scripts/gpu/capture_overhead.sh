#!/usr/bin/env bash
# The collector's cost while a capture window is closed (issue 22, target <= 2%), measured as the
# ratio of one process's median step time with and without it, in interleaved runs:
#   scripts/gpu/capture_overhead.sh CLI REPS STEPS LABEL=COLLECTOR...
# LABEL (no spaces)=none runs the program alone; any other COLLECTOR is the collector library `record` loads
# (CUOVERLAP_COLLECTOR) with `--capture nvtx:step@1000000`, a window that never opens. Every rep
# runs each configuration once, in a rotated order, pinned to the same cores (CPUS, default 2-5).
# Prints a Markdown table: each configuration's median step time (range over reps) and the median
# over reps of its ratio to the `none` run of the same rep, the figure that cancels slow reps
# (the median step of one process moved 0.91-1.73 ms between reps on the H100 host).
set -euo pipefail
cli=${1:?usage: capture_overhead.sh CLI REPS STEPS LABEL=COLLECTOR...}
reps=${2:?REPS}; steps=${3:?STEPS}; shift 3
here=$(cd "$(dirname "$0")/../.." && pwd)
mlp="$here/scripts/frameworks/torch_mlp.py"
work=$(mktemp -d /tmp/cuoverlap_overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT
pin=()
if command -v taskset >/dev/null; then pin=(taskset -c "${CPUS:-2-5}"); fi
configs=("$@")
n=${#configs[@]}
step_ms() { sed -n 's/.*median_step_ms=\([0-9.]*\).*/\1/p'; }
for rep in $(seq 1 "$reps"); do
  line="$rep"
  for k in $(seq 0 $((n - 1))); do
    i=$(( (k + rep) % n ))
    label=${configs[$i]%%=*} lib=${configs[$i]#*=}
    if [ "$lib" = none ]; then
      t=$("${pin[@]}" python3 "$mlp" --steps "$steps" --step-name step --host-setup-s 0.2 | step_ms)
    else
      rm -f "$work/closed.sqlite"
      t=$(CUOVERLAP_COLLECTOR=$lib "${pin[@]}" "$cli" record -o "$work/closed.sqlite" \
            --capture nvtx:step@1000000 -- python3 "$mlp" --steps "$steps" --step-name step \
            --host-setup-s 0.2 2>/dev/null | step_ms)
    fi
    echo "$label ${t:-nan}" >> "$work/rep$rep.txt"
  done
  echo "rep $rep: $(sort "$work/rep$rep.txt" | tr '\n' ' ')"
done
python3 - "$work" "$reps" "$steps" "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)" \
  "${configs[@]}" <<'PY'
import math, statistics, sys
work, reps, steps, gpu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
labels = [c.split("=", 1)[0] for c in sys.argv[5:]]
runs = []
for rep in range(1, reps + 1):
    row = dict(l.split() for l in open(f"{work}/rep{rep}.txt") if l.strip())
    runs.append({k: float(v) for k, v in row.items()})
runs = [r for r in runs if all(not math.isnan(r.get(l, math.nan)) for l in labels)]
print(f"\n{gpu}, {len(runs)} reps of {steps} steps, configurations interleaved, median per-step time:\n")
print("| configuration | median per step (range over reps) | median of per-rep ratio to none |")
print("|---|---|---|")
for l in labels:
    t = [r[l] for r in runs]
    ratio = "" if l == "none" else f"{(statistics.median(r[l] / r['none'] for r in runs) - 1) * 100:+.1f}%"
    print(f"| {l} | {statistics.median(t):.3f} ms ({min(t):.3f}-{max(t):.3f}) | {ratio} |")
PY
