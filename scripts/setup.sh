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

# ccache, when installed, also serves these objects to the Python wheel's build (scripts/test_python.sh).
configure() {
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" ${CMAKE_ARGS:-} > "$1" 2>&1
}

# install_missing [--no-install-recommends] PACKAGE...: apt-get installs those not installed yet.
install_missing() {
  local flags=() missing=() p sudo=""
  if [ "${1:-}" = --no-install-recommends ]; then flags=("$1"); shift; fi
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "setup: installing ${missing[*]}"
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq -o Acquire::Retries=0 -o Acquire::http::Timeout=20
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${flags[@]}" "${missing[@]}" >/dev/null
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

build_packages=(cmake ninja-build g++ libsqlite3-dev sqlite3 catch2 libcli11-dev nlohmann-json3-dev
                libfmt-dev rapidjson-dev zlib1g-dev ccache libre2-dev pkg-config)
# Tools some tests use (each such test is skipped visibly without its tool): installed when a
# package manager can reach a registry, never required (a GPU host has none).
test_tools=(libxml2-utils clang python3-venv zsh)
# Headless Chromium for the HTML report's browser test (cli_html_screenshot), without its
# recommends (those bring systemd, avahi and perl: 130 packages instead of 25).
browser_tools=(chromium)

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { command -v cmake >/dev/null && command -v ninja >/dev/null && configure "$log"; }; then
  install_missing "${build_packages[@]}"
  configure "$log" || { cat "$log" >&2; echo "setup: configure failed" >&2; exit 1; }
fi
# Test-only tools: libxml2-utils (the JUnit schema test), clang (the libFuzzer run of
# scripts/test.sh, scripts/fuzz.sh), python3-venv (the Python package's tests,
# scripts/test_python.sh), zsh (the zsh completion's test) and chromium (the HTML report in a real
# browser). Without a package registry the tests that need them skip, visibly.
if command -v apt-get >/dev/null; then
  install_missing "${test_tools[@]}" || echo "setup: could not install ${test_tools[*]}; the tests that need them are skipped"
  install_missing --no-install-recommends "${browser_tools[@]}" ||
    echo "setup: could not install ${browser_tools[*]}; the browser test is skipped"
fi
cmake --build "$build" -j"$(nproc)"
