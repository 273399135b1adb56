#!/usr/bin/env bash
# What recording costs a kernel's blocks: the block-placement probe (block_placement_probe.cu) run
# alone, under `cuoverlap record`, and under `cuoverlap record --no-op-buffers`, three times each,
# and its table: per kernel (256-thread blocks of US µs each), its time from its first block's
# start to its last block's end, when its last block started, and its median block (µs, medians of
# the three runs). CUPTI's concurrent-kernel tracing instruments kernel code; this shows where
# that reaches a kernel's time (docs/BENCHMARKS.md, "Block placement under the collector").
# With `graph`: kernels launched one by one against the same kernels as the nodes of a CUDA graph
# (the probe's --graph), untraced and recorded; per scenario its last kernel's time, when that
# kernel's last block started, and the whole scenario's time (first block's start to last block's
# end): is a device-filling kernel's later blocks' lag under the collector a graph node's too
# (docs/BENCHMARKS.md, "Graph nodes and host threads' copy calls under the collector")?
# About 45 s on an H200 with the build (Release, the targets cuoverlap and cuoverlap_collector);
# `graph` about 90 s.
# Usage: scripts/gpu/block_dispatch_overhead.sh OUT_DIR [graph]   (nvcc on PATH; sm_90 unless ARCH
#        is set; BUILD_DIR, default build-gpu; SKIP_BUILD=1 uses what it holds)
set -uo pipefail
cd "$(dirname "$0")/../.."
T=${1:?usage: block_dispatch_overhead.sh OUT_DIR [graph]}
what=${2:-recorders}
case "$what" in recorders|graph) ;; *) echo "block_dispatch_overhead.sh: the second argument is graph or nothing, not '$what'" >&2; exit 2 ;; esac
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
probe() {  # probe MODE RUN SCENARIO...: one run into $T/MODE$i$RUN.txt
  local mode=$1 r=$2; shift 2
  local g=; case $mode in graph_*) g=--graph ;; esac
  case $mode in
    plain|graph_plain) "$T/block_placement_probe" $g "$@" > "$T/$mode$i$r.txt" ;;
    recorded|graph_recorded) "$cli" record -o "$T/run.sqlite" --force -- "$T/block_placement_probe" $g "$@" \
        > "$T/$mode$i$r.txt" 2> "$T/record.err" || { cat "$T/record.err"; return 1; } ;;
    no_op_buffers) "$cli" record -o "$T/run.sqlite" --force --no-op-buffers -- "$T/block_placement_probe" "$@" \
        > "$T/$mode$i$r.txt" 2> "$T/record.err" || { cat "$T/record.err"; return 1; } ;;
  esac
}
if [ "$what" = graph ]; then
  modes="plain graph_plain recorded graph_recorded"
  scenarios='0:132:100
0:1056:100
0:1056:400
0:2112:100
0:3168:200
0:1056:100 0:1056:100 0:1056:100
0:3168:200 0:2:460 0:132:47 0:2112:75
0:8:3 0:1:2 0:4:4 0:1:2 0:32:3'
else
  modes="plain recorded no_op_buffers"
  scenarios='0:132:10
0:132:100
0:528:10
0:528:100
0:1056:10
0:1056:100
0:1056:400
0:2112:10
0:2112:100
0:4224:10'
fi
rm -f "$T/index.txt"
i=0
while read -r scenario; do
  for r in a b c; do
    for mode in $modes; do probe "$mode" "$r" $scenario || exit 1; done
  done
  echo "$i $scenario" >> "$T/index.txt"; i=$((i + 1))
done <<< "$scenarios"
rm -f "$T/run.sqlite"
python3 - "$T" "$what" $modes <<'PY'
import collections, statistics, sys
t, what, modes = sys.argv[1], sys.argv[2], sys.argv[3:]

def measure(path):
    """(last kernel's time, its last block's start, its median block, the whole scenario's time), µs."""
    blocks = collections.defaultdict(list)
    for row in open(path):
        fields = row.split()
        if len(fields) == 8:
            blocks[int(fields[0])].append((float(fields[5]), float(fields[6])))
    last = blocks[max(blocks)]
    first = min(s for s, _ in last)
    every = [b for k in blocks.values() for b in k]
    return (max(e for _, e in last) - first, max(s for s, _ in last) - first,
            statistics.median(e - s for s, e in last), max(e for _, e in every) - min(s for s, _ in every))

third = 3 if what == "graph" else 2  # the whole scenario's time, or the median block
print(open(f"{t}/gpu.txt").read().strip())
names = {"plain": "alone: time, last start, " + ("whole" if what == "graph" else "block"),
         "no_op_buffers": "recorded, no op buffers"}
width = 38 if what == "graph" else 16
print(f"{'scenario (stream:grid:us)' if what == 'graph' else 'stream:grid:us':{width}} "
      + "  ".join(f"{names.get(m, m.replace('_', ' ')):>32}" for m in modes))
for line in open(f"{t}/index.txt").read().splitlines():
    i, scenario = line.split(" ", 1)
    cells = []
    for mode in modes:
        runs = [measure(f"{t}/{mode}{i}{r}.txt") for r in "abc"]
        cells.append(" ".join(f"{statistics.median(x[k] for x in runs):8.1f}" for k in (0, 1, third)))
    print(f"{scenario:{width}} " + "  ".join(f"{c:>32}" for c in cells))
PY
