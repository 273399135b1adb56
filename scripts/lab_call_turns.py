#!/usr/bin/env python3
"""How long small pinned cudaMemcpyAsync calls take beside other threads' calls (docs/findings.md,
blocking-sync-call's lab25-g9 paragraph), over lab traces (`tests/data/lab/*.sqlite`, or the fixed
programs' own traces).

  lab_call_turns.py TRACE.sqlite ...

For each cudaMemcpyAsync of at most 64 KiB from or to pinned memory: alone (no other thread of its
process was inside a cudaMemcpy, cudaMemcpyAsync or cudaLaunchKernel call with a non-pageable op
for 2 µs or more past its start), or beside another thread's call to the legacy stream, to
created streams only, or both. One line per (the call's stream, that class): count and the
call's median, 75th and 90th percentile duration in µs.
"""
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_trace  # noqa: E402  (plain or gzip-compressed traces)

STREAM = {3: "legacy", 2: "nonblk", 1: "blocking"}


def main(paths):
    res = collections.defaultdict(list)
    for path in paths:
        db = lab_trace.connect(path)
        names = dict(db.execute("SELECT id, value FROM StringIds"))
        flags = dict(db.execute("SELECT streamId, flag FROM TARGET_INFO_CUDA_STREAM"))
        ops = {}
        for stream, corr, src, dst, size in db.execute(
                "SELECT streamId, correlationId, srcKind, dstKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
            ops[corr] = (STREAM.get(flags.get(stream), "?"), "copy", src == 0 or dst == 0, size)
        for stream, corr in db.execute("SELECT streamId, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL"):
            ops[corr] = (STREAM.get(flags.get(stream), "?"), "kernel", False, 0)
        byproc = collections.defaultdict(list)
        for start, end, tid, corr, name in db.execute(
                "SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start"):
            op = ops.get(corr)
            name = names[name].split("_v")[0]
            if op and not op[2] and name in ("cudaMemcpyAsync", "cudaLaunchKernel", "cudaMemcpy"):
                byproc[tid >> 24].append((start, end, tid, name, op))
        db.close()
        for calls in byproc.values():
            longest = max(e - s for s, e, *_ in calls)
            for i, (start, end, tid, name, op) in enumerate(calls):
                if name != "cudaMemcpyAsync" or op[1] != "copy" or op[3] > 65536:
                    continue
                others = set()
                j = i - 1
                while j >= 0 and calls[j][0] >= start - longest:
                    o = calls[j]
                    if o[2] != tid and o[1] > start + 2000:
                        others.add(o[4][0])
                    j -= 1
                key = ("alone" if not others else "beside legacy" if others == {"legacy"}
                       else "beside created" if "legacy" not in others else "beside both")
                res[(op[0], key)].append((end - start) / 1e3)
    for (stream, key), v in sorted(res.items()):
        v.sort()
        print(f"{stream:8} {key:15} n={len(v):5} median {statistics.median(v):6.1f} "
              f"p75 {v[int(.75 * len(v))]:6.1f} p90 {v[int(.9 * len(v))]:6.1f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
