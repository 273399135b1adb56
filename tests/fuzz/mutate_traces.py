#!/usr/bin/env python3
"""Robustness fuzzing of the cuoverlap CLI (analyze, gate, export, diff) on mutated traces.

Writes mutated copies of real traces (truncations, byte flips, NULLs, wrong types, odd values,
missing tables, special files) and runs every command on each under `timeout 20`. A run passes when
it exits 0 or 1, or exits 2 with exactly one line on stderr, and prints no sanitizer report.
Not part of ctest (slow); the specific failures it found are regression tests in tests/analyzer/.

Also: unfinished traces (a -wal beside the file, a torn last frame), views and virtual tables in
place of tables, huge names, control characters in names, and outputs that are an input or a
symbolic link (which must be refused, leaving the input and the link's target unchanged).

Usage: tests/fuzz/mutate_traces.py CUOVERLAP_BINARY [--work DIR] [--seed N] [--quick]
       tests/fuzz/mutate_traces.py --corpus DIR [--quick]   # write the mutants only (fuzz seeds)
"""
import argparse
import concurrent.futures
import gzip
import hashlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
SHARED = os.path.normpath(os.path.join(HERE, "..", "data", "nsys"))
OP_TABLES = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
             "CUPTI_ACTIVITY_KIND_MEMSET"]
HOST_TABLES = ["CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS"]
TARGET_TABLES = ["TARGET_INFO_GPU", "TARGET_INFO_CUDA_STREAM", "TARGET_INFO_CUDA_CONTEXT_INFO",
                 "TARGET_INFO_CUDA_NULL_STREAM", "TARGET_INFO_CUDA_GPU", "StringIds"]
SANITIZER_MARKS = ("AddressSanitizer", "runtime error:", "LeakSanitizer", "UndefinedBehavior")


def real_traces(work):
    """The bundled traces as plain SQLite files: tests/data stores them gzip-compressed
    (NAME.sqlite.gz), inflated here into WORK/sources because the mutants are made with SQLite."""
    out = []
    plain_dir = os.path.join(work, "sources")
    os.makedirs(plain_dir, exist_ok=True)
    for folder in (DATA, SHARED):
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".sqlite"):
                out.append(os.path.join(folder, name))
            elif name.endswith(".sqlite.gz"):
                plain = os.path.join(plain_dir, name[:-len(".gz")])
                with gzip.open(os.path.join(folder, name), "rb") as src, open(plain, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                out.append(plain)
    return out


def tables_of(con):
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def columns_of(con, table):
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def sql_mutant(src, dst, statements):
    """A valid SQLite copy of src with statements applied (each may fail harmlessly)."""
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    for sql in statements:
        try:
            con.execute(sql)
        except sqlite3.Error:
            pass
    con.commit()
    con.close()
    return dst


def set_all(con_tables, con, value):
    """UPDATE every column of the trace tables to `value` (an SQL literal)."""
    out = []
    for table in con_tables:
        cols = columns_of(con, table)
        if cols:
            out.append(f'UPDATE "{table}" SET ' + ", ".join(f'"{c}" = {value}' for c in cols))
    return out


def retype(table, con, column_type, value):
    """Recreate `table` with every column of type `column_type` holding `value` in one row."""
    cols = columns_of(con, table)
    if not cols:
        return []
    decl = ", ".join(f'"{c}" {column_type}' for c in cols)
    return [f'DROP TABLE "{table}"', f'CREATE TABLE "{table}" ({decl})',
            f'INSERT INTO "{table}" VALUES ({", ".join([value] * len(cols))})']


def structured_mutants(src, work, tag):
    con = sqlite3.connect(src)
    present = tables_of(con)
    trace = [t for t in OP_TABLES + HOST_TABLES + TARGET_TABLES if t in present]
    ops = [t for t in OP_TABLES if t in present]
    timed = [t for t in OP_TABLES + HOST_TABLES if t in present]
    big = str(2 ** 62)
    cases = {
        "nulls": set_all(trace, con, "NULL"),
        "text": set_all(trace, con, "'abc'"),
        "real": set_all(trace, con, "1.5e300"),
        "blob": set_all(trace, con, "x'00ff'"),
        "negreal": set_all(trace, con, "-1e300"),
        "huge": [f'UPDATE "{t}" SET start = {big} + start % 1000, "end" = {big} + "end" % 1000 + 5'
                 for t in timed],
        "huge_end": [f'UPDATE "{t}" SET "end" = 9223372036854775807' for t in timed],
        "min_start": [f'UPDATE "{t}" SET start = -9223372036854775808' for t in timed],
        "negative": [f'UPDATE "{t}" SET start = -start, "end" = -"end"' for t in timed],
        "zero": [f'UPDATE "{t}" SET start = 0, "end" = 0' for t in timed],
        "end_before_start": [f'UPDATE "{t}" SET "end" = start - 1000' for t in timed],
        "start1_endmax": [f'UPDATE "{t}" SET start = 1, "end" = 9223372036854775807' for t in timed],
        "duplicates": [f'INSERT INTO "{t}" SELECT * FROM "{t}"' for t in timed],
        "no_strings": ["DELETE FROM StringIds"],
        "nvtx_pop_only": ["DELETE FROM NVTX_EVENTS WHERE rowid % 2 = 0",
                          "UPDATE NVTX_EVENTS SET \"end\" = NULL"],
        "nvtx_end_first": ['UPDATE NVTX_EVENTS SET "end" = start - 5'],
        "corr_nowhere": [f'UPDATE "{t}" SET correlationId = correlationId + 1000000007'
                         for t in ops],
        "corr_same": [f'UPDATE "{t}" SET correlationId = 1' for t in ops + HOST_TABLES[:1]],
        "no_targets": [f'DROP TABLE "{t}"' for t in TARGET_TABLES[:5]],
        "device_big": [f'UPDATE "{t}" SET deviceId = 70000 + deviceId' for t in ops] +
                      ["UPDATE TARGET_INFO_GPU SET id = 70000 + id",
                       "UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET deviceId = 70000"],
        "device_neg": [f'UPDATE "{t}" SET deviceId = -1' for t in ops],
        "gpu_inconsistent": ["UPDATE TARGET_INFO_GPU SET id = id + 7, smCount = 0",
                             "UPDATE TARGET_INFO_CUDA_CONTEXT_INFO SET deviceId = 99",
                             "UPDATE TARGET_INFO_CUDA_STREAM SET contextId = 12345"],
        "gpu_huge": ["UPDATE TARGET_INFO_GPU SET smCount = 2147483647, maxWarpsPerSm = 2147483647, "
                     "threadsPerWarp = 2147483647, maxBlocksPerSm = -1, maxShmemPerSm = "
                     "9223372036854775807, totalMemory = -1"],
        "gpu_zero": ["UPDATE TARGET_INFO_GPU SET smCount = 0, maxWarpsPerSm = 0, threadsPerWarp = 0, "
                     "maxBlocksPerSm = 0, maxRegistersPerSm = 0, maxShmemPerSm = 0"],
        "grid_zero": ["UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 0, blockX = 0"],
        "grid_huge": ["UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 2147483648, gridY = 2147483648,"
                      " blockX = 2147483648, staticSharedMemory = 9223372036854775807, "
                      "dynamicSharedMemory = 9223372036854775807, registersPerThread = 2147483648"],
        "grid_neg": ["UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = -5, blockX = -1, "
                     "staticSharedMemory = -9223372036854775808, dynamicSharedMemory = -1"],
        "bytes_huge": [f'UPDATE "{t}" SET bytes = 9223372036854775807' for t in OP_TABLES[1:]],
        "kinds_odd": ["UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 99, srcKind = -4, "
                      "dstKind = 2147483648", "UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET "
                      "syncType = 77", "UPDATE NVTX_EVENTS SET eventType = 59"],
        "stream_odd": [f'UPDATE "{t}" SET streamId = -1, contextId = -1' for t in ops] +
                      ["UPDATE TARGET_INFO_CUDA_STREAM SET flag = 9, priority = 9223372036854775807"],
        "pid_odd": [f'UPDATE "{t}" SET globalPid = -1' for t in ops] +
                   ['UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = -1'],
        "empty_ops": [f'DELETE FROM "{t}"' for t in ops],
        "only_strings": [f'DROP TABLE "{t}"' for t in present if t != "StringIds"],
        "session_odd": ["DROP TABLE CUOVERLAP_SESSION",
                        "CREATE TABLE CUOVERLAP_SESSION (key INTEGER, value BLOB)",
                        "INSERT INTO CUOVERLAP_SESSION VALUES (NULL, x'00'), (5, NULL)"],
        "nvtx_text_odd": ["UPDATE NVTX_EVENTS SET textId = NULL, text = x'ff00fe'",
                          "UPDATE StringIds SET value = '<script>alert(1)</script>\"&' || id"],
        "strings_binary": ["UPDATE StringIds SET value = CAST(x'ff00c3' AS TEXT)"],
        "view_tables": ["ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO k0",
                        "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k0 WHERE 1/0"],
        "recursive_view": ["DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL",
                           "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE r(n) AS "
                           "(SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n AS start, n + 1 AS "
                           "end, 0 AS deviceId FROM r"],
        "big_view": ["DROP TABLE StringIds",
                     "CREATE VIEW StringIds AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT "
                     "n + 1 FROM r WHERE n < 30000000) SELECT n AS id, 'x' AS value FROM r"],
        "lowercase_view": ["ALTER TABLE NVTX_EVENTS RENAME TO n0",
                           "CREATE VIEW nvtx_events AS SELECT * FROM n0"],
        "virtual_table": ["DROP TABLE StringIds", "CREATE VIRTUAL TABLE StringIds USING fts4(id, value)",
                          "INSERT INTO StringIds VALUES (1, 'k')"],
        "huge_names": ["UPDATE StringIds SET value = printf('%.*c', 1048576, 'n') || id "
                       "WHERE id IN (SELECT id FROM StringIds LIMIT 3)"],
        "too_long_name": ["UPDATE StringIds SET value = printf('%.*c', 17000000, 'x') "
                          "WHERE id = (SELECT min(id) FROM StringIds)"],
        "control_chars": ["UPDATE StringIds SET value = char(27) || ']0;pwned' || char(7) || "
                          "char(13) || '[info] all good ' || char(8238) || char(133) || "
                          "' https://evil.example www.evil.example a@b.example ' || "
                          "CAST(x'ff' AS TEXT) || char(65534) || value",
                          "UPDATE TARGET_INFO_GPU SET name = char(27) || '[2J' || name"],
    }
    for table in trace:
        cases[f"typed_text_{table}"] = retype(table, con, "TEXT", "'x'")
        cases[f"untyped_text_{table}"] = retype(table, con, "", "'x'")
        cases[f"untyped_real_{table}"] = retype(table, con, "", "2.5")
        cases[f"blob_{table}"] = retype(table, con, "BLOB", "x'01'")
    con.close()
    out = []
    for name, statements in cases.items():
        if statements:
            out.append(sql_mutant(src, os.path.join(work, f"{tag}.{name}.sqlite"), statements))
    return out


def wal_mutants(src, work, tag):
    """What a killed program leaves: later commits only in a -wal beside the file (copied while
    the writer is still connected), and the same with a torn last frame."""
    live = os.path.join(work, f"{tag}.live.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(live + suffix):
            os.remove(live + suffix)
    shutil.copyfile(src, live)
    con = sqlite3.connect(live, isolation_level=None)
    out = []
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA wal_autocheckpoint=0")
        try:
            con.execute("DELETE FROM CUOVERLAP_SESSION WHERE key = 'complete'")
        except sqlite3.Error:
            pass
        for table in OP_TABLES + HOST_TABLES:
            try:
                con.execute(f'INSERT INTO "{table}" SELECT * FROM "{table}" LIMIT 50')
            except sqlite3.Error:
                pass
        for name, torn in (("wal", False), ("wal_torn", True)):
            dst = os.path.join(work, f"{tag}.{name}.sqlite")
            for suffix in ("", "-wal"):
                if os.path.exists(dst + suffix):
                    os.remove(dst + suffix)
            shutil.copyfile(live, dst)
            shutil.copyfile(live + "-wal", dst + "-wal")
            if torn:
                with open(dst + "-wal", "ab") as wal:
                    wal.write(b"\x5a" * 3000)
            out.append(dst)
    finally:
        con.close()
    return out


def byte_mutants(src, work, tag, rng, count):
    data = open(src, "rb").read()
    out = []
    offsets = sorted({0, 1, 16, 99, 100, 512, 4096, len(data) // 3, len(data) // 2,
                      len(data) - 1, len(data) - 4096} | {rng.randrange(len(data)) for _ in range(count)})
    for off in offsets:
        if 0 <= off < len(data):
            path = os.path.join(work, f"{tag}.trunc{off}.sqlite")
            open(path, "wb").write(data[:off])
            out.append(path)
    for i in range(count):
        buf = bytearray(data)
        for _ in range(rng.choice([1, 4, 32])):
            pos = rng.randrange(100, len(buf))  # page data, past the 100-byte header
            buf[pos] = rng.randrange(256)
        path = os.path.join(work, f"{tag}.flip{i}.sqlite")
        open(path, "wb").write(bytes(buf))
        out.append(path)
    return out


def special_inputs(work):
    empty = os.path.join(work, "zero_bytes.sqlite")
    open(empty, "wb").close()
    folder = os.path.join(work, "a_directory.sqlite")
    os.makedirs(folder, exist_ok=True)
    fifo = os.path.join(work, "a_fifo.sqlite")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    return [empty, folder, fifo, os.path.join(work, "missing.sqlite"), "/dev/null"]


def first_range_name(path):
    """The text of the trace's first NVTX range, for --range runs (None when there is none)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        con.text_factory = lambda raw: raw.decode("utf-8", "replace")  # mutants hold any bytes
        row = con.execute("SELECT COALESCE(s.value, e.text) FROM NVTX_EVENTS e LEFT JOIN StringIds s "
                          "ON s.id = e.textId WHERE e.eventType IN (59, 60) LIMIT 1").fetchone()
        con.close()
        return row[0] if row and isinstance(row[0], str) else None
    except (sqlite3.Error, ValueError):
        return None


def range_commands(binary, path, name):
    return [[binary, "analyze", path, "--range", name, "--format", fmt] for fmt in ("text", "json")] + [
        [binary, "gate", path, "--range", name, "--min-overlap", "0.1"],
        [binary, "analyze", path, "--range", name, "--window", "1:9000000000000000000", "--format",
         "markdown"]]


def commands(binary, path, other, work):
    out = os.path.join(work, "out")
    return [
        [binary, "analyze", path, "--format", "text"],
        [binary, "analyze", path, "--format", "json"],
        [binary, "analyze", path, "--format", "markdown"],
        [binary, "analyze", path, "--format", "html", "-o", out + ".html", "--force"],
        [binary, "gate", path, "--min-overlap", "0.1", "--max-idle-fraction", "0.9",
         "--fail-on", "single-stream", "--junit", out + ".xml", "--force"],
        [binary, "export", path, "--format", "perfetto", "-o", out + ".json", "--force"],
        [binary, "diff", other, path],
        [binary, "diff", path, other, "--format", "json"],
    ]


ODD_OPTIONS = [
    ["--range", ""], ["--range", "no such range"], ["--window", "5:1"], ["--window", "1e99s:2e99s"],
    ["--window", ":"], ["--window", "-5ms:3ms"], ["--window", "0:9223372036854775807"],
    ["--window", "1e99s"], ["--window", "nan:inf"], ["--window", "1ms:"],
    ["--gap-threshold", "-1"], ["--gap-threshold", "1e99s"], ["--gap-threshold", "0"],
    ["--gap-threshold", "nan"], ["--gap-threshold", "inf"], ["--gap-threshold", "-1e99ms"],
    ["--gap-threshold", "18446744073709551616"], ["--device", "-1"], ["--device", "65536"],
    ["--pid", "-1"], ["--pid", "99999999999"], ["--gap-threshold", "."], ["--window", ".:1"],
    ["--gap-threshold", "99999999999999999999s"], ["--gap-threshold", "1" * 400],
    ["--window", "0:99999999999999999999s"], ["--range", "\x1b[31m<b>"],
]


def odd_option_commands(binary, path):
    out = [[binary, "analyze", path, "--format", fmt] + opt
           for opt in ODD_OPTIONS for fmt in ("text", "json")]
    out += [[binary, "gate", path, "--min-overlap", v] for v in ("-1", "nan", "1e99", "200%", "x")]
    out += [[binary, "gate", path, "--range", "", "--min-overlap", "0.1"]]
    out += [[binary, "gate", path, "--fail-on", ",,,"]]
    out += [[binary, "diff", path, path, "--fail-on-overlap-drop", v] for v in ("-1", "nan", "1e99")]
    return out


def run_one(cmd):
    try:
        p = subprocess.run(["timeout", "20"] + cmd, capture_output=True, text=True, errors="replace",
                           stdin=subprocess.DEVNULL)
    except OSError as e:
        return cmd, f"could not run: {e}"
    err = p.stderr
    problem = None
    if any(mark in err for mark in SANITIZER_MARKS):
        problem = "sanitizer report"
    elif p.returncode == 124:
        problem = "hang (timeout 20)"
    elif p.returncode not in (0, 1, 2):
        problem = f"exit {p.returncode}"
    elif p.returncode == 2 and err.count("\n") != 1:
        problem = f"exit 2 with {err.count(chr(10))} stderr lines"
    if problem:
        return cmd, problem + "\n    " + "\n    ".join(err.strip().splitlines()[:12])
    return cmd, None


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def output_safety_failures(binary, source, work):
    """Outputs that are the input or a symbolic link must be refused (exit 2), leaving the input
    and the link's target byte for byte unchanged."""
    trace = os.path.join(work, "safety_input.sqlite")
    shutil.copyfile(source, trace)
    victim = os.path.join(work, "safety_victim.txt")
    with open(victim, "w") as f:
        f.write("precious")
    link = os.path.join(work, "safety_link.out")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(victim, link)
    runs = [
        ([binary, "analyze", trace, "-o", trace], trace),
        ([binary, "analyze", trace, "-o", trace, "--force"], trace),
        ([binary, "export", trace, "-o", trace, "--force"], trace),
        ([binary, "diff", trace, trace, "-o", trace, "--force"], trace),
        ([binary, "gate", trace, "--min-overlap", "0", "--junit", trace, "--force"], trace),
        ([binary, "analyze", trace, "-o", link], victim),
        ([binary, "export", trace, "-o", link], victim),
        ([binary, "gate", trace, "--min-overlap", "0", "--junit", link], victim),
    ]
    failures = []
    for cmd, guarded in runs:
        before = digest(guarded)
        p = subprocess.run(["timeout", "20"] + cmd, capture_output=True, text=True, errors="replace")
        if p.returncode != 2 or p.stderr.count("\n") != 1 or digest(guarded) != before:
            failures.append(f"{' '.join(cmd[1:])} -> exit {p.returncode}, "
                            f"{'changed' if digest(guarded) != before else 'unchanged'} {guarded}")
    return failures


def write_corpus(directory, sources, rng, flips):
    """Mutants as seeds for the libFuzzer target (scripts/fuzz.sh); large ones are left out."""
    os.makedirs(directory, exist_ok=True)
    work = os.path.join(directory, ".work")
    os.makedirs(work, exist_ok=True)
    made = list(sources)
    for i, src in enumerate(sources):
        tag = f"t{i}_{os.path.basename(src)[:-7]}"
        made += structured_mutants(src, work, tag) + byte_mutants(src, work, tag, rng, flips)
    count = 0
    for path in made:
        if os.path.isfile(path) and 0 < os.path.getsize(path) <= 2 * 1024 * 1024:
            shutil.copyfile(path, os.path.join(directory, f"seed{count:04d}.sqlite"))
            count += 1
    shutil.rmtree(work)
    print(f"wrote {count} seeds to {directory}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("binary", nargs="?")
    ap.add_argument("--corpus", help="write the mutants to this folder (fuzz seeds) and exit")
    ap.add_argument("--work", default="/tmp/cuoverlap_fuzz")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--flips", type=int, default=6, help="byte-flip copies per trace")
    ap.add_argument("--quick", action="store_true", help="two source traces only")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.work, exist_ok=True)
    sources = real_traces(args.work)
    if not sources:
        sys.exit("no traces found under tests/data or tests/data/nsys")
    if args.corpus:
        write_corpus(args.corpus, sources[:2] if args.quick else sources, rng, args.flips)
        return
    if not args.binary:
        ap.error("CUOVERLAP_BINARY is required (unless --corpus)")
    good = sources[0]
    structured_sources = sources[:2] if args.quick else sources
    inputs = list(sources) + special_inputs(args.work)
    for i, src in enumerate(structured_sources):
        tag = f"t{i}_{os.path.basename(src)[:-7]}"
        inputs += structured_mutants(src, args.work, tag)
        inputs += byte_mutants(src, args.work, tag, rng, args.flips)
        inputs += wal_mutants(src, args.work, tag)
    cmds = [c for path in inputs for c in commands(args.binary, path, good, args.work)]
    for path in inputs:
        name = first_range_name(path) if os.path.isfile(path) and os.path.getsize(path) else None
        if name is not None:
            cmds += range_commands(args.binary, path, name)
    cmds += [c for src in sources[:3] for c in odd_option_commands(args.binary, src)]
    print(f"{len(inputs)} inputs, {len(cmds)} runs", flush=True)
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for cmd, problem in pool.map(run_one, cmds):
            if problem:
                failures += 1
                print("FAIL:", " ".join(cmd[1:]), "->", problem, flush=True)
    for problem in output_safety_failures(args.binary, good, args.work):
        failures += 1
        print("FAIL (output safety):", problem, flush=True)
    print(f"{failures} failures in {len(cmds)} runs")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
