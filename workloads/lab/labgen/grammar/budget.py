"""A rough serial estimate of a program's run time, to keep each program's GPU time small."""
from ..program import buffers, graph_body, kernel_waves, unroll

PINNED_BPS = 50e9
PAGEABLE_BPS = 8e9
DEVICE_BPS = 1.5e12
FAULT_BPS = 3e9


def estimate_us(program):
    """Sum of every op's duration over all threads (threads taken as serial: an upper bound)."""
    kinds = {n: b["kind"] for n, b in buffers(program).items()}
    sizes = {n: b["bytes"] for n, b in buffers(program).items()}
    total = 0.0
    for thread in program["threads"]:
        for step in unroll(thread["steps"]):
            total += _step_us(program, step, kinds, sizes)
    return total


def _step_us(program, step, kinds, sizes):
    op = step["op"]
    if op == "kernel":
        touch = step.get("touch_bytes", sizes.get(step.get("buffer"), 0))
        extra = touch / (FAULT_BPS if kinds.get(step.get("buffer")) == "managed" else DEVICE_BPS)
        return step["us"] * kernel_waves(step) + extra * 1e6
    if op == "copy":
        host = {kinds[step["src"]], kinds[step["dst"]]}
        rate = PAGEABLE_BPS if "pageable" in host else PINNED_BPS if host - {"device"} else DEVICE_BPS
        return 5 + step["bytes"] / rate * 1e6
    if op == "memset":
        return 3 + step["bytes"] / DEVICE_BPS * 1e6
    if op == "host":
        return step["us"]
    if op == "graph_launch":
        return sum(_step_us(program, s, kinds, sizes) for s in graph_body(program, step["graph"]))
    if op == "alloc":
        return 20 + (step["bytes"] / 4e9 * 1e6 if step["kind"] in ("pinned", "managed") else 0)
    return 0.0


def device_bytes(program):
    return sum(b["bytes"] for b in buffers(program).values() if b["kind"] in ("device", "managed"))


def shrink(program):
    """Halve the largest loop count over 3 of the program (in place), else the durations of its longest
    kernels and host steps; False when nothing is left to shrink."""
    loops = [s for t in program["threads"] for s in _loops(t["steps"]) if s["count"] > 3]
    if not loops:
        return _shorten(program)
    biggest = max(loops, key=lambda s: s["count"])
    biggest["count"] = max(1, biggest["count"] // 2)
    return True


def _loops(steps):
    for s in steps:
        if s["op"] == "loop":
            yield s
            yield from _loops(s["body"])


def _shorten(program):
    timed = [s for t in program["threads"] for s in _walk(t["steps"])
             if s["op"] in ("kernel", "host") and s["us"] > 4]
    timed += [s for g in program["graphs"] for s in g["body"] if s["op"] == "kernel" and s["us"] > 4]
    for s in timed:
        s["us"] //= 2
    return bool(timed)


def _walk(steps):
    for s in steps:
        yield s
        if s["op"] == "loop":
            yield from _walk(s["body"])
