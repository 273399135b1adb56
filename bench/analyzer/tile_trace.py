#!/usr/bin/env python3
"""tile_trace.py IN OUT COPIES: a large real-shaped trace from a small real one.

Copies every activity table of IN (a cuoverlap trace or Nsight Systems export) COPIES times into
OUT, each copy shifted in time past the one before (the run's span plus 1 ms) and with its
correlation, event and NVTX range ids offset, so that every copy keeps the original's calls, syncs,
events, NVTX ranges and names per op. docs/BENCHMARKS.md ("Real traces cost more per op") uses it
to time `analyze` and `export` on millions of real-shaped ops.
"""
import shutil
import sqlite3
import sys

TIMED = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
         "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
         "CUPTI_ACTIVITY_KIND_CUDA_EVENT", "NVTX_EVENTS"]
SHIFTED_TIMES = {"start", "end"}
SHIFTED_IDS = {"correlationId", "eventId", "eventSyncId", "rangeId"}


def main():
    source, target, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
    shutil.copyfile(source, target)
    db = sqlite3.connect(target)
    tables = [t for t in TIMED if db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (t,)).fetchone()]
    first, last, top_id = None, None, 0
    for table in tables:
        columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        lo, hi = db.execute(f"SELECT MIN(start), MAX({'end' if 'end' in columns else 'start'}) FROM {table} "
                            "WHERE start > 0").fetchone()
        if lo is not None:
            first = lo if first is None else min(first, lo)
            last = hi if last is None else max(last, hi)
        for column in SHIFTED_IDS & set(columns):
            top = db.execute(f"SELECT MAX({column}) FROM {table}").fetchone()[0] or 0
            top_id = max(top_id, top)
    period, id_step = (last - first) + 1_000_000, top_id + 1
    for table in tables:
        columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        select = []
        for c in columns:
            if c in SHIFTED_TIMES:
                select.append(f'CASE WHEN "{c}" > 0 THEN "{c}" + k.n * {period} ELSE "{c}" END')
            elif c in SHIFTED_IDS:
                select.append(f'CASE WHEN "{c}" IS NULL OR "{c}" = 0 THEN "{c}" ELSE "{c}" + k.n * {id_step} END')
            else:
                select.append(f'"{c}"')
        names = ", ".join(f'"{c}"' for c in columns)
        # Copy k of every row in one statement, in time order (copies follow one another).
        db.execute(f"CREATE TEMP TABLE original AS SELECT * FROM {table}")
        db.execute(f"WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < {copies - 1}) "
                   f"INSERT INTO {table} ({names}) SELECT {', '.join(select)} FROM k, original "
                   f"ORDER BY k.n, original.rowid")
        db.execute("DROP TABLE original")
    db.commit()
    for table in tables:
        print(table, db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    db.close()


if __name__ == "__main__":
    main()
