"""defer-read: read a loop's result one iteration later (early-result-wait: "wait for the previous
step's result").

A loop body that copies a result to a host buffer H, synchronizes (device or the copy's stream) and
reads H, with no other blocking step between the copy and the read, becomes double-buffered:
iteration i copies into H[i % 2] and records event e[i % 2] on the copy's stream, then synchronizes
e[(i - 1) % 2] and reads H[(i - 1) % 2], so the GPU works on step i while the host waits only for
step i - 1. The body is unrolled by two (a remainder iteration follows); after the loop the last
result is synchronized and read. Blocking steps elsewhere in the body stay. Every such loop of
every thread is deferred, each independently (its own second buffer and events), as
early-result-wait costs every such synchronize; a loop whose synchronize also protected another
step of the thread is left as it is.
"""
import copy

from ..hostread import unprotected_reads
from ..program import NotApplicable, buffers, clone, fresh_name, names, walk_lists

ID = "defer-read"
FINDING = "early-result-wait"
DOES = "double-buffers every loop's result: waits on the event of the previous iteration instead of syncing the current one"


def apply(program):
    """Every matching loop of every thread, each with its own second buffer and events (the
    advice, early-result-wait's cost, is for every deferrable synchronize, not the first). A loop
    whose synchronize also protected another step (a synchronous copy of a buffer the loop's
    kernels write) is left as it is."""
    safe = [k for k in range(len(_candidates(program)))
            if not unprotected_reads(_deferring(program, {k}))]
    if not safe:
        return NotApplicable("no loop synchronizes to read a result it copied asynchronously")
    return _deferring(program, set(safe))


def _candidates(program):
    """(step list, index, shape) of each loop that copies, synchronizes and reads, in order."""
    found = [(steps, i, _shape(program, steps[i]["body"]))
             for thread in program["threads"] for steps in walk_lists(thread["steps"])
             for i in range(len(steps))
             if steps[i]["op"] == "loop" and steps[i]["count"] >= 2]
    return [f for f in found if f[2] is not None]


def _deferring(program, which):
    """A copy of the program with the candidates numbered in `which` deferred."""
    out = clone(program)
    chosen = [c for k, c in enumerate(_candidates(out)) if k in which]
    # Last first, so that replacing a loop leaves the positions of those before it in its list.
    for steps, i, shape in reversed(chosen):
        steps[i:i + 1] = _deferred(out, steps[i], shape)
    return out


def _shape(program, body):
    """(copy index, sync index, read index) of: async copy into host H, sync, host_read H, with no
    other blocking step between the copy and the read. Blocking steps elsewhere in the body (other
    synchronizes, allocations, synchronous copies) stay: the deferral saves what lies between
    them."""
    kinds = buffers(program)
    declared = {b["name"] for b in program["buffers"]}
    reads = [i for i, s in enumerate(body) if s["op"] == "host_read"]
    if len(reads) != 1 or any(s["op"] == "loop" for s in body):
        return None
    read = reads[0]
    host = body[read]["buffer"]
    if host not in declared or kinds[host]["kind"] == "managed":
        return None
    copies = [i for i in range(read) if body[i]["op"] == "copy" and body[i]["dst"] == host]
    if not copies or not body[copies[-1]].get("async", True):
        return None
    at_copy = copies[-1]
    between = range(at_copy + 1, read)
    syncs = [i for i in between if body[i]["op"] == "sync"]
    if len(syncs) != 1 or any(_blocks(body[i]) for i in between if i != syncs[0]):
        return None
    sync = syncs[0]
    if body[sync]["what"] == "event":
        return None
    if body[sync]["what"] == "stream" and body[sync]["stream"] != body[at_copy]["stream"]:
        return None
    return at_copy, sync, read


def _blocks(step):
    return step["op"] in ("sync", "alloc", "free") or not step.get("async", True)


def _deferred(program, loop, shape):
    at_copy, at_sync, at_read = shape
    body = loop["body"]
    host, stream = body[at_read]["buffer"], body[at_copy]["stream"]
    kind = buffers(program)[host]
    other = fresh_name(names(program, "buffers"), host + "_next")
    program["buffers"].append({"name": other, "kind": kind["kind"], "bytes": kind["bytes"]})
    events = [fresh_name(names(program, "events"), "%s_done%d" % (host, j)) for j in (0, 1)]
    for e in events:
        program["events"].append({"name": e})
    bufs = [host, other]

    def iteration(j):
        steps = []
        for i, s in enumerate(body):
            if i == at_sync:
                continue
            t = copy.deepcopy(s)
            if i == at_read:
                t["buffer"] = bufs[1 - j]
                steps.append({"op": "sync", "what": "event", "event": events[1 - j]})
            elif t["op"] == "copy" and t["dst"] == host:
                t["dst"] = bufs[j]
            steps.append(t)
            if i == at_copy:
                steps.append({"op": "record", "event": events[j], "stream": stream})
        return steps

    n = loop["count"]
    out = [{"op": "loop", "count": n // 2, "body": iteration(0) + iteration(1)}]
    if n % 2:
        out += iteration(0)
    last = (n - 1) % 2
    return out + [{"op": "sync", "what": "event", "event": events[last]},
                  {"op": "host_read", "buffer": bufs[last]}]
