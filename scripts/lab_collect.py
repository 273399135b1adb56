#!/usr/bin/env python3
"""Recorded lab batches -> a lab corpus: manifest.json, trimmed traces, the programs (docs/lab.md).

  lab_collect.py OUT_DIR --batch TRACE.sqlite PROGRAMS.jsonl RESULTS.jsonl [--batch ...]
                 [--machine TEXT] [--date ISO] [--windows K]

Each batch is one `cuoverlap record` of `cuoverlap-lab run PROGRAMS.jsonl --results RESULTS.jsonl`.
For every NVTX range `lab ID VARIANT #REP` the run's measured span is (last GPU op end - first GPU
op start) over the kernels, copies and memsets that lie inside the range (GPU and NVTX timestamps
share one clock in our traces): the device span the analyzer reports and prices, so unified-memory
migrations (MEMCPY rows of copyKind 11-13, which the analyzer reads as unified-memory activity, not
ops) do not count; a host read's migration after the last kernel would otherwise lengthen the span. Per program: the baseline's spans, their median and the window
(NVTX range) of the kept rep, the one whose span is the median (the lower middle of an even count);
per transform its spans and median. Runs that failed in the results, or whose range holds no GPU op,
are listed under "failed" and left out; a program without one good baseline run is left out.

--windows K (default 1) keeps K baseline runs instead of one: the baseline also gets `windows_ns`,
the windows of the K runs whose spans are nearest the median span (the kept run first, then by
distance from its span, then by rep; all runs where there are fewer than K), and `windows_reps`,
their reps. `cuoverlap lab score` then judges each case by the median of those runs' claims
(docs/lab.md, "Twenty-first session: the kept run"). With K = 1 the manifest is today's.

OUT_DIR/BATCH.sqlite (BATCH.sqlite.gz with --compress: scripts/lab_trace.py) is the batch's trace trimmed to the kept baseline windows (K a program): every row of a
table with a `start` column (GPU ops, runtime calls, NVTX, ...) outside them is deleted (the
lab's setup, warm-up and the other runs; GPU_METRICS by its timestamp), other tables (StringIds, TARGET_INFO_*, sessions) are
kept (TARGET_INFO_CUDA_STREAM: the streams a kept op uses; CUOVERLAP_STREAM_ORIGIN: their rows and
those that share a correlation id with one; CUOVERLAP_OP_BUFFERS: the rows of the calls kept;
CUDA_GPU_MEMORY_USAGE_EVENTS: every allocation that lived in one and its free), and the file is vacuumed. OUT_DIR/programs.jsonl.gz holds every batch's corpus lines.

--variant-traces DIR also keeps what every variant (the fixed programs) did: DIR/BATCH.sqlite is the
batch's trace trimmed to the kept run of each program's baseline and each of its variants (the run
whose span is the median, as above), and DIR/index.json maps each program to its trace and, per
variant, that run's window, rep and span. Diagnosis material (scripts/lab_variant_ops.py shows it):
what a fix changed on the GPU, op by op, next to what the what-if predicted.
"""
import argparse
import bisect
import datetime
import gzip
import json
import multiprocessing
import os
import re
import shutil
import sqlite3
import statistics
import sys

import lab_manifest
import lab_trace

RANGE = re.compile(r"^lab (\S+) (\S+) #(\d+)$")
EVENT_TABLE = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
STREAM_TABLE = "TARGET_INFO_CUDA_STREAM"
STREAM_ORIGIN_TABLE = "CUOVERLAP_STREAM_ORIGIN"  # per stream: its record's creating call (ours)
OP_BUFFERS_TABLE = "CUOVERLAP_OP_BUFFERS"  # the memory each op touched, by correlation id (ours)
MEMORY_TABLE = "CUDA_GPU_MEMORY_USAGE_EVENTS"  # allocations and frees (nsys's table)
GPU_METRICS_TABLE = "GPU_METRICS"  # samples of record --gpu-metrics, kept inside the windows
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
# Unified-memory migrations in the MEMCPY table (the analyzer's kUnifiedMemoryCopies): not ops.
UNIFIED_MEMORY_COPY_KINDS = (11, 12, 13)


def tables(db):
    return [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]


def lab_ranges(db):
    """{(id, variant, rep): (start, end)} of the NVTX ranges the interpreter pushed."""
    has_strings = "StringIds" in tables(db)
    text = "COALESCE(n.text, s.value)" if has_strings else "n.text"
    join = "LEFT JOIN StringIds s ON s.id = n.textId" if has_strings else ""
    ranges = {}
    for start, end, name in db.execute(
            f"SELECT n.start, n.end, {text} FROM NVTX_EVENTS n {join} WHERE n.end IS NOT NULL"):
        match = RANGE.match(name or "")
        if match:
            ranges[(match.group(1), match.group(2), int(match.group(3)))] = (start, end)
    return ranges


def gpu_ops(db):
    """(starts, ends) of every kernel, copy and memset, sorted by start; unified-memory migrations are
    not ops."""
    present = set(tables(db))
    ops = []
    for table in GPU_TABLES:
        if table not in present:
            continue
        where = "end IS NOT NULL"
        columns = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
        if table == "CUPTI_ACTIVITY_KIND_MEMCPY" and "copyKind" in columns:
            kinds = ", ".join(str(k) for k in UNIFIED_MEMORY_COPY_KINDS)
            where += f" AND coalesce(copyKind, 0) NOT IN ({kinds})"
        ops += db.execute(f'SELECT start, end FROM "{table}" WHERE {where}').fetchall()
    ops.sort()
    return [s for s, _ in ops], [e for _, e in ops]


def span_in(starts, ends, window):
    """(first start, last end) of the ops inside window, or None."""
    lo, hi = window
    first, last = None, None
    i = bisect.bisect_left(starts, lo)
    while i < len(starts) and starts[i] <= hi:
        if ends[i] <= hi:
            first = starts[i] if first is None else first
            last = ends[i] if last is None else max(last, ends[i])
        i += 1
    return None if first is None else (first, last)


def read_jsonl(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def finding_of(line, variant):
    """The finding id a transform carries out (a list where its fix answers several, as drop-wait
    does when it drops waits of both kinds), when the corpus line names one."""
    def named(value):
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return value
        return None

    for key in ("findings", "finding"):
        table = line.get(key)
        if isinstance(table, dict) and named(table.get(variant)) is not None:
            return named(table[variant])
    program = line.get("variants", {}).get(variant, {})
    for key in ("finding", "_finding"):
        if named(program.get(key)) is not None:
            return named(program[key])
    return None


def median_run(runs):
    """The run (span, rep, window) whose span is the median: the lower middle of an even count."""
    ordered = sorted(runs)
    return ordered[(len(ordered) - 1) // 2]


def nearest_runs(runs, count):
    """The median run and the count - 1 runs whose spans are nearest its span (ties: the lower
    rep), the median run first; every run where there are fewer."""
    kept = median_run(runs)
    others = sorted((r for r in runs if r is not kept), key=lambda r: (abs(r[0] - kept[0]), r[1]))
    return [kept] + others[:count - 1]


def kept_windows(entry):
    """The baseline windows a manifest entry keeps in its trace: windows_ns where it has several,
    else window_ns (what a trim must keep; lab_merge.py trims again with them)."""
    baseline = entry["baseline"]
    return [tuple(window) for window in baseline.get("windows_ns", [baseline["window_ns"]])]


def collect_batch(trace, programs, results, failed, window_count=1):
    """Manifest entries of one batch, the kept baseline windows (window_count a program: the
    median run and the runs nearest it), and {id: {variant: kept run}}."""
    db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
    ranges = lab_ranges(db)
    starts, ends = gpu_ops(db)
    db.close()
    outcome = {(r["id"], r["variant"], r["rep"]): r for r in results}
    entries, windows, kept_runs = [], [], {}
    for line in programs:
        pid = line["id"]
        runs = {}  # variant -> [(span, rep, window)]
        for (rid, variant, rep), window in sorted(ranges.items()):
            if rid != pid:
                continue
            result = outcome.get((rid, variant, rep))
            reason = None
            if result is not None and not result.get("ok", True):
                reason = result.get("error", "failed")
            span = span_in(starts, ends, window)
            if reason is None and span is None:
                reason = "no GPU op inside the range"
            if reason:
                failed.append({"id": pid, "variant": variant, "rep": rep, "reason": reason})
                continue
            runs.setdefault(variant, []).append((span[1] - span[0], rep, window))
        for (rid, variant, rep), result in sorted(outcome.items()):
            if rid == pid and (rid, variant, rep) not in ranges:
                failed.append({"id": pid, "variant": variant, "rep": rep,
                               "reason": result.get("error", "no NVTX range in the trace")})
        if "baseline" not in runs:
            failed.append({"id": pid, "variant": "baseline", "reason": "no good baseline run: program left out"})
            continue
        kept = median_run(runs["baseline"])
        kept_runs[pid] = {variant: median_run(variant_runs) for variant, variant_runs in runs.items()}
        nearest = nearest_runs(runs["baseline"], window_count)
        windows += [window for _, _, window in nearest]
        entry = {"id": pid, "seed": line.get("seed"), "shape": line.get("shape"),
                 "trace": os.path.basename(trace),
                 "baseline": {"window_ns": list(kept[2]), "kept_rep": kept[1],
                              "spans_ns": [s for s, _, _ in sorted(runs["baseline"], key=lambda r: r[1])],
                              "median_ns": round(statistics.median(s for s, _, _ in runs["baseline"]))},
                 "variants": {}}
        if window_count > 1:
            entry["baseline"]["windows_ns"] = [list(window) for _, _, window in nearest]
            entry["baseline"]["windows_reps"] = [rep for _, rep, _ in nearest]
        for variant in line.get("variants", {}):
            if variant == "baseline" or variant not in runs:
                continue
            spans = [s for s, _, _ in sorted(runs[variant], key=lambda r: r[1])]
            entry["variants"][variant] = {"finding": finding_of(line, variant), "spans_ns": spans,
                                          "median_ns": round(statistics.median(spans))}
        entries.append(entry)
    return entries, windows, kept_runs


def disjoint(windows):
    """The union of [start, end) windows as sorted, disjoint [start, end) intervals."""
    merged = []
    for lo, hi in sorted(windows):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [tuple(interval) for interval in merged]


def trim(trace, out, windows, compress=None):
    """Copy trace to out keeping only rows that start inside one of windows ([start, end)).
    CUDA event records carry no timestamp (start 0): they stay when the runtime call that recorded
    them (same correlation id and process) stays. trace may be gzip-compressed (.gz); out is
    written compressed when compress is true (default: when its name ends in .gz)."""
    compress = lab_trace.compressed(out) if compress is None else compress
    with lab_trace.plain(trace) as source:
        if not compress:
            trim_plain(source, out, windows)
            return
        work = out + ".plain.tmp"
        try:
            trim_plain(source, work, windows)
            lab_trace.write_compressed(work, out)
        finally:
            if os.path.exists(work):
                os.remove(work)


def live_allocations(db, intervals):
    """Rowids of MEMORY_TABLE's allocations that lived during one of intervals (sorted, disjoint
    [start, end)), from the allocation to the free of its (process, address), and of those frees."""
    live, open_ = [], {}
    starts = [lo for lo, _ in intervals]
    rows = db.execute(f"SELECT rowid, start, globalPid, address, memoryOperationType FROM {MEMORY_TABLE} "
                      "ORDER BY start, rowid").fetchall()

    def overlaps(since, until):
        k = bisect.bisect_left(starts, until) - 1  # the last interval starting before `until`
        return k >= 0 and intervals[k][1] > since

    for rowid, start, pid, address, operation in rows:
        key = (pid, address)
        if operation == 0:
            if key in open_:  # no free recorded between two allocations of one address
                live.append(open_.pop(key)[0])
            open_[key] = (rowid, start)
        elif key in open_:
            alloc, since = open_.pop(key)
            if overlaps(since, start):
                live += [alloc, rowid]
    live.extend(alloc for alloc, since in open_.values() if overlaps(since, float("inf")))
    return live


def trim_plain(trace, out, windows):
    """trim() between plain SQLite files."""
    shutil.copyfile(trace, out)
    db = sqlite3.connect(out)
    # The windows' union as disjoint intervals keyed by their start: a row is kept when the last
    # interval starting at or before it has not ended yet, one index lookup a row (a scan of every
    # window per row took minutes a batch with five windows a program).
    db.execute("CREATE TEMP TABLE lab_keep (lo INTEGER PRIMARY KEY, hi INTEGER NOT NULL)")
    db.executemany("INSERT INTO lab_keep VALUES (?, ?)", disjoint(windows))
    present = tables(db)
    if MEMORY_TABLE in present:
        # The allocations that lived in a window are its allocator's state: kept, made before it
        # or not.
        db.execute("CREATE TEMP TABLE lab_alloc (id INTEGER PRIMARY KEY)")
        db.executemany("INSERT INTO lab_alloc VALUES (?)", [(r,) for r in live_allocations(db, disjoint(windows))])
    for table in present:
        columns = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
        if table == EVENT_TABLE:
            continue
        # GPU_METRICS (record --gpu-metrics) has its time in `timestamp`.
        time = "start" if "start" in columns else "timestamp" if table == GPU_METRICS_TABLE else None
        if time is not None:
            # No interval at or before the row (or a NULL start): coalesce yields the start itself.
            spared = " AND rowid NOT IN (SELECT id FROM lab_alloc)" if table == MEMORY_TABLE else ""
            db.execute(f'DELETE FROM "{table}" WHERE ("{table}".{time} IS NULL OR "{table}".{time} >= '
                       f'coalesce((SELECT k.hi FROM lab_keep k WHERE k.lo <= "{table}".{time} '
                       f'ORDER BY k.lo DESC LIMIT 1), "{table}".{time})){spared}')
    if EVENT_TABLE in present:
        if RUNTIME_TABLE in present:
            db.execute(f'DELETE FROM {EVENT_TABLE} WHERE NOT EXISTS (SELECT 1 FROM {RUNTIME_TABLE} r '
                       f'WHERE r.correlationId = {EVENT_TABLE}.correlationId '
                       f'AND r.globalTid / 16777216 = {EVENT_TABLE}.globalPid / 16777216)')
        else:
            db.execute(f"DELETE FROM {EVENT_TABLE}")
    if OP_BUFFERS_TABLE in present:
        # The memory each op touched (CUOVERLAP_OP_BUFFERS) has no time: the rows of the calls kept.
        if RUNTIME_TABLE in present:
            db.execute("CREATE TEMP TABLE lab_calls (pid INTEGER, correlationId INTEGER, "
                       "PRIMARY KEY (pid, correlationId))")
            db.execute(f"INSERT OR IGNORE INTO lab_calls SELECT globalTid / 16777216, correlationId "
                       f"FROM {RUNTIME_TABLE}")
            db.execute(f"DELETE FROM {OP_BUFFERS_TABLE} WHERE NOT EXISTS (SELECT 1 FROM lab_calls c "
                       f"WHERE c.pid = {OP_BUFFERS_TABLE}.globalPid / 16777216 "
                       f"AND c.correlationId = {OP_BUFFERS_TABLE}.correlationId)")
        else:
            db.execute(f"DELETE FROM {OP_BUFFERS_TABLE}")
    if STREAM_TABLE in present:
        # The lab creates its streams again in every run, so most rows describe streams of runs
        # that were not kept (three quarters of a batch trace recorded with 90 runs each).
        used = [t for t in tables(db) if t not in (STREAM_TABLE, STREAM_ORIGIN_TABLE)
                and "streamId" in {r[1] for r in db.execute(f'PRAGMA table_info("{t}")')}]
        if used:
            referenced = " UNION ".join(f'SELECT streamId FROM "{t}"' for t in used)
            db.execute(f"DELETE FROM {STREAM_TABLE} WHERE streamId NOT IN ({referenced})")
        if STREAM_ORIGIN_TABLE in present:
            # The kept streams' origins, and every row that shares a correlation id with one: the
            # reader takes a creating call's first stream for the created one, a later one of that
            # id for a per-thread stream (docs/schema.md).
            t = STREAM_ORIGIN_TABLE
            db.execute(f"DELETE FROM {t} WHERE NOT EXISTS (SELECT 1 FROM {t} o JOIN {STREAM_TABLE} s "
                       f"ON s.streamId = o.streamId AND s.contextId = o.contextId "
                       f"WHERE o.contextId = {t}.contextId AND o.correlationId IS {t}.correlationId)")
    db.commit()
    db.execute("VACUUM")
    db.close()


def corpus_name(trace, compress):
    """The name a batch's trimmed trace takes in the corpus."""
    name = os.path.basename(trace)
    return name + ".gz" if compress and not lab_trace.compressed(name) else name


def collect_and_trim(job):
    """One batch: (its corpus lines, manifest entries, failed runs, kept runs), its trimmed trace
    written to the corpus (and the variant traces' directory)."""
    trace, programs_path, results_path, out_dir, variant_traces, window_count, compress = job
    name = corpus_name(trace, compress)
    programs = read_jsonl(programs_path)
    failed = []
    entries, windows, kept_runs = collect_batch(trace, programs, read_jsonl(results_path), failed,
                                                window_count)
    for entry in entries:
        entry["trace"] = name
    trim(trace, os.path.join(out_dir, name), windows)
    if variant_traces:
        trim(trace, os.path.join(variant_traces, os.path.basename(trace)),
             [window for runs in kept_runs.values() for _, _, window in runs.values()])
    return programs, entries, failed, kept_runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--batch", nargs=3, action="append", required=True,
                        metavar=("TRACE", "PROGRAMS", "RESULTS"))
    parser.add_argument("--machine", default="")
    parser.add_argument("--variant-traces", metavar="DIR",
                        help="also keep each variant's median run: DIR/BATCH.sqlite and DIR/index.json")
    parser.add_argument("--windows", type=int, default=1, metavar="K",
                        help="keep the K baseline runs nearest the median span (windows_ns); default 1")
    parser.add_argument("--compress", action="store_true",
                        help="write the trimmed traces gzip-compressed (BATCH.sqlite.gz)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="batches collected at once, each in a process (default: the CPUs)")
    parser.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    args = parser.parse_args()
    if args.windows < 1:
        parser.error("--windows must be at least 1")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    os.makedirs(args.out_dir, exist_ok=True)
    manifest = {"schema": "cuoverlap-lab-corpus/1", "machine": args.machine, "date": args.date,
                "corpus": "programs.jsonl.gz", "programs": [], "failed": []}
    names = set()
    variant_index = {}
    if args.variant_traces:
        os.makedirs(args.variant_traces, exist_ok=True)
    for trace, _, _ in args.batch:
        name = os.path.basename(trace)
        if name in names:
            sys.exit(f"lab_collect: two batches' traces are named {name}")
        names.add(name)
    jobs = [(trace, programs_path, results_path, args.out_dir, args.variant_traces, args.windows,
             args.compress) for trace, programs_path, results_path in args.batch]
    # Batches are independent: each is read and trimmed in a process of its own (--jobs), and
    # their entries are joined in the order given.
    workers = max(1, min(args.jobs, len(jobs)))
    if workers > 1:
        with multiprocessing.Pool(workers) as pool:
            collected = pool.map(collect_and_trim, jobs, chunksize=1)
    else:
        collected = [collect_and_trim(job) for job in jobs]
    with gzip.open(os.path.join(args.out_dir, "programs.jsonl.gz"), "wt") as corpus:
        for (trace, _, _), (programs, entries, failed, kept_runs) in zip(args.batch, collected):
            name = corpus_name(trace, args.compress)
            manifest["failed"] += failed
            if args.variant_traces:
                for pid, runs in kept_runs.items():
                    variant_index[pid] = {"trace": os.path.basename(trace), "runs": {
                        variant: {"window_ns": list(window), "rep": rep, "span_ns": span}
                        for variant, (span, rep, window) in sorted(runs.items())}}
            manifest["programs"] += entries
            for line in programs:
                corpus.write(json.dumps(line, separators=(",", ":")) + "\n")
            cases = sum(len(e["variants"]) for e in entries)
            print(f"lab_collect: {name}: {len(entries)} of {len(programs)} programs, {cases} cases")
    with open(os.path.join(args.out_dir, "manifest.json"), "w") as f:
        lab_manifest.dump(manifest, f)
    if args.variant_traces:
        with open(os.path.join(args.variant_traces, "index.json"), "w") as f:
            lab_manifest.dump(variant_index, f)
    cases = sum(len(e["variants"]) for e in manifest["programs"])
    print(f"lab_collect: {len(manifest['programs'])} programs, {cases} (program, transform) cases, "
          f"{len(manifest['failed'])} failed runs -> {args.out_dir}/manifest.json")


if __name__ == "__main__":
    main()
