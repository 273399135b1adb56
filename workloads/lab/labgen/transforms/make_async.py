"""Shared by async-copy and async-memset: a synchronous call made asynchronous on a stream, with a
stream synchronize before each host read that needed the call's completion."""
from ..hostread import unprotected_reads
from ..program import clone, walk
from ..protect import protect
from .stream_choice import stream_for, thread_own_stream


def make_async(program, op):
    """A copy of program with every synchronous `op` asynchronous; None when there is none."""
    out = clone(program)
    before = unprotected_reads(out)
    changed = []
    for thread in out["threads"]:
        for step in walk(thread["steps"]):
            if step["op"] == op and not step.get("async", True):
                stream = stream_for(out, thread, step) or thread_own_stream(out, thread)
                changed.append((step, stream))
    if not changed:
        return None
    for step, stream in changed:
        step["async"] = True
        step["stream"] = stream
    protect(out, before)
    return out
