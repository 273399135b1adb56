"""remove-sync: remove every synchronize that protects no host read (blocking-sync-call).

A synchronize is removed when, without it, no host read (nor synchronous copy) is left reading a
buffer that GPU work may still be writing; tried one at a time in program order, so that of two
back-to-back synchronizes before a read one stays. The interpreter synchronizes the device at the
end of the program anyway.
"""
from ..hostread import unprotected_reads
from ..program import NotApplicable, all_steps, clone

ID = "remove-sync"
FINDING = "blocking-sync-call"
DOES = "removes each device/stream/event synchronize that protects no host read"


def apply(program):
    out = clone(program)
    baseline = unprotected_reads(out)
    removed = 0
    for step in [s for s in all_steps(out) if s["op"] == "sync"]:
        _remove(out, step)
        if unprotected_reads(out) - baseline:
            _restore(out, step)
        else:
            removed += 1
    _drop_marks(out)
    _drop_empty_loops(out)
    if not removed:
        return NotApplicable("every synchronize protects a host read")
    return out


def _lists(program):
    from ..program import walk_lists
    for thread in program["threads"]:
        yield from walk_lists(thread["steps"])


def _remove(program, step):
    step["op"] = "removed-sync"


def _restore(program, step):
    step["op"] = "sync"


def _drop_marks(program):
    for steps in list(_lists(program)):
        steps[:] = [s for s in steps if s["op"] != "removed-sync"]


def _drop_empty_loops(program):
    for steps in list(_lists(program)):
        steps[:] = [s for s in steps if s["op"] != "loop" or s["body"]]
