#!/usr/bin/env bash
# The main job. Sets up and builds (scripts/setup.sh), then:
#   on a GPU host (nvidia-smi sees a GPU): records every cuoverlap-streams scenario and a
#     streamed scan with `cuoverlap record`, and analyzes each recorded trace;
#   elsewhere: analyzes the bundled traces tests/data/*.sqlite.gz, or, while none exist yet, the real
#     Nsight Systems exports in tests/data/nsys/.
# Reports go to $OUT_DIR (default out/): <name>.txt, <name>.json and <name>.html per trace.
#   BUILD_DIR (default build), OUT_DIR (default out)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${BUILD_DIR:-build}
out=${OUT_DIR:-out}
cli="$build/cli/cuoverlap"
mkdir -p "$out"

analyze() {  # analyze TRACE: text and JSON reports beside each other in $out
  local trace=$1 name
  name=$(basename "$trace" .gz)
  name=${name%.sqlite}
  "$cli" analyze "$trace" --format json -o "$out/$name.json" --force
  "$cli" analyze "$trace" --format html -o "$out/$name.html" --force
  "$cli" analyze "$trace" | tee "$out/$name.txt"
}

have_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; }

if have_gpu && [ -x "$build/workloads/cuoverlap-streams" ]; then
  echo "main: GPU found: recording the bundled workloads"
  for scenario in $("$build/workloads/cuoverlap-streams" --list | awk '{print $1}'); do
    trace="$out/streams-$scenario.sqlite"
    "$cli" record --force -o "$trace" -- "$build/workloads/cuoverlap-streams" "$scenario"
    analyze "$trace"
  done
  trace="$out/scan-streamed.sqlite"
  "$cli" record --force -o "$trace" -- "$build/workloads/cuoverlap-scan" streamed
  analyze "$trace"
else
  shopt -s nullglob
  traces=(tests/data/*.sqlite.gz)
  if ((${#traces[@]} == 0)); then traces=(tests/data/nsys/*.sqlite.gz); fi
  if ((${#traces[@]} == 0)); then
    echo "main: no GPU and no bundled traces to analyze" >&2
    exit 1
  fi
  echo "main: no GPU: analyzing ${#traces[@]} bundled trace(s)"
  for trace in "${traces[@]}"; do analyze "$trace"; done
fi
echo "main: reports in $out/"
