#!/bin/sh
# GPU test (label gpu): `cuoverlap record` on a 2-rank torchrun DDP job with DataLoader workers
# that touch CUDA (torch_ddp_job.py), into one merged file and into one file per rank; the traces
# are checked by check_job_trace.py. Exits 77 (skipped) without python3 + torch + 2 GPUs.
# Usage: torchrun_test.sh PATH/TO/cuoverlap
set -u
cli=$1
here=$(cd "$(dirname "$0")" && pwd)
if ! python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.device_count() >= 2 else 1)' 2>/dev/null; then
  echo "torchrun test skipped: needs python3 with torch and 2 GPUs"
  exit 77
fi
dir=$(mktemp -d /tmp/cuoverlap_torchrun_XXXXXX)
job="python3 -m torch.distributed.run --standalone --nproc_per_node 2 $here/torch_ddp_job.py"
status=0

"$cli" record -o "$dir/ddp.sqlite" -- $job > "$dir/merged.log" 2>&1
rc=$?
cat "$dir/merged.log"
[ $rc -eq 0 ] || { echo "FAIL record (merged) exited $rc"; status=1; }
python3 "$here/check_job_trace.py" merged "$dir/ddp.sqlite" || status=1

"$cli" record -o "$dir/ddp-%r.sqlite" -- $job > "$dir/per_rank.log" 2>&1
rc=$?
cat "$dir/per_rank.log"
[ $rc -eq 0 ] || { echo "FAIL record (per rank) exited $rc"; status=1; }
python3 "$here/check_job_trace.py" per_rank "$dir" || status=1

echo "traces kept in $dir"
exit $status
