#!/usr/bin/env python3
"""Which asynchronous calls another thread's staged copy held in the driver (docs/findings.md,
pageable-memcpy's lab25-sh paragraph), over lab traces (`tests/data/lab/*.sqlite`, or the fixed
programs' own traces, /work/vtraces14/variants/*.sqlite).

  lab_call_holds.py TRACE.sqlite ...

A staged call: a cudaMemcpy or cudaMemcpyAsync of an HtoD or DtoH copy with pageable host memory.
For each non-pageable asynchronous call (cudaMemcpyAsync, cudaLaunchKernel, cudaMemsetAsync) that
began while a staged call of another thread of its process had at least 20 µs to go, it is held
if it returned no sooner than 3 µs before the last such call returned. One line per (the call's
stream: legacy, blocking, nonblk; the holders' streams: legacy-only, created-only, mixed): calls,
held, share, the held calls' median return after the holder's, the median time the holder had left.
"""
import bisect
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_trace  # noqa: E402  (plain or gzip-compressed traces)

STREAM = {3: "legacy", 2: "nonblk", 1: "blocking"}
ASYNC = ("cudaMemcpyAsync", "cudaLaunchKernel", "cudaMemsetAsync")


def calls_of(path):
    db = lab_trace.connect(path)
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    flags = dict(db.execute("SELECT streamId, flag FROM TARGET_INFO_CUDA_STREAM"))
    ops = {}
    for stream, corr, kind, src, dst in db.execute(
            "SELECT streamId, correlationId, copyKind, srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
        ops[corr] = (stream, kind, src == 0 or dst == 0)
    for table in ("CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_KERNEL"):
        for stream, corr in db.execute(f"SELECT streamId, correlationId FROM {table}"):
            ops[corr] = (stream, None, False)
    out = []
    for start, end, tid, corr, name in db.execute(
            "SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start"):
        op = ops.get(corr)
        if op is None:
            continue
        out.append((start, end, tid, names[name].split("_v")[0], STREAM.get(flags.get(op[0]), "?"), op[1], op[2]))
    db.close()
    return out


def main(paths):
    groups = collections.defaultdict(list)
    for path in paths:
        calls = calls_of(path)
        staged = sorted((s, e, tid, stream) for s, e, tid, name, stream, kind, pageable in calls
                        if pageable and kind in (1, 2) and name in ("cudaMemcpy", "cudaMemcpyAsync"))
        starts = [x[0] for x in staged]
        longest = max((x[1] - x[0] for x in staged), default=0)
        for s, e, tid, name, stream, kind, pageable in calls:
            if name not in ASYNC or pageable:
                continue
            lo, hi = bisect.bisect_left(starts, s - longest), bisect.bisect_left(starts, s)
            holders = [x for x in staged[lo:hi] if x[2] != tid and x[2] >> 24 == tid >> 24 and x[1] > s]
            if not holders or max(x[1] for x in holders) - s < 20_000:
                continue
            legacy = [x[3] == "legacy" for x in holders]
            cls = "legacy-only" if all(legacy) else "created-only" if not any(legacy) else "mixed"
            groups[(stream, cls)].append((e - max(x[1] for x in holders), max(x[1] for x in holders) - s))
    print(f"{'stream':9} {'holders':13} {'calls':>6} {'held':>6} {'share':>6} {'after µs':>9} {'left µs':>8}")
    for (stream, cls), rows in sorted(groups.items()):
        held = [a for a, _ in rows if a > -3_000]
        after = f"{statistics.median(held) / 1e3:9.1f}" if held else f"{'-':>9}"
        print(f"{stream:9} {cls:13} {len(rows):6} {len(held):6} {100 * len(held) / len(rows):5.0f}% {after} "
              f"{statistics.median(r for _, r in rows) / 1e3:8.1f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
