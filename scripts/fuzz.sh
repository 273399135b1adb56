#!/usr/bin/env bash
# Coverage-guided fuzzing of the reader, both importers (SQLite and Kineto JSON), every renderer
# and every export (tests/fuzz/libfuzzer/fuzz_reader.cpp) with AddressSanitizer and
# UndefinedBehaviorSanitizer, for FUZZ_SECONDS (default 60). Seeds: the bundled traces and the
# mutants of tests/fuzz/mutate_traces.py --corpus, and tests/fuzz/kineto_seeds.py. Needs clang
# (Debian's `clang` package; scripts/setup.sh installs it); without it, says SKIPPED and exits 0.
#   FUZZ_BUILD_DIR (default build-fuzz), FUZZ_SECONDS, FUZZ_WORK (default $FUZZ_BUILD_DIR/fuzz),
#   FUZZ_SEED (default 1: the same exploration in every CI run; set another to explore further)
# The long run (an hour per importer): scripts/fuzz_long.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fuzz_common.sh
build=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
work=${FUZZ_WORK:-$build/fuzz}
fuzz_clang_ready || exit 0
fuzz_build "$build"
rm -rf "$work"
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
fuzz_seeds "$work/seeds" all
echo "fuzz: $(ls "$work/seeds" | wc -l) seeds, ${seconds} s"
"$build/tests/fuzz/libfuzzer/cuoverlap_fuzz_reader" -max_total_time="$seconds" -timeout=30 \
  -seed="${FUZZ_SEED:-1}" \
  -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$work/corpus" "$work/seeds"
