# Shared by scripts/fuzz.sh (CI, 60 s) and scripts/fuzz_long.sh (the long run per importer):
# building the libFuzzer target with clang, ASan and UBSan, and writing its seeds. Sourced.

# fuzz_clang_ready: 0 when clang, clang++ and libFuzzer's runtime are there; else says SKIPPED.
fuzz_clang_ready() {
  if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
    echo "fuzz: SKIPPED: clang/clang++ not found (scripts/setup.sh installs Debian's clang)"
    return 1
  fi
  if [ ! -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
    echo "fuzz: SKIPPED: clang's libFuzzer runtime is missing (Debian: libclang-rt-N-dev)"
    return 1
  fi
}

# fuzz_build BUILD_DIR: configures and builds cuoverlap_fuzz_reader there.
fuzz_build() {
  local build=$1 launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  local sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" -DCUOVERLAP_WITH_CUDA=OFF \
    -DCUOVERLAP_BUILD_TESTS=OFF -DCUOVERLAP_BUILD_BENCH=OFF -DCUOVERLAP_FUZZ=ON \
    -DCMAKE_CXX_FLAGS="$sanitize -fsanitize=fuzzer-no-link" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
  cmake --build "$build" --target cuoverlap_fuzz_reader -j"${FUZZ_JOBS:-$(nproc)}"
}

# fuzz_seeds DIR sqlite|kineto|all: the SQLite mutants (mutate_traces.py --corpus --quick) and/or
# the Kineto seeds (kineto_seeds.py).
fuzz_seeds() {
  local dir=$1 which=$2
  mkdir -p "$dir"
  if [ "$which" != kineto ]; then python3 tests/fuzz/mutate_traces.py --corpus "$dir" --quick; fi
  if [ "$which" != sqlite ]; then python3 tests/fuzz/kineto_seeds.py "$dir"; fi
}
