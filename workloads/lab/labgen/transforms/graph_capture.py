"""graph-capture: the launches of a loop body of several short kernels, all on one created stream,
captured into a CUDA graph and replayed once per iteration (host-launch-bound).

The body's leading run of kernels and asynchronous copies/memsets on one stream becomes the graph;
what follows it (synchronizes, host reads, host work) stays in the loop after the launch.
"""
from ..program import NotApplicable, clone, fresh_name, names, stream_kinds, walk_lists

ID = "graph-capture"
FINDING = "host-launch-bound"
DOES = "captures a loop body's launches (>= 3 kernels on one stream) into a graph, one launch per iteration"
MIN_KERNELS = 3


def apply(program):
    out = clone(program)
    kinds = stream_kinds(out)
    captured = 0
    for thread in out["threads"]:
        for steps in walk_lists(thread["steps"]):
            for loop in steps:
                if loop["op"] == "loop" and _capture(out, loop, kinds):
                    captured += 1
    if not captured:
        return NotApplicable("no loop body launches %d+ kernels on one created stream" % MIN_KERNELS)
    return out


def _capture(program, loop, kinds):
    body = loop["body"]
    n = 0
    while n < len(body) and body[n]["op"] in ("kernel", "copy", "memset") \
            and body[n].get("async", True):
        n += 1
    launches = body[:n]
    streams = {s["stream"] for s in launches}
    if sum(s["op"] == "kernel" for s in launches) < MIN_KERNELS or len(streams) != 1:
        return False
    declared = {b["name"] for b in program["buffers"]}
    used = {s.get(k) for s in launches for k in ("buffer", "src", "dst")} - {None}
    if not used <= declared:
        return False
    stream = streams.pop()
    if kinds.get(stream) not in ("blocking", "nonblocking"):
        return False
    if any(s["op"] in ("loop", "alloc", "free") for s in body[n:]):
        return False
    name = fresh_name(names(program, "graphs"), "graph")
    program["graphs"].append({"name": name, "stream": stream, "body": launches})
    loop["body"] = [{"op": "graph_launch", "graph": name, "stream": stream}] + body[n:]
    return True
