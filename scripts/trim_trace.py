#!/usr/bin/env python3
"""Copy a cuoverlap/Nsight SQLite trace keeping only rows that start at or before a cutoff.

  trim_trace.py IN OUT --until-nvtx "step 4"    keep up to the end of that NVTX range
  trim_trace.py IN OUT --seconds 2.5            keep the first 2.5 s after the first GPU op

Every table with a `start` column loses its later rows; the copy is vacuumed. Used to make the
small framework traces in tests/data/frameworks (README.md there lists the exact commands).
"""
import argparse
import shutil
import sqlite3
import sys


def cutoff(db, args):
    if args.until_nvtx:
        row = db.execute(
            "SELECT MAX(n.end) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
            "WHERE COALESCE(n.text, s.value) = ?", (args.until_nvtx,)).fetchone()
        if row[0] is None:
            sys.exit(f"trim_trace: no NVTX range named {args.until_nvtx!r}")
        return row[0]
    first = db.execute("SELECT MIN(start) FROM (SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL "
                       "UNION ALL SELECT start FROM CUPTI_ACTIVITY_KIND_MEMCPY)").fetchone()[0]
    return first + int(args.seconds * 1e9)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--until-nvtx")
    parser.add_argument("--seconds", type=float)
    args = parser.parse_args()
    if (args.until_nvtx is None) == (args.seconds is None):
        sys.exit("trim_trace: give exactly one of --until-nvtx, --seconds")
    shutil.copyfile(args.input, args.output)
    db = sqlite3.connect(args.output)
    until = cutoff(db, args)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        columns = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
        if "start" in columns:
            db.execute(f'DELETE FROM "{table}" WHERE start > ?', (until,))
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main()
