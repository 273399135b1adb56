"""prefetch-managed: before the first kernel that touches a managed buffer after the host last
touched it, a cudaMemPrefetchAsync of the buffer to the device on the kernel's stream
(managed-page-faults). The host owns a managed buffer at the start (it first touched it), after
allocating it and after reading it; loops are followed around their back edge."""
from ..program import NotApplicable, buffers, clone

ID = "prefetch-managed"
FINDING = "managed-page-faults"
DOES = "prefetches a managed buffer to the device before the first kernel that would fault it in"


def apply(program):
    out = clone(program)
    managed = {n for n, b in buffers(out).items() if b["kind"] == "managed"}
    if not managed:
        return NotApplicable("no managed memory")
    declared = {b["name"] for b in out["buffers"] if b["kind"] == "managed"}
    inserted = 0
    for thread in out["threads"]:
        steps, _, count = _process(thread["steps"], set(declared), managed)
        thread["steps"] = steps
        inserted += count
    if not inserted:
        return NotApplicable("every managed buffer is already on the device when kernels use it")
    return out


def _process(steps, host_owned, managed):
    """(new steps, buffers the host owns after them, prefetches inserted)."""
    out, count = [], 0
    owned = set(host_owned)
    for step in steps:
        op = step["op"]
        if op == "loop":
            _, after_once, _ = _process(step["body"], owned, managed)
            body, owned_end, n = _process(step["body"], owned | after_once, managed)
            step["body"] = body
            owned = owned_end
            count += n
        elif op == "kernel" and step.get("buffer") in owned:
            out.append({"op": "prefetch", "buffer": step["buffer"], "to": "device",
                        "stream": step["stream"]})
            owned.discard(step["buffer"])
            count += 1
        elif op in ("alloc", "host_read") and step["buffer"] in managed:
            owned.add(step["buffer"])
        elif op == "prefetch":
            (owned.add if step["to"] == "host" else owned.discard)(step["buffer"])
        out.append(step)
    return out, owned, count
