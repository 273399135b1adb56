"""GPU happens-before of one host thread's ops, as bitmasks over its unrolled ops.

An op is ordered after the earlier ops of its stream, after what the stream waited for (an event
wait orders it after everything the recorded stream was ordered after at the record), and after
everything the host knew complete when it issued it (device, stream and event synchronizes).
Used to tell a wait that orders a data dependence from one that orders nothing.
"""
from .program import effects, step_stream, unroll

ISSUING = ("copy", "memset", "kernel", "graph_launch", "prefetch")


def thread_ops(program, steps):
    """The thread's unrolled steps: a list of (step, stream, (reads, writes)) for every step."""
    out = []
    for step in unroll(steps):
        out.append((step, step_stream(step), effects(step, program)))
    return out


def before_masks(ops, skip=frozenset()):
    """For each issuing op i, the bitmask of the ops ordered before it (steps in skip ignored)."""
    stream_mask = {}
    events = {}
    host = 0
    issued = 0
    result = {}
    for i, (step, stream, _) in enumerate(ops):
        if id(step) in skip:
            continue
        op = step["op"]
        if op in ISSUING or (op in ("copy", "memset") and stream is None):
            mask = stream_mask.get(stream, 0) | host if stream is not None else issued
            result[i] = mask
            issued |= 1 << i
            if stream is None:  # synchronous copy/memset: the host waits for it
                host |= issued
            else:
                stream_mask[stream] = mask | (1 << i)
        elif op == "record":
            events[step["event"]] = stream_mask.get(stream, 0) | host
        elif op == "wait":
            stream_mask[stream] = stream_mask.get(stream, 0) | events.get(step["event"], 0)
        elif op == "sync":
            what = step["what"]
            if what == "device":
                host |= issued
            elif what == "stream":
                host |= stream_mask.get(step["stream"], 0)
            else:
                host |= events.get(step["event"], 0)
    return result


def conflict_masks(ops):
    """For each issuing op j, the bitmask of earlier ops of other streams it conflicts with."""
    result = {}
    seen = []
    for j, (step, stream, eff) in enumerate(ops):
        if step["op"] not in ISSUING:
            continue
        mask = 0
        for i, other_stream, other_eff in seen:
            if other_stream != stream and (eff[1] & (other_eff[0] | other_eff[1])
                                           or other_eff[1] & eff[0]):
                mask |= 1 << i
        result[j] = mask
        if eff[0] or eff[1]:
            seen.append((j, stream, eff))
    return result


def orders_dependence(ops, conflicts, full, step, skip=frozenset()):
    """Whether leaving out `step` (a wait) unorders some conflicting pair that `full` (the masks
    with `skip` left out) orders."""
    reduced = before_masks(ops, skip=set(skip) | {id(step)})
    for j, mask in conflicts.items():
        if mask & full.get(j, 0) & ~reduced.get(j, 0):
            return True
    return False
