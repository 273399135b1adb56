#!/usr/bin/env bash
# Sets up, builds, and runs every test. Without a GPU the tests labelled `gpu` are reported as
# skipped; on a GPU host they run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
# 60 s of coverage-guided fuzzing with sanitizers (says SKIPPED when clang is missing).
bash scripts/fuzz.sh
