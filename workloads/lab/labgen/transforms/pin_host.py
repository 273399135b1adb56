"""pin-host: make the pageable host buffers that copies use pinned (pageable-memcpy).

Copies keep their API: an asynchronous copy stays asynchronous, a synchronous one synchronous.
A buffer allocated and freed inside a loop is pinned once: its alloc/free pair moves out of the
loop (as hoist-alloc does). Pinning it in place would call cudaMallocHost and cudaFreeHost every
iteration, slow calls that synchronize the device: not the fix the finding advises ("allocate the
host buffers with cudaMallocHost, or pin existing ones with cudaHostRegister"), and in the lab it
made such programs up to 13 ms slower instead of faster.
"""
from ..program import NotApplicable, all_steps, buffers, clone
from .hoist_alloc import hoist_pairs

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
    hoist_pairs(out, used)
    return out
