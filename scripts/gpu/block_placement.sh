#!/usr/bin/env bash
# The block-placement probe's scenarios (scripts/gpu/block_placement_probe.cu), each run twice, and
# their table: how much later a 264x256 kernel of spinning blocks ends when it starts beside a
# kernel already holding 1-6 of each SM's 8 slots of 256-thread blocks (the schedule model's
# besideStartNs, analyzer/src/diagnosis/schedule_estimate.h). About 15 s on an H200.
# Usage: scripts/gpu/block_placement.sh OUT_DIR     (nvcc on PATH; sm_90 unless ARCH is set)
set -uo pipefail
cd "$(dirname "$0")/../.."
T=${1:?usage: block_placement.sh OUT_DIR}
mkdir -p "$T"; T=$(cd "$T" && pwd)
nvcc -arch="${ARCH:-sm_90}" -O2 -o "$T/block_placement_probe" scripts/gpu/block_placement_probe.cu || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader > "$T/gpu.txt"
i=0
while read -r scenario; do
  for r in a b; do "$T/block_placement_probe" $scenario > "$T/s$i$r.txt" || exit 1; done
  echo "$i $scenario" >> "$T/index.txt"; i=$((i + 1))
done <<'L'
1:264:10
1:264:20
1:264:50
1:264:100
1:528:20
0:132:300 1:264:20
0:264:300 1:264:20
0:396:300 1:264:20
0:462:300 1:264:20
0:528:300 1:264:10
0:528:300 1:264:20
0:528:300 1:264:50
0:528:300 1:264:100
0:528:300 1:528:20
0:660:300 1:264:20
0:792:300 1:264:20
0:792:300 1:264:100
0:264:300 1:528:50
L
python3 - "$T" <<'PY'
import collections, sys
t = sys.argv[1]
print(f"{'scenario (stream:grid:us)':26s} last kernel: end after its first start, µs (two runs); its blocks' time, median")
for line in open(f"{t}/index.txt").read().splitlines():
    i, scenario = line.split(" ", 1)
    cells = []
    for r in "ab":
        kernels = collections.defaultdict(list)
        for row in open(f"{t}/s{i}{r}.txt"):
            k, _, _, _, _, start, end, _ = row.split()
            kernels[int(k)].append((float(start), float(end)))
        blocks = kernels[max(kernels)]
        first = min(s for s, _ in blocks)
        times = sorted(e - s for s, e in blocks)
        cells.append(f"{max(e for _, e in blocks) - first:7.1f} ({times[len(times) // 2]:6.1f})")
    print(f"{scenario:26s} {'  '.join(cells)}")
PY
