#!/bin/sh
# run_if_gpu.sh PROBE CMD...: exit 77 (ctest: skipped) when PROBE finds no GPU, else run CMD.
probe=$1
shift
"$probe" || exit 77
exec "$@"
