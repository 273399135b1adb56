"""merge-copies: adjacent copies between the same two buffers at contiguous offsets -> one copy
(many-small-copies: batch them into one copy). Total bytes stay the same."""
from ..program import NotApplicable, clone, walk_lists

ID = "merge-copies"
FINDING = "many-small-copies"
DOES = "merges runs of adjacent copies between the same buffers at contiguous offsets into one copy"


def apply(program):
    out = clone(program)
    merged = 0
    for thread in out["threads"]:
        for steps in walk_lists(thread["steps"]):
            merged += _merge(steps)
    if not merged:
        return NotApplicable("no adjacent copies at contiguous offsets")
    return out


def _merge(steps):
    merged = 0
    result = []
    for step in steps:
        last = result[-1] if result else None
        if last is not None and _continues(last, step):
            last["bytes"] += step["bytes"]
            merged += 1
        else:
            result.append(step)
    steps[:] = result
    return merged


def _continues(a, b):
    if a["op"] != "copy" or b["op"] != "copy":
        return False
    same = all(a.get(k) == b.get(k) for k in ("src", "dst", "stream"))
    return (same and a.get("async", True) == b.get("async", True)
            and a.get("src_offset", 0) + a["bytes"] == b.get("src_offset", 0)
            and a.get("dst_offset", 0) + a["bytes"] == b.get("dst_offset", 0))
