#!/usr/bin/env bash
# The long fuzzing run, once per importer: SECONDS of wall time on JOBS parallel workers for the
# SQLite seeds, then as long for the Kineto JSON seeds (the same target and sanitizers as
# scripts/fuzz.sh; a worker that finds something stops, and its input is kept). One CPU-hour per
# importer is SECONDS * JOBS = 3600, e.g. `scripts/fuzz_long.sh build-fuzz 225 16` on 16 cores.
#   scripts/fuzz_long.sh BUILD_DIR SECONDS JOBS
# Exit status: 0 when neither run left an artifact (crash-, leak-, timeout-, oom-), else 1.
# The work (corpus, artifacts, logs) stays in BUILD_DIR/fuzz-long/{sqlite,kineto}/.
# FUZZ_PREBUILT=1 runs BUILD_DIR's cuoverlap_fuzz_reader as it is (built elsewhere by
# fuzz_build, e.g. carried to a many-core host that has no clang).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 3 ]; then
  echo "usage: scripts/fuzz_long.sh BUILD_DIR SECONDS JOBS" >&2
  exit 2
fi
build=$1 seconds=$2 jobs=$3
source scripts/fuzz_common.sh
if [ "${FUZZ_PREBUILT:-0}" = 1 ]; then
  [ -x "$build/tests/fuzz/libfuzzer/cuoverlap_fuzz_reader" ] || {
    echo "fuzz-long: FUZZ_PREBUILT=1 but $build/tests/fuzz/libfuzzer/cuoverlap_fuzz_reader is not there" >&2; exit 2; }
else
  fuzz_clang_ready || exit 0
  fuzz_build "$build"
fi
found=0
for importer in sqlite kineto; do
  work=$build/fuzz-long/$importer
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts" "$work/logs"
  fuzz_seeds "$work/seeds" "$importer"
  echo "fuzz-long: $importer: $(ls "$work/seeds" | wc -l) seeds, ${seconds} s on $jobs workers"
  start=$(date +%s)
  (cd "$work/logs" && "$OLDPWD/$build/tests/fuzz/libfuzzer/cuoverlap_fuzz_reader" \
      -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$OLDPWD/$work/artifacts/" \
      "$OLDPWD/$work/corpus" "$OLDPWD/$work/seeds") > "$work/fuzz.log" 2>&1 || true
  artifacts=$(find "$work/artifacts" -type f | wc -l)
  echo "fuzz-long: $importer: $(( $(date +%s) - start )) s, corpus $(ls "$work/corpus" | wc -l)," \
       "artifacts $artifacts; log $work/fuzz.log"
  tail -n 5 "$work/fuzz.log"
  if [ "$artifacts" -ne 0 ]; then found=1; fi
done
exit "$found"
