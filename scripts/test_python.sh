#!/usr/bin/env bash
# The Python package: builds the wheel (pyproject.toml, scikit-build-core), installs it into a fresh
# venv and runs the module's tests (tests/python) with pytest on the bundled traces. The wheel's
# compile reuses scripts/setup.sh's build through ccache (same compiler and flags). Without python3's
# venv or a reachable package index it says SKIPPED and exits 0; a failing build or test fails.
#   BUILD_DIR (default build: the build whose compiler the wheel uses), PY_WORK (default
#   $BUILD_DIR/python: the venvs and the wheel)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
work=${PY_WORK:-$build/python}
skip() {
  echo "python: SKIPPED: $*"
  exit 0
}
command -v python3 >/dev/null || skip "python3 not found"
rm -rf "$work"
mkdir -p "$work"
for venv in build test; do
  python3 -m venv "$work/$venv" >/dev/null 2>&1 ||
    skip "python3 -m venv failed (Debian: python3-venv, which scripts/setup.sh installs)"
done
pip() { "$work/$1/bin/python" -m pip --disable-pip-version-check -q "${@:2}"; }
index=(--retries 1 --timeout 20)
pip build install "${index[@]}" "scikit-build-core>=0.10" ||
  skip "pip could not install scikit-build-core (no package index reachable?)"
pip test install "${index[@]}" pytest || skip "pip could not install pytest (no package index reachable?)"

# From here on a failure is ours. scikit-build-core would pick Python's own compiler (sysconfig);
# the build's compiler lets ccache serve the build's objects.
start=$SECONDS
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
CXX=${cxx:-${CXX:-c++}} pip build wheel --no-build-isolation --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/cuoverlap-*.whl)
built=$((SECONDS - start))
pip test install "$wheel"
echo "python: built $(basename "$wheel") in ${built} s, holding:"
"$work/test/bin/python" -m zipfile -l "$wheel" | awk '$1 ~ /^cuoverlap\/(bin|lib)\// {print "  " $1}'
start=$SECONDS
"$work/test/bin/python" -m pytest -q -p no:cacheprovider tests/python
echo "python: tests ran in $((SECONDS - start)) s"
