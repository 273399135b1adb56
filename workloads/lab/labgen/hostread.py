"""Which host reads a program leaves unprotected: the data dependence a synchronize carries.

A host_read (or a synchronous copy/memset, which the host orders) of buffer B is protected when
every GPU write of B issued before it by the same thread has completed by then: a device
synchronize, a synchronize of a stream that the write is ordered before (its own stream, or one
that waited on an event recorded after it), or an event synchronize of an event recorded after it.
"""
from .program import LEGACY_ORDERED, effects, stream_kinds, unroll


class _Pending:
    __slots__ = ("buffer", "streams")

    def __init__(self, buffer, stream):
        self.buffer = buffer
        self.streams = {stream}


def unprotected_reads(program):
    """The set of id()s of steps that read a buffer with a GPU write possibly still in flight."""
    return set(unprotected_details(program))


def unprotected_details(program):
    """id() of each unprotected step -> the streams whose synchronize would protect it."""
    kinds = stream_kinds(program)
    found = {}
    for thread in program["threads"]:
        found.update(_thread_unprotected(program, thread["steps"], kinds))
    return found


def _thread_unprotected(program, steps, kinds):
    pending = []
    events = {}
    found = {}
    for step in unroll(steps):
        op = step["op"]
        if op == "host_read":
            for p in pending:
                if p.buffer == step["buffer"]:
                    found.setdefault(id(step), set()).add(min(p.streams))
        elif op in ("copy", "memset") and not step.get("async", True):
            reads, writes = effects(step, program)
            for p in pending:
                ordered = any(kinds.get(s) in LEGACY_ORDERED for s in p.streams)
                if p.buffer in reads | writes and not ordered:
                    found.setdefault(id(step), set()).add(min(p.streams))
        elif op in ("copy", "memset", "kernel", "graph_launch"):
            for b in effects(step, program)[1]:
                pending.append(_Pending(b, step["stream"]))
        elif op == "record":
            events[step["event"]] = [p for p in pending if step["stream"] in p.streams]
        elif op == "wait":
            for p in events.get(step["event"], []):
                p.streams.add(step["stream"])
        elif op == "sync":
            pending = _after_sync(step, pending, events)
    return found


def _after_sync(step, pending, events):
    what = step["what"]
    if what == "device":
        return []
    if what == "stream":
        return [p for p in pending if step["stream"] not in p.streams]
    done = {id(p) for p in events.get(step["event"], [])}
    return [p for p in pending if id(p) not in done]
