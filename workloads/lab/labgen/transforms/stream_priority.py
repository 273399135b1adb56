"""stream-priority: the created streams whose kernels are all smaller than one wave get the device's
greatest priority, where a kernel of another stream fills every SM (device-saturating-kernel: a
small kernel that waited for another stream's kernel that held every SM). The block scheduler then
gives a freed SM to the small kernel before the large kernel's next block, instead of after its
last one. The work is the same; only the streams' priorities change."""
from ..program import NotApplicable, all_steps, clone, stream_kinds, wave_blocks

ID = "stream-priority"
FINDING = "device-saturating-kernel"
DOES = "gives created streams of only sub-wave kernels the greatest priority beside a stream whose kernel fills every SM"

CREATED = ("blocking", "nonblocking")


def apply(program):
    kinds = stream_kinds(program)
    kernels = {}  # stream -> its kernel steps (graph bodies on their graph's stream)
    for step in all_steps(program):
        if step["op"] == "kernel":
            kernels.setdefault(step["stream"], []).append(step)
    for graph in program["graphs"]:
        for step in graph["body"]:
            if step["op"] == "kernel":
                kernels.setdefault(graph["stream"], []).append(step)
    filling = {s for s, steps in kernels.items()
               if kinds.get(s) != "legacy" and any(_fills_every_sm(k) for k in steps)}
    if not filling:
        return NotApplicable("no kernel off the legacy stream fills every SM")
    small = [s for s, steps in kernels.items()
             if kinds.get(s) in CREATED and s not in filling and filling - {s}
             and not any(_fills_every_sm(k) for k in steps)]
    if not small:
        return NotApplicable("no created stream of only sub-wave kernels beside a stream that fills every SM")
    out = clone(program)
    for stream in out["streams"]:
        if stream["name"] in small:
            stream["priority"] = "high"
    return out


def _fills_every_sm(kernel):
    return kernel["grid"] >= wave_blocks(kernel)
