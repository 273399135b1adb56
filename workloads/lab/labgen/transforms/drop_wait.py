"""drop-wait: remove every cudaStreamWaitEvent that orders no data dependence
(event-wait-serialization; cross-stream-kernel-wait for the waits between two kernels; both
when both kinds are dropped).

Data dependences come from the buffers each op reads and writes (copy: reads src, writes dst;
kernel: reads and writes its buffer; memset: writes). A wait is kept when, without it, some pair
of ops of different streams that touch a buffer one of them writes would no longer be ordered
(ordering.py: stream order, event waits, host synchronizes; loop iterations unrolled). Waits on
an event recorded by another thread are kept. Waits are dropped one at a time, each checked against
the program without the ones dropped before (two waits may each order what the other orders too),
in passes until none more can go (a wait may order a dependence only through waits that go).
"""
from ..ordering import before_masks, conflict_masks, orders_dependence, thread_ops
from ..program import NotApplicable, clone, walk, walk_lists

ID = "drop-wait"
FINDING = "event-wait-serialization"
DOES = "removes each cudaStreamWaitEvent that orders no data dependence"


def droppable(program):
    """The wait steps (objects of program) that order no data dependence."""
    result = []
    for thread in program["threads"]:
        own = {s["event"] for s in walk(thread["steps"]) if s["op"] == "record"}
        waits = [s for s in walk(thread["steps"]) if s["op"] == "wait" and s["event"] in own]
        if not waits:
            continue
        ops = thread_ops(program, thread["steps"])
        conflicts = conflict_masks(ops)
        dropped = set()
        changed = True
        while changed:  # one wait at a time: two waits may each order what the other also does
            changed = False
            for w in waits:
                if id(w) in dropped:
                    continue
                full = before_masks(ops, dropped)
                if not orders_dependence(ops, conflicts, full, w, dropped):
                    dropped.add(id(w))
                    result.append(w)
                    changed = True
    return result


def apply(program):
    out = clone(program)
    drop = {id(w) for w in droppable(out)}
    if not drop:
        return NotApplicable("every wait orders a data dependence (or there is none)")
    for thread in out["threads"]:
        for steps in walk_lists(thread["steps"]):
            steps[:] = [s for s in steps if id(s) not in drop]
    return out


def finding(program):
    """The findings whose waits the transform drops: cross-stream-kernel-wait for a wait between
    two kernels, event-wait-serialization for the others; a wait on an event recorded before any
    work of its stream waits for nothing and names neither. Both, as a list, when both kinds are
    dropped (their costs add up: each rule prices its own waits)."""
    kinds = set()
    drop = {id(w) for w in droppable(program)}
    for thread in program["threads"]:
        steps = list(walk(thread["steps"]))
        for i, step in enumerate(steps):
            if id(step) in drop:
                kinds.add(_wait_kind(steps, i))
    kinds.discard(None)
    if kinds == {"cross-stream-kernel-wait"}:
        return "cross-stream-kernel-wait"
    if len(kinds) == 2:
        return [FINDING, "cross-stream-kernel-wait"]
    return FINDING


def _wait_kind(steps, i):
    """cross-stream-kernel-wait, event-wait-serialization, or None (the wait has no producer)."""
    wait = steps[i]
    record = next((s for s in reversed(steps[:i]) if s["op"] == "record"
                   and s["event"] == wait["event"]), None)
    if record is None:
        return FINDING
    at = steps.index(record)
    producer = next((s for s in reversed(steps[:at]) if s.get("stream") == record["stream"]
                     and s["op"] in ("kernel", "copy", "memset")), None)
    if producer is None:
        return None
    consumer = next((s for s in steps[i + 1:] if s.get("stream") == wait["stream"]
                     and s["op"] in ("kernel", "copy", "memset")), None)
    if consumer is not None and producer["op"] == consumer["op"] == "kernel":
        return "cross-stream-kernel-wait"
    return FINDING
