#!/usr/bin/env python3
"""lab_streams.py CORPUS_DIR: name, in the manifest, the trace stream each one-stream variant acts on.

A `multi-stream` variant splits one stream's loop; the single-stream finding names one stream
too, and its claim is about splitting that stream only. So that `cuoverlap lab score` compares a
claim with the variant that carries it out (docs/lab.md, "What is measured"), each such variant
gets `"stream_id"`: the id, in the kept baseline window's trace, of the stream it splits.

The description names streams (`s2`), the trace numbers them. A description stream is matched to
the trace stream whose GPU work in the window is the same multiset of ops — kernels by grid size,
copies by bytes and direction, memsets by bytes — as the description's work on that stream
(loops unrolled; the legacy default stream also runs every thread's synchronous copies and
memsets; a per-thread default stream is a trace stream of each thread that issues to it, keyed
NAME@THREAD). A stream that matches no trace stream, or more than one, gets no id (the case is
then scored as before).

Trace stream and thread ids differ from run to run. Where a program keeps several baseline runs
(`baseline.windows_ns`, lab_collect.py --windows), each such variant also gets `"stream_ids"`, one
per window in windows_ns' order (null where that window's streams do not match), and, where its
`thread_id` applies, `"thread_ids"` likewise; `stream_id` and `thread_id` stay the kept window's.
Rewrites CORPUS_DIR/manifest.json in place, atomically; prints counts.
Importable: `stream_ids(trace_path, window, description)` for lab_collect.py.
"""
import collections
import contextlib
import gzip
import json
import os
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_manifest  # noqa: E402  (how a manifest is written)
import lab_trace  # noqa: E402  (plain or gzip-compressed traces)

# Transforms that act on one stream of the program, with how to find it in the variant.
ONE_STREAM = ("multi-stream", "copy-ahead")


def _unrolled(steps, times=1):
    for step in steps:
        if step["op"] == "loop":
            for _ in range(step["count"] * times):
                yield from _unrolled(step["body"])
        else:
            for _ in range(times):
                yield step


def _per_thread_streams(program):
    """The names of the description's per-thread default streams (cudaStreamPerThread)."""
    return {s["name"] for s in program["streams"] if s.get("kind") == "per-thread"}


def _per_thread_key(stream, thread):
    """How stream_ids keys thread `thread`'s work on per-thread default stream `stream`."""
    return "%s@%s" % (stream, thread)


def _description_work(program, thread_name=None):
    """stream name -> Counter of op signatures (of thread `thread_name` only where given); None
    where a stream's work is not comparable."""
    kinds = {b["name"]: b["kind"] for b in program["buffers"]}
    # Every name of the legacy default stream is one trace stream, which also runs the synchronous
    # copies and memsets (cudaMemcpy, cudaMemset: no stream), whichever thread issued them.
    legacy_names = [s["name"] for s in program["streams"] if s.get("kind") == "legacy"]
    legacy = legacy_names[0] if legacy_names else "<legacy>"
    # A per-thread default stream is one stream per thread (cudaStreamPerThread): each thread's
    # work on it is its own trace stream, named NAME@THREAD.
    per_thread = _per_thread_streams(program)
    work = collections.defaultdict(collections.Counter)
    opaque = set()
    for thread in program["threads"]:
        if thread_name is not None and thread["name"] != thread_name:
            continue
        for step in _unrolled(thread["steps"]):
            op, stream = step["op"], step.get("stream")
            if stream in legacy_names or (op in ("copy", "memset") and step.get("async", True) is False):
                stream = legacy
            elif stream in per_thread:
                stream = _per_thread_key(stream, thread["name"])
            if op == "kernel":
                work[stream][("kernel", step["grid"])] += 1
            elif op == "copy":
                src = kinds.get(step["src"]) == "device"
                dst = kinds.get(step["dst"]) == "device"
                direction = "dtod" if src and dst else "dtoh" if src else "htod" if dst else "htoh"
                work[stream][("copy", direction, step["bytes"])] += 1
            elif op == "memset":
                work[stream][("memset", step["bytes"])] += 1
            elif op in ("graph_launch", "capture", "prefetch"):
                opaque.add(stream)
    for name in legacy_names[1:]:
        work[name] = work[legacy]
        if legacy in opaque:
            opaque.add(name)
    return {s: c for s, c in work.items() if s not in opaque and s is not None}


# CUPTI copyKind: 1 HtoD, 2 DtoH, 8 DtoD (cupti_activity.h CUpti_ActivityMemcpyKind).
_COPY_KIND = {1: "htod", 2: "dtoh", 8: "dtod", 10: "htoh"}


def _trace_work(db, window):
    start, end = window
    work = collections.defaultdict(collections.Counter)
    for stream, x, y, z in db.execute(
            "SELECT streamId, gridX, gridY, gridZ FROM CUPTI_ACTIVITY_KIND_KERNEL "
            "WHERE start >= ? AND start <= ?", (start, end)):
        work[stream][("kernel", x * y * z)] += 1
    for stream, kind, nbytes in db.execute(
            "SELECT streamId, copyKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY "
            "WHERE start >= ? AND start <= ?", (start, end)):
        work[stream][("copy", _COPY_KIND.get(kind, str(kind)), nbytes)] += 1
    for stream, nbytes in db.execute(
            "SELECT streamId, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE start >= ? AND start <= ?",
            (start, end)):
        work[stream][("memset", nbytes)] += 1
    return work


def stream_ids(db, window, description):
    """Description stream name -> trace stream id, for the streams that match exactly one."""
    traced = _trace_work(db, window)
    out = {}
    for name, ops in _description_work(description).items():
        matches = [sid for sid, got in traced.items() if got == ops]
        if len(matches) == 1:
            out[name] = matches[0]
    return out


def _thread_work(db, window, stream):
    """tid -> Counter of op signatures of the ops that thread launched on trace stream `stream`."""
    start, end = window
    work = collections.defaultdict(collections.Counter)
    launched = ("SELECT r.globalTid, {cols} FROM CUPTI_ACTIVITY_KIND_{table} o "
                "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = o.correlationId "
                "WHERE o.streamId = ? AND o.start >= ? AND o.start <= ?")
    for tid, x, y, z in db.execute(launched.format(cols="o.gridX, o.gridY, o.gridZ", table="KERNEL"),
                                   (stream, start, end)):
        work[tid & 0xFFFFFF][("kernel", x * y * z)] += 1
    for tid, kind, nbytes in db.execute(launched.format(cols="o.copyKind, o.bytes", table="MEMCPY"),
                                        (stream, start, end)):
        work[tid & 0xFFFFFF][("copy", _COPY_KIND.get(kind, str(kind)), nbytes)] += 1
    for tid, nbytes in db.execute(launched.format(cols="o.bytes", table="MEMSET"), (stream, start, end)):
        work[tid & 0xFFFFFF][("memset", nbytes)] += 1
    return work


def _mover(baseline, variant):
    """The one thread of a one-stream variant that issues to the streams it created, or None."""
    before = {s["name"] for s in baseline["streams"]}
    new = {s["name"] for s in variant["streams"] if s["name"] not in before}
    movers = [t["name"] for t in variant["threads"]
              if any(step.get("stream") in new for step in _unrolled(t["steps"]))]
    return movers[0] if len(movers) == 1 else None


def thread_id(db, window, baseline, variant, name, stream):
    """The tid (in the trace) of the thread whose loop on description stream `name` (trace stream
    `stream`) a one-stream variant moved, where several threads issued work to that stream; None
    otherwise, or where its work matches no thread's, or several."""
    issuers = [t["name"] for t in baseline["threads"] if _description_work(baseline, t["name"]).get(name)]
    if len(issuers) < 2:
        return None
    mover = _mover(baseline, variant)
    if mover is None:
        return None
    ops = _description_work(baseline, mover).get(name)
    matches = [tid for tid, got in _thread_work(db, window, stream).items() if got == ops]
    return matches[0] if len(matches) == 1 else None


def split_stream(baseline, variant):
    """The baseline stream a one-stream variant acts on: the one a multi-stream variant's new
    `NAME_part*` streams replace (labgen/transforms/multi_stream.py), or whose copies a copy-ahead
    variant's `NAME_ahead` stream takes (copy_ahead.py)."""
    before = {s["name"] for s in baseline["streams"]}
    new = [s["name"] for s in variant["streams"] if s["name"] not in before]
    parents = {n for n in before for m in new if m.startswith(n + "_part") or m == n + "_ahead"}
    return parents.pop() if len(parents) == 1 else None


def split_key(baseline, variant):
    """split_stream's name as stream_ids keys it: a per-thread default stream's as NAME@THREAD,
    the thread that moved its loop (each thread's per-thread stream is a trace stream of its own)."""
    name = split_stream(baseline, variant)
    if name is None or name not in _per_thread_streams(baseline):
        return name
    mover = _mover(baseline, variant)
    return None if mover is None else _per_thread_key(name, mover)


def _name_per_window(entry, db, windows, baseline, variant, name):
    """Sets entry's stream_ids (and thread_ids, where a window names the thread): description
    stream `name`'s trace ids in each window, None where it matches none there."""
    streams, threads = [], []
    for window in windows:
        stream = stream_ids(db, window, baseline).get(name)
        streams.append(stream)
        threads.append(None if stream is None else thread_id(db, window, baseline, variant, name, stream))
    entry["stream_ids"] = streams
    if any(tid is not None for tid in threads):
        entry["thread_ids"] = threads


def annotate(corpus):
    path = os.path.join(corpus, "manifest.json")
    with open(path) as f:
        manifest = json.load(f)
    descriptions = {}
    with gzip.open(os.path.join(corpus, "programs.jsonl.gz"), "rt") as f:
        for line in f:
            entry = json.loads(line)
            descriptions[entry["id"]] = entry["variants"]
    dbs = {}
    counts = collections.Counter()
    with contextlib.ExitStack() as stack:
        _annotate_programs(corpus, manifest, descriptions, dbs, counts, stack)
    fd, tmp = tempfile.mkstemp(dir=corpus, prefix=".manifest.", suffix=".json")
    with os.fdopen(fd, "w") as f:
        lab_manifest.dump(manifest, f)
    os.replace(tmp, path)
    return counts


def _annotate_programs(corpus, manifest, descriptions, dbs, counts, stack):
    for program in manifest["programs"]:
        variants = descriptions.get(program["id"], {})
        for transform, entry in program["variants"].items():
            if transform.split("@", 1)[0] not in ONE_STREAM:
                continue
            for key in ("stream_id", "thread_id", "stream_ids", "thread_ids"):
                entry.pop(key, None)
            counts["variants"] += 1
            if transform not in variants or "baseline" not in variants:
                continue
            name = split_key(variants["baseline"], variants[transform])
            if name is None:
                continue
            trace = program["trace"]
            if trace not in dbs:
                dbs[trace] = lab_trace.connect(os.path.join(corpus, trace), stack)
            ids = stream_ids(dbs[trace], program["baseline"]["window_ns"], variants["baseline"])
            if name in ids:
                entry["stream_id"] = ids[name]
                counts["named"] += 1
                tid = thread_id(dbs[trace], program["baseline"]["window_ns"], variants["baseline"],
                                variants[transform], name, ids[name])
                if tid is not None:
                    entry["thread_id"] = tid
                    counts["threads"] += 1
            if "windows_ns" in program["baseline"]:
                _name_per_window(entry, dbs[trace], program["baseline"]["windows_ns"],
                                 variants["baseline"], variants[transform], name)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: lab_streams.py CORPUS_DIR\n")
        return 2
    try:
        counts = annotate(argv[1])
    except (OSError, ValueError, KeyError, sqlite3.Error) as error:
        sys.stderr.write("lab_streams.py: %s\n" % error)
        return 1
    print("%s: %d of %d one-stream variants name their trace stream, %d the thread whose loop "
          "they split" % (argv[1], counts["named"], counts["variants"], counts["threads"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
