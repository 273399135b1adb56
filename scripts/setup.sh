#!/usr/bin/env bash
# Installs what cuoverlap needs on a fresh Debian/Ubuntu machine (only the packages that are
# missing), then configures and builds into build/. Safe to run again.
#   BUILD_DIR (default build), CMAKE_ARGS (extra configure arguments)
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(cmake ninja-build g++ libsqlite3-dev sqlite3 catch2 libcli11-dev nlohmann-json3-dev libfmt-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# CUDA is optional; use the toolkit in /usr/local/cuda when there is one.
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
