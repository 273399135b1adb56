#!/usr/bin/env python3
"""Trims the lead's 2-rank DDP/FSDP recordings (/work/traces, MANIFEST.md there) to a few steps,
and computes the communication metrics of each trimmed file independently of the analyzer (plain
Python over the SQLite rows), for tests/data/README.md and the golden test.

  trim_and_check.py trim SRC DST FIRST_STEP LAST_STEP   keep [start of 'step FIRST', start of 'step LAST')
  trim_and_check.py check FILE...                      communication per device, in ns

Files may be plain SQLite or gzip-compressed (.sqlite.gz, as tests/data stores them): a DST ending
in .gz is written compressed (scripts/lab_trace.py).

Trimming keeps every row whose start lies in the window (ops, runtime/driver calls, syncs, CUDA
event records, collector overhead) and the NVTX ranges that intersect it; other tables (strings,
devices, streams, contexts, session) are kept whole. The definition checked is docs/metrics.md,
"Communication": ops = kernel/memcpy/memset rows with start > 0 and end >= start; communication =
kernels whose demangled name starts with 'nccl'; busy = |U(comm)|, hidden = |U(comm) ∩ U(other
kernels)|.
"""
import os
import shutil
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
import lab_trace  # noqa: E402  (plain or gzip-compressed traces)


def step_start(db, step):
    row = db.execute("SELECT start FROM NVTX_EVENTS WHERE text = ? ORDER BY start LIMIT 1",
                     (f"step {step}",)).fetchone()
    if row is None:
        sys.exit(f"no NVTX range 'step {step}'")
    return row[0]


def trim(src, dst, first, last):
    plain_dst = dst[:-len(".gz")] if lab_trace.compressed(dst) else dst
    with lab_trace.plain(src) as source:
        shutil.copyfile(source, plain_dst)
    db = sqlite3.connect(plain_dst)
    t0, t1 = step_start(db, first), step_start(db, last)
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                  "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME",
                  "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
                  "PROFILER_OVERHEAD"):
        db.execute(f"DELETE FROM {table} WHERE start < ? OR start >= ?", (t0, t1))
    # NVTX: keep ranges that intersect the window, marks inside it, and domain/registration rows.
    db.execute("DELETE FROM NVTX_EVENTS WHERE start IS NOT NULL AND start > 0 AND "
               "(start >= ? OR COALESCE(NULLIF(end, 0), start) < ?)", (t1, t0))
    db.commit()
    db.execute("VACUUM")
    db.close()
    if plain_dst != dst:
        lab_trace.write_compressed(plain_dst, dst)
        os.unlink(plain_dst)
    print(f"{dst}: steps {first}..{last - 1}, window [{t0}, {t1})")


def union(intervals):
    merged = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def intersection_length(a, b):
    i = j = total = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, e - s)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def check(path):
    db = lab_trace.connect(path)
    rows = db.execute("SELECT k.deviceId, k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                      "JOIN StringIds s ON s.id = k.demangledName WHERE k.start > 0 AND k.end >= k.start")
    per_device = {}
    for device, start, end, name in rows:
        comm, other, count = per_device.setdefault(device, ([], [], [0]))
        bare = name[5:] if name.startswith("void ") else name
        if bare.startswith("nccl"):
            comm.append((start, end))
            count[0] += 1
        else:
            other.append((start, end))
    for device, (comm, other, count) in sorted(per_device.items()):
        u = union(comm)
        busy = sum(e - s for s, e in u)
        hidden = intersection_length(u, union(other))
        print(f"{path} device {device}: kernels {count[0]} busy_ns {busy} hidden_ns {hidden} "
              f"exposed_ns {busy - hidden}")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "trim":
        trim(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "check":
        for f in sys.argv[2:]:
            check(f)
    else:
        sys.exit(__doc__)
