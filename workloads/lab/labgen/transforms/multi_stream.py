"""multi-stream: a loop of copy-in / kernels / copy-out on one stream, with pinned host memory,
split round-robin over 2-3 created streams (blocking if the loop's stream was; not from the
legacy stream: that is own-streams' fix), each with its own copy of the buffers the
body writes (single-stream; also what low-overlap points at).

The body may also hold host code and host reads, which stay where they are: a read of a buffer
the body writes reads the iteration's copy (the advice splits the GPU work, not the host's).
The loop is unrolled by the stream count (the remainder iterations follow it); A synchronize of the stream inside the body synchronizes the iteration's stream; GPU work
issued on the stream before the loop is waited for by every new stream, and synchronizes of the stream after
the loop become synchronizes of every new stream.

Where no loop fits that way, the whole advice ("issue each chunk's copy-in, kernel and copy-out to
its own created stream, with pinned host buffers") is carried out on a loop that needs more of it:
its synchronous copies and memsets become asynchronous on the iteration's stream (a synchronize of
that stream put back before each host read that needed them), its pageable buffers are pinned, a
device synchronize in the body stays, and a loop on the legacy stream is split over blocking
created streams (which keep the legacy stream's barriers with other threads' work).
"""
from ..hostread import unprotected_reads
from ..program import (NotApplicable, buffers, clone, fresh_name, names, step_stream, stream_kinds,
                       walk, walk_lists)
from ..protect import protect

ID = "multi-stream"
FINDING = "single-stream"
DOES = ("splits a one-stream copy/kernel/copy loop (host code in its body stays) round-robin over 2-3 "
        "non-blocking streams with per-stream buffers")
BODY_OPS = ("copy", "kernel", "memset")
HOST_OPS = ("host", "host_read")


def apply(program):
    each = apply_each(program)
    return each[0][1] if each else NotApplicable(
        "no top-level loop of async copies and kernels on one stream with pinned memory")


def apply_each(program):
    """[(stream, variant)]: one variant per stream with a loop that fits, splitting that stream's
    first fitting loop; in the order apply() prefers (a loop of GPU work alone first, else one
    whose body also runs host code; threads in order), apply()'s variant first. The single-stream
    finding names one stream: its claim is tested by the variant that splits that stream."""
    out, seen = [], set()
    for host_code, whole in ((False, False), (True, False), (True, True)):
        for t, thread in enumerate(program["threads"]):
            for i, step in enumerate(thread["steps"]):
                if _unfit(program, thread["steps"], i, host_code, whole) is not None:
                    continue
                stream = _loop_stream(step["body"])
                if stream in seen:
                    continue
                seen.add(stream)
                variant = clone(program)
                before = unprotected_reads(variant)
                _split(variant, variant["threads"][t]["steps"], i, whole)
                if whole:
                    protect(variant, before)
                out.append((stream, variant))
    return out


def _unfit(program, steps, i, host_code=True, whole=False):
    """Why the loop at steps[i] cannot be split; None when it can. `whole`: the whole advice may
    be carried out (synchronous copies and memsets made asynchronous, pageable buffers pinned, a
    device synchronize kept, the legacy stream's loop moved to created streams)."""
    loop = steps[i]
    if loop["op"] != "loop" or loop["count"] < 2:
        return "not a loop of 2+ iterations"
    body = loop["body"]
    if not body or any((s["op"] not in BODY_OPS or not (s.get("async", True) or whole))
                       and not _own_sync(s) and not (whole and _device_sync(s))
                       and not (host_code and s["op"] in HOST_OPS) for s in body):
        return "body holds more than async copies, kernels, memsets, stream synchronizes and host code"
    gpu = [s for s in body if step_stream(s) is not None or _own_sync(s)]  # synchronous: no stream
    if len({s["stream"] for s in gpu}) != 1 or not any(s["op"] == "copy" for s in body):
        return "body not on one stream or without copies"
    kinds = buffers(program)
    used = {s.get(k) for s in body for k in ("src", "dst", "buffer")} - {None}
    if any(kinds[b]["kind"] == "pageable" for b in used) and not whole:
        return "pageable copies: pin first"
    declared = {b["name"] for b in program["buffers"]}
    if not used <= declared:
        return "allocated buffers"
    stream = gpu[0]["stream"]
    if stream_kinds(program)[stream] == "legacy" and not whole:
        return "on the legacy stream: own-streams' fix first"
    for later in steps[i + 1:]:
        for s in walk([later]):
            if s.get("stream") == stream and s["op"] != "sync":
                return "the stream has more work after the loop"
    return None


def _split(program, steps, i, whole=False):
    loop = steps[i]
    body = loop["body"]
    stream = _loop_stream(body)
    k = min(3, loop["count"])
    kinds = buffers(program)
    if whole:
        _pin(program, body)
        body = [dict(s, stream=stream, **{"async": True}) if s["op"] in ("copy", "memset") else s
                for s in body]
        kinds = buffers(program)
    new_streams = []
    kind = "blocking" if stream_kinds(program)[stream] in ("blocking", "legacy") else "nonblocking"
    for j in range(k):
        name = fresh_name(names(program, "streams"), "%s_part%d" % (stream, j))
        program["streams"].append({"name": name, "kind": kind})
        new_streams.append(name)
    written = sorted({b for s in body for b in _writes(s)})
    copies = [{b: b for b in written}]
    for j in range(1, k):
        rename = {}
        for b in written:
            rename[b] = fresh_name(names(program, "buffers"), "%s_part%d" % (b, j))
            program["buffers"].append({"name": rename[b], "kind": kinds[b]["kind"],
                                       "bytes": kinds[b]["bytes"]})
        copies.append(rename)
    iteration = [_renamed(body, new_streams[j], copies[j]) for j in range(k)]
    head = _wait_for_earlier(program, steps[:i], stream, new_streams)
    unrolled = [{"op": "loop", "count": loop["count"] // k, "body": sum(iteration, [])}]
    tail = sum((_renamed(body, new_streams[j], copies[j]) for j in range(loop["count"] % k)), [])
    steps[i:i + 1] = head + unrolled + tail
    start = i + len(head) + 1 + len(tail)
    _expand_syncs(steps, stream, new_streams, start)
    for later in steps[start:]:
        if later["op"] == "loop":
            for lst in walk_lists(later["body"]):
                _expand_syncs(lst, stream, new_streams, 0)


def _loop_stream(body):
    return next(step_stream(s) for s in body if step_stream(s) is not None)


def _own_sync(step):
    return step["op"] == "sync" and step["what"] == "stream"


def _device_sync(step):
    return step["op"] == "sync" and step["what"] == "device"


def _pin(program, body):
    """The pageable host buffers the loop's copies use made pinned (the advice's pinned buffers)."""
    kinds = buffers(program)
    used = {s[k] for s in body if s["op"] == "copy" for k in ("src", "dst")}
    for b in program["buffers"]:
        if b["name"] in used and kinds[b["name"]]["kind"] == "pageable":
            b["kind"] = "pinned"


def _writes(step):
    if step["op"] == "copy":
        return [step["dst"]]
    return [step["buffer"]] if step["op"] in ("kernel", "memset") and step.get("buffer") else []


def _renamed(body, stream, rename):
    out = []
    for s in body:
        t = dict(s, stream=stream) if "stream" in s else dict(s)  # a synchronize of the loop's stream: of the iteration's
        for key in ("src", "dst", "buffer"):
            if key in t:
                t[key] = rename.get(t[key], t[key])
        out.append(t)
    return out


def _wait_for_earlier(program, before, stream, new_streams):
    if not any(s.get("stream") == stream and s["op"] in BODY_OPS for b in before for s in walk([b])):
        return []
    event = fresh_name(names(program, "events"), stream + "_ready")
    program["events"].append({"name": event})
    return [{"op": "record", "event": event, "stream": stream}] + \
        [{"op": "wait", "event": event, "stream": s} for s in new_streams]


def _expand_syncs(steps, stream, new_streams, start):
    for i in range(len(steps) - 1, start - 1, -1):
        s = steps[i]
        if s["op"] == "sync" and s.get("what") == "stream" and s["stream"] == stream:
            steps[i:i + 1] = [{"op": "sync", "what": "stream", "stream": n} for n in new_streams]
