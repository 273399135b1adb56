#!/usr/bin/env python3
"""How much later a host thread resumes after a long blocking call, split by whether its program
has one host thread or several (docs/findings.md, blocking-sync-call's fifty-fourth-session
paragraph: `copyReturnAfterSleep`, `launchAfterSleep`), over the baseline runs of lab corpora.

  lab_wake_times.py CORPUS_DIR ...

Per corpus the manifest's baseline windows and the programs' thread counts (programs.jsonl.gz).
Two measures, each per (one thread or several, how long the call waited):
  copy return  DtoH copies of at most 64 KiB whose call blocked until its op ended: how long after
               the op ended the call returned (waited: from the call's start to the op's start);
  next launch  explicit synchronizes whose thread's next call, within 20 µs, was a kernel launch:
               that launch call's duration (waited: the synchronize's duration).
One line per class: count and median in µs; a class's growth is its median less that of the
shortest waits of the same thread count.
"""
import bisect
import collections
import gzip
import json
import os
import sqlite3
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_trace  # noqa: E402  (plain or gzip-compressed traces)
from lab_collect import kept_windows  # noqa: E402

COPY_RANGES_US = [(0, 300), (300, 1000), (1000, 3000), (3000, 10000), (10000, float("inf"))]
SYNC_RANGES_US = [(0, 30), (30, 100), (100, 300), (300, 1000), (1000, 3000), (3000, 10000),
                  (10000, float("inf"))]
DTOH = 2
NEXT_LAUNCH_WITHIN_NS = 20_000


def range_of(us, ranges):
    for k, (lo, hi) in enumerate(ranges):
        if lo <= us < hi:
            return k
    return None


def windows_by_trace(corpus):
    threads = {}
    with gzip.open(os.path.join(corpus, "programs.jsonl.gz"), "rt") as lines:
        for line in lines:
            program = json.loads(line)
            threads[program["id"]] = len(program["variants"]["baseline"]["threads"])
    with open(os.path.join(corpus, "manifest.json")) as f:
        manifest = json.load(f)
    by_trace = collections.defaultdict(list)
    for program in manifest["programs"]:
        for window in kept_windows(program):
            by_trace[program["trace"]].append((window, threads.get(program["id"], 0) > 1))
    return by_trace


def measure(corpus, copies, launches):
    for trace, windows in windows_by_trace(corpus).items():
        db = lab_trace.connect(os.path.join(corpus, trace))
        names = dict(db.execute("SELECT id, value FROM StringIds"))
        calls = list(db.execute("SELECT start, end, correlationId, nameId, globalTid "
                                "FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start"))
        by_corr = {c[2]: c for c in calls}
        by_thread = collections.defaultdict(list)
        for c in calls:
            by_thread[c[4]].append(c)
        starts = {thread: [c[0] for c in thread_calls] for thread, thread_calls in by_thread.items()}
        for (lo, hi), several in windows:
            for start, end, corr in db.execute(
                    "SELECT start, end, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                    "WHERE copyKind = ? AND bytes <= 65536 AND start BETWEEN ? AND ?", (DTOH, lo, hi)):
                call = by_corr.get(corr)
                if call is None or call[1] < end:
                    continue
                k = range_of((start - call[0]) / 1e3, COPY_RANGES_US)
                if k is not None:
                    copies[(several, k)].append((call[1] - end) / 1e3)
            for thread, thread_calls in by_thread.items():
                # The thread's calls begun in the window, each with the call after it.
                first = bisect.bisect_left(starts[thread], lo)
                last = bisect.bisect_right(starts[thread], hi)
                for call, after in zip(thread_calls[first:last], thread_calls[first + 1:last + 1]):
                    if "Synchronize" not in names.get(call[3], ""):
                        continue
                    if not names.get(after[3], "").startswith("cudaLaunchKernel"):
                        continue
                    if after[0] - call[1] > NEXT_LAUNCH_WITHIN_NS:
                        continue
                    k = range_of((call[1] - call[0]) / 1e3, SYNC_RANGES_US)
                    if k is not None:
                        launches[(several, k)].append((after[1] - after[0]) / 1e3)


def report(title, samples, ranges):
    print(title)
    for several in (False, True):
        base = samples.get((several, 0))
        base_median = statistics.median(base) if base else None
        for k, (lo, hi) in enumerate(ranges):
            values = samples.get((several, k))
            if not values:
                continue
            median = statistics.median(values)
            growth = f"{median - base_median:+6.1f}" if base_median is not None else "     -"
            print(f"  {'several threads' if several else 'one thread':15s} {lo:>6.0f}-{hi:<6.0f} µs "
                  f"n={len(values):5d}  median {median:5.1f} µs  growth {growth}")


def main(corpora):
    if not corpora:
        print("usage: lab_wake_times.py CORPUS_DIR ...", file=sys.stderr)
        return 2
    copies = collections.defaultdict(list)
    launches = collections.defaultdict(list)
    for corpus in corpora:
        try:
            measure(corpus, copies, launches)
        except (OSError, ValueError, KeyError, sqlite3.Error) as error:
            print(f"lab_wake_times: {corpus}: not a readable lab corpus ({error!r})", file=sys.stderr)
            return 2
    report("copy return after the op (by the wait before the op)", copies, COPY_RANGES_US)
    report("next launch call after a synchronize (by the synchronize's duration)", launches, SYNC_RANGES_US)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
