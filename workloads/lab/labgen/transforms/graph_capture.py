"""graph-capture: the launches of a loop body of several short kernels, all on one created stream,
captured into CUDA graphs and replayed once per iteration (host-launch-bound).

Every maximal run of kernels and asynchronous copies/memsets in the body (>= 3 kernels, one created
stream, declared buffers) becomes its own graph, launched where the run was; what separates the runs
(synchronizes, host reads, host work, event records and waits) stays where it is between the
launches. A body that allocates, frees or holds a loop is left alone.
"""
from ..program import NotApplicable, clone, fresh_name, names, stream_kinds, walk_lists

ID = "graph-capture"
FINDING = "host-launch-bound"
DOES = "captures each run of a loop body's launches (>= 3 kernels on one stream) into a graph, one launch per run per iteration"
MIN_KERNELS = 3
LAUNCHES = ("kernel", "copy", "memset")


def apply(program):
    out = clone(program)
    kinds = stream_kinds(out)
    captured = 0
    for thread in out["threads"]:
        for steps in walk_lists(thread["steps"]):
            for loop in steps:
                if loop["op"] == "loop":
                    captured += _capture(out, loop, kinds)
    if not captured:
        return NotApplicable("no loop body launches %d+ kernels on one created stream" % MIN_KERNELS)
    return out


def _capture(program, loop, kinds):
    """Replaces each capturable run of launches in the loop's body by a graph launch; returns how
    many it replaced."""
    body = loop["body"]
    if any(s["op"] in ("loop", "alloc", "free") for s in body):
        return 0
    out = []
    captured = 0
    for launches in _runs(body):
        stream = _graph_stream(program, launches, kinds)
        if stream is None:
            out += launches
            continue
        name = fresh_name(names(program, "graphs"), "graph")
        program["graphs"].append({"name": name, "stream": stream, "body": launches})
        out.append({"op": "graph_launch", "graph": name, "stream": stream})
        captured += 1
    loop["body"] = out
    return captured


def _runs(body):
    """The body split into maximal runs of launches and the single steps between them."""
    run = []
    for step in body:
        if step["op"] in LAUNCHES and step.get("async", True):
            run.append(step)
            continue
        if run:
            yield run
            run = []
        yield [step]
    if run:
        yield run


def _graph_stream(program, launches, kinds):
    """The stream a run of steps can be captured on as one graph, or None."""
    if sum(s["op"] == "kernel" for s in launches) < MIN_KERNELS:
        return None
    streams = {s.get("stream") for s in launches}
    if len(streams) != 1:
        return None
    declared = {b["name"] for b in program["buffers"]}
    used = {s.get(k) for s in launches for k in ("buffer", "src", "dst")} - {None}
    if not used <= declared:
        return None
    stream = streams.pop()
    return stream if kinds.get(stream) in ("blocking", "nonblocking") else None
