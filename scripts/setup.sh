#!/usr/bin/env bash
# Installs what cuoverlap needs on a fresh Debian/Ubuntu machine (only the packages that are
# missing), then configures and builds into build/. Safe to run again. When the dependencies are
# already found some other way (CMAKE_PREFIX_PATH, e.g. a GPU host without a package registry),
# nothing is installed.
#   BUILD_DIR (default build), CMAKE_ARGS (extra configure arguments)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
# CUDA is optional; use the toolkit in /usr/local/cuda when there is one.
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

configure() {
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} > "$1" 2>&1
}

install_missing() {
  # clang: the libFuzzer run of scripts/test.sh (scripts/fuzz.sh).
  local pkgs=(cmake ninja-build g++ libsqlite3-dev sqlite3 catch2 libcli11-dev nlohmann-json3-dev
              libfmt-dev clang) missing=() p sudo=""
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "setup: installing ${missing[*]}"
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  install_fuzzer_runtime "$sudo"
}

# libFuzzer's runtime is only a Recommends of Debian's clang: install it when it is missing.
install_fuzzer_runtime() {
  command -v clang >/dev/null || return 0
  [ -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] && return 0
  local major
  major=$(clang -dumpversion | cut -d. -f1)
  DEBIAN_FRONTEND=noninteractive $1 apt-get install -y -qq "libclang-rt-$major-dev" >/dev/null || true
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { command -v cmake >/dev/null && command -v ninja >/dev/null && configure "$log"; }; then
  install_missing
  configure "$log" || { cat "$log" >&2; echo "setup: configure failed" >&2; exit 1; }
fi
# The fuzz run of scripts/test.sh needs clang; without a package registry it is skipped, visibly.
command -v clang >/dev/null || install_missing || echo "setup: could not install clang: scripts/fuzz.sh will skip"
cmake --build "$build" -j"$(nproc)"
