#!/usr/bin/env python3
"""Trims a recorder pair (cuoverlap .sqlite + torch.profiler .kineto.json of the same program) to
the same training steps, for tests/data/kineto/.

usage: trim_pair.py SQLITE KINETO_JSON FIRST_STEP STEPS OUT_PREFIX

Steps are the intervals between the ends of consecutive cudaDeviceSynchronize calls (the
program synchronizes once per step; both recorders see the call). Kept: runtime/driver calls
that start in [end of sync FIRST_STEP, end of sync FIRST_STEP+STEPS), the GPU ops and syncs they
launched (same correlation id), NVTX/annotation ranges that start in the window, the strings
they use, and all metadata. Writes OUT_PREFIX.sqlite and OUT_PREFIX.kineto.json.gz (tests/data/kineto
stores the first gzip-compressed: `gzip -9 -n OUT_PREFIX.sqlite`). SQLITE may be either.
"""
import gzip
import json
import shutil
import sqlite3
import sys


def window(sync_ends, first, steps):
    ends = sorted(sync_ends)
    return ends[first], ends[first + steps]


def trim_sqlite(src, dst, first, steps):
    if src.endswith(".gz"):
        with gzip.open(src, "rb") as source, open(dst, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
    else:
        shutil.copyfile(src, dst)
    db = sqlite3.connect(dst)
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    calls = list(db.execute("SELECT start, end, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"))
    lo, hi = window([e for s, e, n in calls if names.get(n, "").startswith("cudaDeviceSynchronize")],
                    first, steps)
    db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start < ? OR start >= ?", (lo, hi))
    kept = "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME"
    for table in ("KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION", "CUDA_EVENT"):
        db.execute(f"DELETE FROM CUPTI_ACTIVITY_KIND_{table} WHERE correlationId NOT IN ({kept})")
    db.execute("DELETE FROM NVTX_EVENTS WHERE eventType != 75 AND (start < ? OR start >= ?)", (lo, hi))
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "PROFILER_OVERHEAD" in tables:
        db.execute("DELETE FROM PROFILER_OVERHEAD WHERE start < ? OR start >= ?", (lo, hi))
    used = []
    for table, column in (("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId"),
                          ("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName"),
                          ("CUPTI_ACTIVITY_KIND_KERNEL", "shortName"),
                          ("CUPTI_ACTIVITY_KIND_KERNEL", "mangledName"),
                          ("NVTX_EVENTS", "textId"), ("NVTX_EVENTS", "domainId")):
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")} if table in tables else set()
        if column in columns:
            used.append(f"SELECT {column} FROM {table}")
    db.execute(f"DELETE FROM StringIds WHERE id NOT IN ({' UNION '.join(used)})")
    db.commit()
    db.execute("VACUUM")
    db.close()


def trim_kineto(src, dst, first, steps):
    trace = json.load(open(src))
    events = trace["traceEvents"]
    calls = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    lo, hi = window([e["ts"] + e["dur"] for e in calls if e["name"] == "cudaDeviceSynchronize"],
                    first, steps)
    kept_calls = [e for e in calls if lo <= e["ts"] < hi]
    correlations = {e["args"]["correlation"] for e in kept_calls}
    kept = []
    for e in events:
        cat = e.get("cat")
        if e.get("ph") == "M":
            kept.append(e)
        elif cat in ("cuda_runtime", "cuda_driver"):
            if lo <= e["ts"] < hi:
                kept.append(e)
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"):
            if e.get("args", {}).get("correlation") in correlations:
                kept.append(e)
        elif cat in ("user_annotation", "gpu_user_annotation") and lo <= e["ts"] < hi:
            kept.append(e)
    trace["traceEvents"] = kept
    with gzip.open(dst, "wt") as out:
        json.dump(trace, out)


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    sqlite_path, kineto_path, first, steps, prefix = sys.argv[1:]
    trim_sqlite(sqlite_path, prefix + ".sqlite", int(first), int(steps))
    trim_kineto(kineto_path, prefix + ".kineto.json.gz", int(first), int(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
