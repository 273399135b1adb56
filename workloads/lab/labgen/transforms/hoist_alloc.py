"""hoist-alloc: an alloc/free pair inside a loop body -> one alloc before the loop and one free
after it (implicit-sync-call: the finding costs allocation and free calls between GPU work,
those that synchronize the device and those that are slow themselves, pinned or managed)."""
from ..program import NotApplicable, all_steps, clone, walk_lists

ID = "hoist-alloc"
FINDING = "implicit-sync-call"
DOES = "moves alloc/free pairs out of loops: one alloc before the loop, one free after"


def apply(program):
    out = clone(program)
    if not hoist_pairs(out):
        return NotApplicable("no allocation inside a loop")
    return out


def hoist_pairs(program):
    """Moves every alloc/free pair inside a loop out of its loops, in place; returns how many moves
    it made."""
    hoisted = 0
    changed = True
    while changed:
        changed = False
        for thread in program["threads"]:
            for steps in walk_lists(thread["steps"]):
                for i, step in enumerate(steps):
                    if step["op"] == "loop" and hoist_pair(steps, i):
                        hoisted += 1
                        changed = True
                        break
    return hoisted


def hoist_pair(steps, i):
    """Moves one alloc/free pair of the loop steps[i]'s body before and after the loop; False when
    there is none."""
    loop = steps[i]
    body = loop["body"]
    for alloc in [s for s in body if s["op"] == "alloc"]:
        free = next((s for s in body if s["op"] == "free" and s["buffer"] == alloc["buffer"]), None)
        if free is None:
            continue
        body.remove(alloc)
        body.remove(free)
        steps.insert(i, alloc)
        steps.insert(i + 2, free)
        return True
    return False
