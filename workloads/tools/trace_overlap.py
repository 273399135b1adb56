#!/usr/bin/env python3
"""Quick overlap numbers for a recorded trace (our SQLite schema or an nsys export), used to
calibrate workloads/streams/scenarios.json before the analyzer exists on the GPU machine:
overlap_ratio = 1 - busy/sum, copy_hidden_fraction = |union(copies) & union(kernels)| / |union(copies)|.
Usage: trace_overlap.py TRACE.sqlite..."""
import os
import sqlite3
import sys


def union(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def length(intervals):
    return sum(end - start for start, end in intervals)


def intersection(a, b):
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def rows(db, table):
    try:
        return [(s, e, st) for s, e, st in db.execute(f"SELECT start, end, streamId FROM {table}")]
    except sqlite3.Error:
        return []


def main(paths):
    for path in paths:
        db = sqlite3.connect(path)
        kernels = rows(db, "CUPTI_ACTIVITY_KIND_KERNEL")
        copies = rows(db, "CUPTI_ACTIVITY_KIND_MEMCPY")
        memsets = rows(db, "CUPTI_ACTIVITY_KIND_MEMSET")
        ops = [(s, e) for s, e, _ in kernels + copies + memsets]
        total = sum(e - s for s, e in ops)
        busy = length(union(ops))
        copy_union = union([(s, e) for s, e, _ in copies])
        hidden = intersection(copy_union, union([(s, e) for s, e, _ in kernels]))
        streams = sorted({st for _, _, st in kernels + copies + memsets})
        print(f"{os.path.basename(path)}: {len(kernels)} kernels, {len(copies)} copies, {len(memsets)} memsets, "
              f"streams {streams}, overlap_ratio {1 - busy / total if total else 0:.3f}, "
              f"copy_hidden {hidden / length(copy_union) if copy_union else 0:.3f}, "
              f"{os.path.getsize(path) / 1e6:.2f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
