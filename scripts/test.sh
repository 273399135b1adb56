#!/usr/bin/env bash
# Sets up, builds, and runs every test. Without a GPU the tests labelled `gpu` are reported as
# skipped; on a GPU host they run.
set -euo pipefail
cd "$(dirname "$0")/.."
# The wheel's build (its own directory) then finds the objects of setup.sh's build in ccache; the
# build directory is in the debug information only, which the wheel strips.
export CCACHE_NOHASHDIR=true
bash scripts/setup.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
# The Python package: wheel, fresh venv, pytest (says SKIPPED without venv or a package index).
bash scripts/test_python.sh
# 60 s of coverage-guided fuzzing with sanitizers (says SKIPPED when clang is missing).
bash scripts/fuzz.sh
