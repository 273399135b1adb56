"""pin-host: make the pageable host buffers that copies use pinned (pageable-memcpy).

Copies keep their API: an asynchronous copy stays asynchronous, a synchronous one synchronous.
"""
from ..program import NotApplicable, all_steps, buffers, clone

ID = "pin-host"
FINDING = "pageable-memcpy"
DOES = "makes every pageable host buffer a copy uses pinned (cudaMallocHost)"


def apply(program):
    out = clone(program)
    kinds = buffers(out)
    used = set()
    for step in all_steps(out):
        if step["op"] == "copy":
            used |= {b for b in (step["src"], step["dst"]) if kinds[b]["kind"] == "pageable"}
    for graph in out["graphs"]:
        for step in graph["body"]:
            if step["op"] == "copy":
                used |= {b for b in (step["src"], step["dst"]) if kinds[b]["kind"] == "pageable"}
    if not used:
        return NotApplicable("no copy uses pageable memory")
    for b in out["buffers"]:
        if b["name"] in used:
            b["kind"] = "pinned"
    for step in all_steps(out):
        if step["op"] == "alloc" and step["buffer"] in used:
            step["kind"] = "pinned"
    return out
