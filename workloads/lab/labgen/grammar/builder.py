"""A program under construction, and the random draws (sizes, durations, grids) shapes share."""
import math

from ..program import SCHEMA

KIB = 1024
MIB = 1024 * KIB


class Builder:
    """Declares buffers, streams and events with fresh names; shapes add threads' steps."""

    def __init__(self, rng, program_id, defects):
        self.rng = rng
        self.defects = defects
        self.program = {"schema": SCHEMA, "id": program_id, "buffers": [], "streams": [],
                        "events": [], "graphs": [], "threads": []}
        self.counts = {}

    def _name(self, prefix):
        n = self.counts.get(prefix, 0)
        self.counts[prefix] = n + 1
        return "%s%d" % (prefix, n)

    def buffer(self, kind, nbytes):
        name = self._name({"device": "d", "pinned": "h", "pageable": "p", "managed": "m"}[kind])
        self.program["buffers"].append({"name": name, "kind": kind, "bytes": nbytes})
        return name

    def host_buffer(self, nbytes):
        """A host buffer for copies: pageable when the program has that defect, else pinned."""
        pageable = self.defects.get("pageable") and self.rng.random() < 0.7
        return self.buffer("pageable" if pageable else "pinned", nbytes)

    def alloc_name(self):
        return self._name("t")

    def stream(self, kind):
        if kind in ("legacy", "per-thread"):
            for s in self.program["streams"]:
                if s["kind"] == kind:
                    return s["name"]
        name = {"legacy": "null", "per-thread": "ptds"}.get(kind) or self._name("s")
        self.program["streams"].append({"name": name, "kind": kind})
        return name

    def work_stream(self):
        """The stream a thread's work goes to: the legacy stream with that defect, else created
        (blocking with that defect) or now and then the per-thread default stream."""
        if self.defects.get("legacy") and self.rng.random() < 0.75:
            return self.stream("legacy")
        if self.rng.random() < 0.12:
            return self.stream("per-thread")
        return self.stream("blocking" if self.defects.get("blocking") else "nonblocking")

    def created_stream(self):
        return self.stream("blocking" if self.defects.get("blocking") else "nonblocking")

    def event(self):
        name = self._name("e")
        self.program["events"].append({"name": name})
        return name

    def thread(self, steps):
        name = "main" if not self.program["threads"] else self._name("worker")
        self.program["threads"].append({"name": name, "steps": steps})
        return name


def log_uniform(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def copy_bytes(rng, lo=4 * KIB, hi=64 * MIB):
    """A copy size, log-uniform, a multiple of 4 KiB."""
    return max(4 * KIB, int(log_uniform(rng, lo, hi)) // (4 * KIB) * (4 * KIB))


def kernel_us(rng, lo=2, hi=2000):
    return max(1, int(round(log_uniform(rng, lo, hi))))


def grid(rng, small=False):
    """1 block to several waves of 132 SMs x 8 blocks of 256 threads."""
    if small or rng.random() < 0.35:
        return rng.choice([1, 2, 4, 8, 16, 32, 64])
    return rng.choice([132, 264, 528, 1056, 2112, 3168])


def kernel(rng, stream, buffer=None, small=False, lo=2, hi=2000, touch=None):
    step = {"op": "kernel", "stream": stream, "grid": grid(rng, small), "block": 256,
            "us": kernel_us(rng, lo, hi)}
    if buffer is not None:
        step["buffer"] = buffer
        if touch is not None:
            step["touch_bytes"] = touch
    return step


def copy(src, dst, nbytes, stream, sync=False, src_offset=0, dst_offset=0):
    step = {"op": "copy", "dst": dst, "src": src, "bytes": nbytes}
    if sync:
        step["async"] = False
    else:
        step["stream"] = stream
    if src_offset:
        step["src_offset"] = src_offset
    if dst_offset:
        step["dst_offset"] = dst_offset
    return step


def copies(rng, src, dst, nbytes, stream, sync=False, split=False):
    """One copy, or with the split defect the same bytes in many small adjacent copies."""
    if not split or nbytes < 16 * KIB:
        return [copy(src, dst, nbytes, stream, sync)]
    parts = min(nbytes // (4 * KIB), rng.choice([4, 8, 16, 32, 64, 128, 256]))
    chunk = nbytes // parts
    return [copy(src, dst, chunk, stream, sync, i * chunk, i * chunk) for i in range(parts)]


def memset(buffer, nbytes, stream, sync=False):
    step = {"op": "memset", "buffer": buffer, "bytes": nbytes}
    if sync:
        step["async"] = False
    else:
        step["stream"] = stream
    return step


def sync_stream(stream):
    return {"op": "sync", "what": "stream", "stream": stream}


def sync_device():
    return {"op": "sync", "what": "device"}


def loop(count, body):
    return {"op": "loop", "count": count, "body": body}
