"""The rules of docs/lab.md for a program description; the C++ interpreter checks the same.

validate(program) returns a list of errors, each naming where it is ("thread main step 3.1: ...");
an empty list means the program is valid.
"""
from .program import BUFFER_KINDS, HOST_KINDS, SCHEMA, STREAM_KINDS

OPS = ("loop", "alloc", "free", "copy", "memset", "kernel", "record", "wait", "sync", "host",
       "host_read", "graph_launch", "prefetch")
GRAPH_OPS = ("kernel", "copy", "memset")
MAX_DEVICE_BYTES = 4 << 30


class _Checker:
    def __init__(self, program):
        self.p = program
        self.errors = []
        self.buffers = {}
        self.streams = {}
        self.events = set()
        self.graphs = {}

    def err(self, where, text):
        self.errors.append("%s: %s" % (where, text))

    def declared(self, key, fields):
        seen = set()
        items = self.p.get(key, [])
        if not isinstance(items, list):
            self.err(key, "not a list")
            return []
        for i, item in enumerate(items):
            name = item.get("name") if isinstance(item, dict) else None
            if not isinstance(name, str) or not name:
                self.err("%s[%d]" % (key, i), "needs a name")
                continue
            if name in seen:
                self.err("%s %s" % (key, name), "duplicate name")
            seen.add(name)
            for field, allowed in fields.items():
                if item.get(field) not in allowed:
                    self.err("%s %s" % (key, name), "%s must be one of %s" % (field, allowed))
        return items

    def run(self):
        p = self.p
        if p.get("schema") != SCHEMA:
            self.err("program", "schema must be %s" % SCHEMA)
        if not isinstance(p.get("id"), str) or not p.get("id"):
            self.err("program", "needs an id")
        for b in self.declared("buffers", {"kind": BUFFER_KINDS}):
            if not _positive(b.get("bytes")):
                self.err("buffer %s" % b.get("name"), "bytes must be a positive integer")
            self.buffers[b.get("name")] = (b.get("kind"), b.get("bytes") or 0)
        streams = self.declared("streams", {"kind": STREAM_KINDS})
        self.streams = {s.get("name"): s.get("kind") for s in streams}
        for s in streams:
            if "priority" not in s:
                continue
            if s["priority"] != "high":
                self.err("streams %s" % s.get("name"), "priority must be high")
            elif s.get("kind") not in ("blocking", "nonblocking"):
                self.err("streams %s" % s.get("name"), "only a created stream has a priority")
        self.events = {e.get("name") for e in self.declared("events", {})}
        for g in self.declared("graphs", {}):
            self.graph(g)
        threads = self.declared("threads", {})
        if not threads:
            self.err("program", "needs at least one thread")
        alloc_names = set()
        for t in threads:
            live = {}
            self.steps("thread %s step " % t.get("name"), t.get("steps"), live, alloc_names)
            for name in live:
                self.err("thread %s" % t.get("name"), "buffer %s is never freed" % name)
        self.memory(alloc_names)
        return self.errors

    def graph(self, g):
        where = "graph %s" % g.get("name")
        stream = g.get("stream")
        if self.streams.get(stream) not in ("blocking", "nonblocking"):
            self.err(where, "must be captured on a created stream")
        body = g.get("body")
        if not isinstance(body, list) or not body:
            self.err(where, "needs a non-empty body")
            return
        for i, step in enumerate(body):
            w = "%s step %d" % (where, i + 1)
            if not isinstance(step, dict) or step.get("op") not in GRAPH_OPS:
                self.err(w, "a graph body holds only kernel, copy and memset steps")
                continue
            if not step.get("async", True) or step.get("stream") != stream:
                self.err(w, "must be asynchronous on the graph's stream %s" % stream)
            self.step(w, step, {}, set())
        self.graphs[g.get("name")] = g

    def steps(self, prefix, steps, live, alloc_names):
        if not isinstance(steps, list):
            self.err(prefix.strip(), "steps must be a list")
            return
        for i, step in enumerate(steps):
            where = "%s%d" % (prefix, i + 1)
            if not isinstance(step, dict) or step.get("op") not in OPS:
                self.err(where, "unknown op %r" % (step.get("op") if isinstance(step, dict) else step))
                continue
            if step["op"] == "loop":
                if not _positive(step.get("count")):
                    self.err(where, "loop count must be a positive integer")
                before = dict(live)
                self.steps(where + ".", step.get("body"), live, alloc_names)
                if live != before:
                    self.err(where, "a loop body must free what it allocates")
                    live.clear()
                    live.update(before)
            else:
                self.step(where, step, live, alloc_names)

    def step(self, where, s, live, alloc_names):
        op = s["op"]
        check = getattr(self, "op_" + op)
        check(where, s, live, alloc_names)

    def need_buffer(self, where, s, field, live, kinds=BUFFER_KINDS):
        name = s.get(field)
        info = self.buffers.get(name) or live.get(name)
        if info is None:
            self.err(where, "%s %r is not a declared or allocated buffer" % (field, name))
            return None
        if info[0] not in kinds:
            self.err(where, "%s %s is %s memory; needs %s" % (field, name, info[0], "/".join(kinds)))
        return info

    def need_stream(self, where, s):
        if s.get("stream") not in self.streams:
            self.err(where, "stream %r is not declared" % s.get("stream"))

    def need_event(self, where, s):
        if s.get("event") not in self.events:
            self.err(where, "event %r is not declared" % s.get("event"))

    def op_alloc(self, where, s, live, alloc_names):
        name = s.get("buffer")
        if name in self.buffers or name in live:
            self.err(where, "buffer %r is already declared or allocated" % name)
        if s.get("kind") not in BUFFER_KINDS or not _positive(s.get("bytes")):
            self.err(where, "alloc needs a kind in %s and positive bytes" % (BUFFER_KINDS,))
        live[name] = (s.get("kind"), s.get("bytes") or 0)
        alloc_names.add((name, s.get("kind"), s.get("bytes") or 0))

    def op_free(self, where, s, live, alloc_names):
        if s.get("buffer") not in live:
            self.err(where, "free of %r, which is not allocated here" % s.get("buffer"))
        live.pop(s.get("buffer"), None)

    def op_copy(self, where, s, live, alloc_names):
        if not _positive(s.get("bytes")):
            self.err(where, "copy bytes must be a positive integer")
        for field, off in (("src", "src_offset"), ("dst", "dst_offset")):
            info = self.need_buffer(where, s, field, live)
            offset = s.get(off, 0)
            if not isinstance(offset, int) or offset < 0:
                self.err(where, "%s must be a non-negative integer" % off)
            elif info and _positive(s.get("bytes")) and offset + s["bytes"] > info[1]:
                self.err(where, "%s range ends past buffer %s" % (field, s.get(field)))
        self.async_stream(where, s)

    def async_stream(self, where, s):
        if s.get("async", True) not in (True, False):
            self.err(where, "async must be true or false")
        if s.get("async", True):
            self.need_stream(where, s)
        elif "stream" in s:
            self.err(where, "a synchronous %s names no stream" % s["op"])

    def op_memset(self, where, s, live, alloc_names):
        info = self.need_buffer(where, s, "buffer", live, ("device", "managed"))
        if not _positive(s.get("bytes")) or (info and s.get("bytes", 0) > info[1]):
            self.err(where, "memset bytes must be positive and within the buffer")
        self.async_stream(where, s)

    def op_kernel(self, where, s, live, alloc_names):
        self.need_stream(where, s)
        if not _positive(s.get("grid")) or not _positive(s.get("us")):
            self.err(where, "kernel needs a positive grid and us")
        block = s.get("block", 256)
        if not isinstance(block, int) or not 32 <= block <= 1024 or block % 32:
            self.err(where, "block must be a multiple of 32 in [32, 1024]")
        if "buffer" in s:
            info = self.need_buffer(where, s, "buffer", live, ("device", "managed"))
            touch = s.get("touch_bytes", info[1] if info else 0)
            if info and (not isinstance(touch, int) or touch < 0 or touch > info[1]):
                self.err(where, "touch_bytes must be within the buffer")
        elif "touch_bytes" in s:
            self.err(where, "touch_bytes without a buffer")

    def op_record(self, where, s, live, alloc_names):
        self.need_event(where, s)
        self.need_stream(where, s)

    op_wait = op_record

    def op_sync(self, where, s, live, alloc_names):
        what = s.get("what")
        if what == "stream":
            self.need_stream(where, s)
        elif what == "event":
            self.need_event(where, s)
        elif what != "device":
            self.err(where, "sync what must be device, stream or event")

    def op_host(self, where, s, live, alloc_names):
        if not _positive(s.get("us")):
            self.err(where, "host us must be positive")

    def op_host_read(self, where, s, live, alloc_names):
        self.need_buffer(where, s, "buffer", live, HOST_KINDS)

    def op_graph_launch(self, where, s, live, alloc_names):
        self.need_stream(where, s)
        if s.get("graph") not in self.graphs:
            self.err(where, "graph %r is not declared" % s.get("graph"))

    def op_prefetch(self, where, s, live, alloc_names):
        self.need_buffer(where, s, "buffer", live, ("managed",))
        self.need_stream(where, s)
        if s.get("to") not in ("device", "host"):
            self.err(where, "prefetch to must be device or host")

    def memory(self, alloc_names):
        total = sum(b for k, b in self.buffers.values() if k in ("device", "managed"))
        total += sum(b for _, k, b in alloc_names if k in ("device", "managed"))
        if total > MAX_DEVICE_BYTES:
            self.err("program", "device and managed buffers take %d bytes, over 4 GiB" % total)


def _positive(x):
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def validate(program):
    if not isinstance(program, dict):
        return ["program: not a JSON object"]
    return _Checker(program).run()
