"""Shared helpers over program descriptions (docs/lab.md, schema cuoverlap-lab/1)."""
import copy

SCHEMA = "cuoverlap-lab/1"
HOST_KINDS = ("pinned", "pageable", "managed")
BUFFER_KINDS = ("device", "pinned", "pageable", "managed")
STREAM_KINDS = ("blocking", "nonblocking", "legacy", "per-thread")
# Streams whose ops the legacy default stream orders (the per-thread default stream is blocking).
LEGACY_ORDERED = ("blocking", "legacy", "per-thread")
WAVE_BLOCKS = 132 * 8  # resident 256-thread blocks on an H100: one wave


class NotApplicable:
    """A transform's answer when the program has nothing its fix changes."""

    def __init__(self, reason):
        self.reason = reason

    def __repr__(self):
        return "NotApplicable(%r)" % self.reason


def clone(program):
    return copy.deepcopy(program)


def walk(steps):
    """Every step of a list, loop bodies included, in program order (each step once)."""
    for step in steps:
        yield step
        if step["op"] == "loop":
            yield from walk(step["body"])


def walk_lists(steps):
    """Every step list: the list itself, then each loop body inside it."""
    yield steps
    for step in steps:
        if step["op"] == "loop":
            yield from walk_lists(step["body"])


def all_steps(program):
    for thread in program["threads"]:
        yield from walk(thread["steps"])


def unroll(steps):
    """The steps in execution order, loop iterations repeated (the same step objects)."""
    for step in steps:
        if step["op"] == "loop":
            for _ in range(step["count"]):
                yield from unroll(step["body"])
        else:
            yield step


def buffers(program):
    """name -> {"kind", "bytes"} for declared and allocated buffers."""
    result = {b["name"]: {"kind": b["kind"], "bytes": b["bytes"]} for b in program["buffers"]}
    for step in all_steps(program):
        if step["op"] == "alloc":
            result[step["buffer"]] = {"kind": step["kind"], "bytes": step["bytes"]}
    return result


def stream_kinds(program):
    return {s["name"]: s["kind"] for s in program["streams"]}


def graph_body(program, name):
    for graph in program["graphs"]:
        if graph["name"] == name:
            return graph["body"]
    raise KeyError(name)


def is_async(step):
    return step.get("async", True)


def step_stream(step):
    """The stream a step issues to, or None (synchronous copies/memsets, host steps)."""
    op = step["op"]
    if op in ("copy", "memset") and not is_async(step):
        return None
    if op in ("copy", "memset", "kernel", "record", "wait", "graph_launch", "prefetch"):
        return step["stream"]
    return None


def effects(step, program):
    """(reads, writes): the buffers a GPU step reads and writes."""
    op = step["op"]
    if op == "copy":
        return {step["src"]}, {step["dst"]}
    if op == "kernel":
        b = step.get("buffer")
        return ({b}, {b}) if b else (set(), set())
    if op == "memset":
        return set(), {step["buffer"]}
    if op == "graph_launch":
        reads, writes = set(), set()
        for inner in graph_body(program, step["graph"]):
            r, w = effects(inner, program)
            reads |= r
            writes |= w
        return reads, writes
    return set(), set()


def conflicts(a, b):
    """Whether two (reads, writes) pairs touch a buffer one of them writes."""
    return bool(a[1] & (b[0] | b[1]) or b[1] & a[0])


def fresh_name(taken, base):
    taken = set(taken)
    if base not in taken:
        return base
    i = 1
    while "%s_%d" % (base, i) in taken:
        i += 1
    return "%s_%d" % (base, i)


def names(program, key):
    return [x["name"] for x in program[key]]


def all_buffer_names(program):
    return set(buffers(program))


def thread_stream(program, thread):
    """The stream a thread issues most of its GPU work to (created streams first), or None."""
    counts = {}
    for step in walk(thread["steps"]):
        s = step_stream(step)
        if s is not None and step["op"] in ("copy", "memset", "kernel", "graph_launch"):
            counts[s] = counts.get(s, 0) + 1
    if not counts:
        return None
    return max(counts, key=lambda s: (counts[s], -list(counts).index(s)))


def wave_blocks(step):
    """A kernel step's blocks resident at once on the device (132 SMs, 2048 threads and 32 blocks per SM)."""
    return 132 * min(32, max(1, 2048 // step.get("block", 256)))


def kernel_waves(step):
    """Waves of resident blocks the grid needs."""
    return -(-step["grid"] // wave_blocks(step))
