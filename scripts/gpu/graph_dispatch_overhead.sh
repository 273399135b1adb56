#!/usr/bin/env bash
# Kernels launched one by one against the same kernels as the nodes of a CUDA graph, untraced and
# under `cuoverlap record`: the block-placement probe (block_placement_probe.cu; --graph captures
# the scenario once and launches the graph) three times each, and its table: per scenario, its
# last kernel's time from its first block's start to its last block's end, when that kernel's last
# block started, and the scenario's whole time (first block's start to last block's end), in µs,
# medians of the three runs. Asks whether a device-filling kernel's later blocks, placed about 35 µs
# a wave later under the collector when launched alone (block_dispatch_overhead.sh), are placed
# so as graph nodes too: what the lab's graph-capture measures besides the launches it removes
# (docs/BENCHMARKS.md, "Graph nodes under the collector").
# About 60 s on an H200 with the build (Release, the targets cuoverlap and cuoverlap_collector).
# Usage: scripts/gpu/graph_dispatch_overhead.sh OUT_DIR   (nvcc on PATH; sm_90 unless ARCH is set;
#        BUILD_DIR, default build-gpu; SKIP_BUILD=1 uses what it holds)
set -uo pipefail
cd "$(dirname "$0")/../.."
T=${1:?usage: graph_dispatch_overhead.sh OUT_DIR}
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
    for g in "" --graph; do
      mode=${g:+graph_}
      "$T/block_placement_probe" $g $scenario > "$T/${mode}plain$i$r.txt" || exit 1
      "$cli" record -o "$T/run.sqlite" --force -- "$T/block_placement_probe" $g $scenario \
        > "$T/${mode}recorded$i$r.txt" 2> "$T/record.err" || { cat "$T/record.err"; exit 1; }
    done
  done
  echo "$i $scenario" >> "$T/index.txt"; i=$((i + 1))
done <<'L'
0:132:100
0:1056:100
0:1056:400
0:2112:100
0:3168:200
0:1056:100 0:1056:100 0:1056:100
0:3168:200 0:2:460 0:132:47 0:2112:75
0:8:3 0:1:2 0:4:4 0:1:2 0:32:3
L
rm -f "$T/run.sqlite"
python3 - "$T" <<'PY'
import collections, statistics, sys
t = sys.argv[1]

def measure(path):
    """(last kernel's time, its last block's start, the whole scenario's time) in µs."""
    blocks = collections.defaultdict(list)
    for row in open(path):
        fields = row.split()
        if len(fields) == 8:
            blocks[int(fields[0])].append((float(fields[5]), float(fields[6])))
    last = blocks[max(blocks)]
    first = min(s for s, _ in last)
    every = [b for k in blocks.values() for b in k]
    return (max(e for _, e in last) - first, max(s for s, _ in last) - first,
            max(e for _, e in every) - min(s for s, _ in every))

print(open(f"{t}/gpu.txt").read().strip())
modes = ("plain", "graph_plain", "recorded", "graph_recorded")
print(f"{'scenario (stream:grid:us)':38} " + "  ".join(f"{m.replace('_', ' '):>26}" for m in modes))
for line in open(f"{t}/index.txt").read().splitlines():
    i, scenario = line.split(" ", 1)
    cells = []
    for mode in modes:
        runs = [measure(f"{t}/{mode}{i}{r}.txt") for r in "abc"]
        cells.append(" ".join(f"{statistics.median(x[k] for x in runs):8.1f}" for k in range(3)))
    print(f"{scenario:38} " + "  ".join(f"{c:>26}" for c in cells))
PY
