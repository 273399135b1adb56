#!/usr/bin/env bash
# What recording costs a kernel's blocks: the block-placement probe (block_placement_probe.cu) run
# alone, under `cuoverlap record`, and under `cuoverlap record --no-op-buffers`, three times each,
# and its table: per kernel (256-thread blocks of US µs each), its time from its first block's
# start to its last block's end, when its last block started, and its median block (µs, medians of
# the three runs). CUPTI's concurrent-kernel tracing instruments kernel code; this shows where
# that reaches a kernel's time (docs/BENCHMARKS.md, "Block placement under the collector").
# About 45 s on an H200 with the build (Release, the targets cuoverlap and cuoverlap_collector).
# Usage: scripts/gpu/block_dispatch_overhead.sh OUT_DIR   (nvcc on PATH; sm_90 unless ARCH is set;
#        BUILD_DIR, default build-gpu; SKIP_BUILD=1 uses what it holds)
set -uo pipefail
cd "$(dirname "$0")/../.."
T=${1:?usage: block_dispatch_overhead.sh OUT_DIR}
mkdir -p "$T"; T=$(cd "$T" && pwd)
build=${BUILD_DIR:-build-gpu}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$T/configure.log" 2>&1 \
    || { tail -20 "$T/configure.log"; exit 1; }
  cmake --build "$build" -j"$(nproc)" --target cuoverlap cuoverlap_collector > "$T/build.log" 2>&1 \
    || { tail -30 "$T/build.log"; exit 1; }
fi
cli=$build/cli/cuoverlap
nvcc -arch="${ARCH:-sm_90}" -O2 -o "$T/block_placement_probe" scripts/gpu/block_placement_probe.cu || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$T/gpu.txt"
rm -f "$T/index.txt"
i=0
while read -r scenario; do
  for r in a b c; do
    "$T/block_placement_probe" $scenario > "$T/plain$i$r.txt" || exit 1
    "$cli" record -o "$T/run.sqlite" --force -- "$T/block_placement_probe" $scenario > "$T/recorded$i$r.txt" \
      2> "$T/record.err" || { cat "$T/record.err"; exit 1; }
    "$cli" record -o "$T/run.sqlite" --force --no-op-buffers -- "$T/block_placement_probe" $scenario \
      > "$T/no_op_buffers$i$r.txt" 2> "$T/record.err" || { cat "$T/record.err"; exit 1; }
  done
  echo "$i $scenario" >> "$T/index.txt"; i=$((i + 1))
done <<'L'
0:132:10
0:132:100
0:528:10
0:528:100
0:1056:10
0:1056:100
0:1056:400
0:2112:10
0:2112:100
0:4224:10
L
rm -f "$T/run.sqlite"
python3 - "$T" <<'PY'
import collections, statistics, sys
t = sys.argv[1]

def kernel(path):
    """(its time, its last block's start, its median block) of the file's last kernel, in µs."""
    blocks = collections.defaultdict(list)
    for row in open(path):
        fields = row.split()
        if len(fields) == 8:
            blocks[int(fields[0])].append((float(fields[5]), float(fields[6])))
    last = blocks[max(blocks)]
    first = min(s for s, _ in last)
    return (max(e for _, e in last) - first, max(s for s, _ in last) - first,
            statistics.median(e - s for s, e in last))

print(open(f"{t}/gpu.txt").read().strip())
print(f"{'stream:grid:us':16} {'alone: time, last start, block':>32}  {'recorded':>26}  {'recorded, no op buffers':>26}")
for line in open(f"{t}/index.txt").read().splitlines():
    i, scenario = line.split(" ", 1)
    cells = []
    for mode in ("plain", "recorded", "no_op_buffers"):
        runs = [kernel(f"{t}/{mode}{i}{r}.txt") for r in "abc"]
        cells.append(" ".join(f"{statistics.median(x[k] for x in runs):8.1f}" for k in range(3)))
    print(f"{scenario:16} {cells[0]:>32}  {cells[1]:>26}  {cells[2]:>26}")
PY
