"""copy-ahead: a loop of copy-in and kernels with no copy-out on one stream gets its input copied
one iteration ahead on a created stream of its own (single-stream's recommended fix for that
shape: it holds whether or not an iteration's kernels read device state the previous one left,
an accumulator, which multi-stream's split would break).

The body's host-to-device copies move to the new stream `STREAM_ahead` (the kind of the loop's
stream), into two device buffers in turn: iteration i copies into D[i % 2] (a second buffer
`D_ahead` beside each copy's destination) and records `STREAM_in{i % 2}`; the loop's stream waits
for that event before the iteration's kernels, which read D[i % 2]; after them it records
`STREAM_free{i % 2}`, which the copies of iteration i + 2 wait for before they overwrite the
buffer. The kernels, memsets and host code stay in their order on the loop's stream and thread,
so whatever an iteration leaves in device memory for the next is read as before. The body is
unrolled by two (a remainder iteration follows); GPU work issued on the stream before the loop is
waited for by the copy stream.

The loop shape, anything else not applicable: a top-level loop of 2+ iterations whose body holds
asynchronous pinned host-to-device copies, then kernels and memsets, all on one stream that is not
the legacy one, and host code; no copy-out, no synchronize; each copy fills its whole destination
(the rest of a buffer could carry state between iterations) and no step outside the loop uses a
destination (it would see one of two buffers).
"""
from ..program import (NotApplicable, all_steps, buffers, clone, fresh_name, names, stream_kinds,
                       walk)

ID = "copy-ahead"
FINDING = "single-stream"
DOES = ("moves a copy-in/kernel loop's input copies (no copy-out) to a stream of their own, double-"
        "buffered and ordered by events, the kernels kept in order on their stream")
HOST_OPS = ("host", "host_read")


def apply(program):
    each = apply_each(program)
    if each:
        return each[0][1]
    reasons = sorted({unfit(program, thread["steps"], i) for thread in program["threads"]
                      for i, step in enumerate(thread["steps"]) if step["op"] == "loop"})
    return NotApplicable("no top-level loop of pinned copy-in then kernels without a copy-out on one "
                         "stream%s" % ("".join("; " + r for r in reasons)))


def apply_each(program):
    """[(stream, variant)]: one variant per stream with a loop that fits (its first such loop),
    threads in order."""
    out, seen = [], set()
    for t, thread in enumerate(program["threads"]):
        for i, step in enumerate(thread["steps"]):
            if unfit(program, thread["steps"], i) is not None:
                continue
            stream = next(s["stream"] for s in step["body"] if s["op"] not in HOST_OPS)
            if stream in seen:
                continue
            seen.add(stream)
            variant = clone(program)
            _copy_ahead(variant, variant["threads"][t]["steps"], i)
            out.append((stream, variant))
    return out


def unfit(program, steps, i):
    """Why steps[i] is not the loop shape, or None."""
    loop = steps[i]
    if loop["op"] != "loop" or loop["count"] < 2:
        return "not a loop of 2+ iterations"
    body = loop["body"]
    gpu = [s for s in body if s["op"] not in HOST_OPS]
    if any(s["op"] not in ("copy", "kernel", "memset") or not s.get("async", True) for s in gpu):
        return "body holds more than async copies, kernels, memsets and host code"
    if len({s["stream"] for s in gpu}) != 1:
        return "body not on one stream"
    kinds = buffers(program)
    copies = [s for s in gpu if s["op"] == "copy"]
    if not copies or not any(s["op"] == "kernel" for s in gpu):
        return "body without a copy or without a kernel"
    if any(kinds[s["src"]]["kind"] == "pageable" for s in copies):
        return "pageable copies: pin first"
    if any(kinds[s["src"]]["kind"] != "pinned" or kinds[s["dst"]]["kind"] != "device" for s in copies):
        return "a copy that is not host-to-device: a loop with a copy-out is multi-stream's"
    first_other = next(k for k, s in enumerate(gpu) if s["op"] != "copy")
    if any(s["op"] == "copy" for s in gpu[first_other:]):
        return "copies after the body's kernels: not copy-in then kernels"
    declared = {b["name"] for b in program["buffers"]}
    used = {s.get(k) for s in gpu for k in ("src", "dst", "buffer")} - {None}
    if not used <= declared:
        return "allocated buffers"
    stream = gpu[0]["stream"]
    if stream_kinds(program)[stream] == "legacy":
        return "on the legacy stream: own-streams' fix first"
    dsts = {s["dst"] for s in copies}
    if any(s.get("dst_offset", 0) or s["bytes"] != kinds[s["dst"]]["bytes"] for s in copies):
        return "a copy fills part of its buffer: the rest may carry state between iterations"
    inside = {id(s) for s in walk([loop])}
    if any(id(s) not in inside and dsts & {s.get(k) for k in ("src", "dst", "buffer")}
           for s in all_steps(program)):
        return "a copy's destination is used outside the loop"
    return None


def _copy_ahead(program, steps, i):
    loop = steps[i]
    body = loop["body"]
    stream = next(s["stream"] for s in body if s["op"] not in HOST_OPS)
    kind = "blocking" if stream_kinds(program)[stream] == "blocking" else "nonblocking"
    ahead = fresh_name(names(program, "streams"), stream + "_ahead")
    program["streams"].append({"name": ahead, "kind": kind})
    kinds = buffers(program)
    second = {}
    for dst in sorted({s["dst"] for s in body if s["op"] == "copy"}):
        second[dst] = fresh_name(names(program, "buffers"), dst + "_ahead")
        program["buffers"].append({"name": second[dst], "kind": kinds[dst]["kind"],
                                   "bytes": kinds[dst]["bytes"]})
    events = []
    for role in ("in", "free"):
        pair = []
        for j in range(2):
            name = fresh_name(names(program, "events"), "%s_%s%d" % (stream, role, j))
            program["events"].append({"name": name})
            pair.append(name)
        events.append(pair)
    ready, free = events
    iterations = [_iteration(body, stream, ahead, ready[j], free[j], second if j else {})
                  for j in range(2)]
    head = []
    if any(s.get("stream") == stream and s["op"] != "sync" for s in walk(steps[:i])):
        before = fresh_name(names(program, "events"), stream + "_before")
        program["events"].append({"name": before})
        head = [{"op": "record", "event": before, "stream": stream},
                {"op": "wait", "event": before, "stream": ahead}]
    unrolled = [{"op": "loop", "count": loop["count"] // 2, "body": iterations[0] + iterations[1]}]
    tail = iterations[0] if loop["count"] % 2 else []
    steps[i:i + 1] = head + unrolled + [dict(s) for s in tail]


def _iteration(body, stream, ahead, ready, free, rename):
    """One iteration: its copies on `ahead` into the buffers of `rename` (after the kernels that
    read them two iterations before), its kernels on `stream` after them."""
    out, waited = [], False
    for s in body:
        t = dict(s)
        for key in ("dst", "buffer"):
            if key in t:
                t[key] = rename.get(t[key], t[key])
        if s["op"] == "copy":
            if not any(x["op"] == "copy" for x in out):
                out.append({"op": "wait", "event": free, "stream": ahead})
            t["stream"] = ahead
        elif s["op"] not in HOST_OPS and not waited:
            out.append({"op": "record", "event": ready, "stream": ahead})
            out.append({"op": "wait", "event": ready, "stream": stream})
            waited = True
        out.append(t)
    out.append({"op": "record", "event": free, "stream": stream})
    return out
