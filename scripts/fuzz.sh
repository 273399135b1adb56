#!/usr/bin/env bash
# Coverage-guided fuzzing of the reader and every renderer (tests/fuzz/libfuzzer/fuzz_reader.cpp)
# with AddressSanitizer and UndefinedBehaviorSanitizer, for FUZZ_SECONDS (default 60). Seeds: the
# bundled traces and the mutants of tests/fuzz/mutate_traces.py --corpus. Needs clang (Debian's
# `clang` package; scripts/setup.sh installs it); without it, says SKIPPED and exits 0.
#   FUZZ_BUILD_DIR (default build-fuzz), FUZZ_SECONDS, FUZZ_WORK (default $FUZZ_BUILD_DIR/fuzz),
#   FUZZ_SEED (default 1: the same exploration in every CI run; set another to explore further)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
work=${FUZZ_WORK:-$build/fuzz}
if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  echo "fuzz: SKIPPED: clang/clang++ not found (scripts/setup.sh installs Debian's clang)"
  exit 0
fi
if [ ! -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
  echo "fuzz: SKIPPED: clang's libFuzzer runtime is missing (Debian: libclang-rt-N-dev)"
  exit 0
fi
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" -DCUOVERLAP_WITH_CUDA=OFF \
  -DCUOVERLAP_BUILD_TESTS=OFF -DCUOVERLAP_BUILD_BENCH=OFF -DCUOVERLAP_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="$sanitize -fsanitize=fuzzer-no-link" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" --target cuoverlap_fuzz_reader -j"${FUZZ_JOBS:-$(nproc)}"
rm -rf "$work"
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
python3 tests/fuzz/mutate_traces.py --corpus "$work/seeds" --quick
echo "fuzz: $(ls "$work/seeds" | wc -l) seeds, ${seconds} s"
"$build/tests/fuzz/libfuzzer/cuoverlap_fuzz_reader" -max_total_time="$seconds" -timeout=30 \
  -seed="${FUZZ_SEED:-1}" \
  -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$work/corpus" "$work/seeds"
