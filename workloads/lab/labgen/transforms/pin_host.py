"""pin-host: make the pageable host buffers that copies use pinned (pageable-memcpy).

Copies keep their API: an asynchronous copy stays asynchronous, a synchronous one synchronous.
A buffer the program allocates inside its range (`alloc`, in a loop or not) is pinned once, at
setup: it becomes a declared buffer, allocated before the range and freed after it, and its
alloc/free steps go. Pinning it in place would call cudaMallocHost and cudaFreeHost every
iteration, slow calls that synchronize the device: not the fix the finding advises ("allocate the
host buffers with cudaMallocHost, or pin existing ones with cudaHostRegister"), and in the lab it
made such programs up to 13 ms slower instead of faster. Pinning it once inside the range, where
the pageable allocation was, would still put one cudaMallocHost between GPU work: 1-5 ms of
device idle that a program pinning its staging buffers at startup never pays (g000085's and
g000305's fixes ran 5.4 and 1.1 ms slower than their baselines that way).
"""
from ..program import NotApplicable, all_steps, buffers, clone, walk_lists

ID = "pin-host"
FINDING = "pageable-memcpy"
DOES = "makes every pageable host buffer a copy uses pinned (cudaMallocHost), those allocated in the range pinned once at setup"


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
    allocated = {}  # buffer allocated in the range -> its largest allocation
    for thread in out["threads"]:
        for steps in walk_lists(thread["steps"]):
            kept = []
            for step in steps:
                if step["op"] not in ("alloc", "free") or step["buffer"] not in used:
                    kept.append(step)
                elif step["op"] == "alloc":
                    allocated[step["buffer"]] = max(allocated.get(step["buffer"], 0), step["bytes"])
            steps[:] = kept  # in place: walk_lists goes on into the loops of this list
    out["buffers"] += [{"name": name, "kind": "pinned", "bytes": size} for name, size in allocated.items()]
    return out
