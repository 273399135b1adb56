"""Each transform changes exactly what its fix changes; remove-sync and drop-wait stay safe."""
import copy
import re
import unittest

from labgen.ordering import ISSUING, before_masks, conflict_masks, thread_ops
from labgen.program import NotApplicable, all_steps, buffers, stream_kinds, walk, walk_lists
from labgen.hostread import unprotected_reads
from labgen.transforms import (copy_ahead, defer_read, drop_wait, graph_capture, multi_stream,
                               overlap_host, pin_host, remove_sync, stream_priority)
from labgen.validate import validate

from .corpus import executed, lines

PART = re.compile(r"_(part\d+|next(_\d+)?)$")


def norm(program, drop=(), fields=(), rename=False):
    """The executed steps without the ops in `drop` and the fields in `fields`."""
    out = []
    for s in executed(program):
        if s["op"] in drop:
            continue
        t = {k: v for k, v in s.items() if k not in fields}
        if rename:
            t = {k: PART.sub("", v) if isinstance(v, str) else v for k, v in t.items()}
        out.append(t)
    return out


def count(program, pred):
    return sum(1 for s in executed(program) if pred(s))


def _sync(s):
    return s["op"] == "sync"


class DiffersInWhatItFixes(unittest.TestCase):
    def each(self, tid):
        found = 0
        for line in lines():
            if tid in line["variants"]:
                found += 1
                yield line["id"], line["variants"]["baseline"], line["variants"][tid]
        self.assertGreater(found, 0)

    def test_remove_sync(self):
        for pid, base, var in self.each("remove-sync"):
            self.assertEqual(norm(base, ["sync"]), norm(var, ["sync"]), pid)
            self.assertLess(count(var, _sync), count(base, _sync), pid)

    def test_defer_read(self):
        for pid, base, var in self.each("defer-read"):
            drop = ["sync", "record", "host_read"]
            self.assertEqual(norm(base, drop), norm(var, drop, rename=True), pid)
            self.assertLess(count(var, lambda s: _sync(s) and s["what"] != "event"),
                            count(base, lambda s: _sync(s) and s["what"] != "event"), pid)

    def test_pin_host(self):
        for pid, base, var in self.each("pin-host"):
            self.assertEqual(norm(base, ["alloc", "free"], ["kind"]),
                             norm(var, ["alloc", "free"], ["kind"]), pid)
            # Pinned once, at setup: a buffer the transform pins is declared (allocated before the
            # range), never allocated or freed inside it.
            was = {s["buffer"] for s in all_steps(base) if s["op"] == "alloc" and s["kind"] == "pinned"}
            self.assertFalse([s for s in all_steps(var) if s["op"] in ("alloc", "free")
                              and s["buffer"] not in was and buffers(base)[s["buffer"]]["kind"] == "pageable"
                              and buffers(var)[s["buffer"]]["kind"] == "pinned"], pid)
            b, v = buffers(base), buffers(var)
            changed = {n for n in b if b[n]["kind"] != v[n]["kind"]}
            self.assertTrue(changed, pid)
            self.assertTrue(all(b[n]["kind"] == "pageable" and v[n]["kind"] == "pinned"
                                for n in changed), pid)
            declared = {x["name"] for x in var["buffers"]}
            self.assertTrue(changed <= declared, pid)

    def test_async_copy_and_memset(self):
        for tid, op in (("async-copy", "copy"), ("async-memset", "memset")):
            for pid, base, var in self.each(tid):
                fields = ["async", "stream"]
                self.assertEqual(norm(base, ["sync"], fields), norm(var, ["sync"], fields), pid)
                self.assertEqual(count(var, lambda s: s["op"] == op and not s.get("async", True)),
                                 0, pid)

    def test_own_streams(self):
        for pid, base, var in self.each("own-streams"):
            self.assertEqual(norm(base, ["sync"], ["stream"]), norm(var, ["sync"], ["stream"]), pid)
            kinds = stream_kinds(var)
            self.assertFalse([s for s in all_steps(var) if kinds.get(s.get("stream")) == "legacy"])

    def test_nonblocking_streams(self):
        for pid, base, var in self.each("nonblocking-streams"):
            self.assertEqual(norm(base, ["sync"]), norm(var, ["sync"]), pid)
            self.assertNotIn("blocking", stream_kinds(var).values(), pid)

    def test_drop_wait(self):
        for pid, base, var in self.each("drop-wait"):
            self.assertEqual(norm(base, ["wait"]), norm(var, ["wait"]), pid)
            waits = lambda s: s["op"] == "wait"
            self.assertLess(count(var, waits), count(base, waits), pid)

    def test_merge_copies(self):
        for pid, base, var in self.each("merge-copies"):
            self.assertEqual(norm(base, ["copy"]), norm(var, ["copy"]), pid)

    def test_hoist_alloc(self):
        for pid, base, var in self.each("hoist-alloc"):
            self.assertEqual(norm(base, ["alloc", "free"]), norm(var, ["alloc", "free"]), pid)
            allocs = lambda s: s["op"] == "alloc"
            self.assertLess(count(var, allocs), count(base, allocs), pid)

    def test_prefetch_managed(self):
        for pid, base, var in self.each("prefetch-managed"):
            self.assertEqual(norm(base), norm(var, ["prefetch"]), pid)
            self.assertGreater(count(var, lambda s: s["op"] == "prefetch"), 0, pid)

    def test_graph_capture(self):
        for pid, base, var in self.each("graph-capture"):
            self.assertEqual(norm(base), norm(var), pid)
            self.assertGreater(len(var["graphs"]), len(base["graphs"]), pid)

    def test_overlap_host(self):
        for pid, base, var in self.each("overlap-host"):
            self.assertEqual(norm(base, ["host"]), norm(var, ["host"]), pid)
            hosts = lambda p: sorted(s["us"] for s in executed(p) if s["op"] == "host")
            self.assertEqual(hosts(base), hosts(var), pid)
            self.assertNotEqual(norm(base), norm(var), pid)

    def test_multi_stream(self):
        for pid, base, var in self.each("multi-stream"):
            drop = ["sync", "record", "wait"]
            # the whole advice makes a synchronous copy or memset asynchronous on the lane
            fields = ["stream", "async"]
            self.assertEqual(norm(base, drop, fields), norm(var, drop, fields, True), pid)
            self.assertGreater(len(var["streams"]), len(base["streams"]), pid)

    def test_copy_ahead(self):
        for pid, base, var in self.each("copy-ahead"):
            drop = ["record", "wait"]
            ahead = re.compile(r"_ahead$")
            unnamed = [{k: ahead.sub("", v) if isinstance(v, str) else v for k, v in s.items()}
                       for s in norm(var, drop)]
            self.assertEqual(norm(base, drop), unnamed, pid)  # the same steps in the same order
            moved = [s for s in executed(var) if s["op"] == "copy" and s["stream"].endswith("_ahead")]
            self.assertTrue(moved, pid)
            self.assertTrue(all(s["op"] == "copy" for s in executed(var)
                                if s.get("stream", "").endswith("_ahead") and s["op"] not in drop), pid)

    def test_stream_priority(self):
        for pid, base, var in self.each("stream-priority"):
            self.assertEqual(norm(base), norm(var), pid)  # the same steps, only stream priorities
            raised = [s for s in var["streams"] if s.get("priority") == "high"]
            self.assertTrue(raised, pid)
            self.assertTrue(all(s["kind"] in ("blocking", "nonblocking") for s in raised), pid)
            self.assertEqual([dict(s, priority=None) for s in base["streams"]],
                             [dict(s, priority=None) for s in var["streams"]], pid)


def program(steps, buffers_=("d0", "d1"), streams=("s0", "s1", "s2"), events=("e0", "e1")):
    p = {"schema": "cuoverlap-lab/1", "id": "t", "graphs": [],
         "buffers": [{"name": b, "kind": "device", "bytes": 4096} for b in buffers_]
         + [{"name": "h0", "kind": "pinned", "bytes": 4096}],
         "streams": [{"name": s, "kind": "nonblocking"} for s in streams],
         "events": [{"name": e} for e in events],
         "threads": [{"name": "main", "steps": steps}]}
    assert validate(p) == [], validate(p)
    return p


def k(stream, buffer):
    return {"op": "kernel", "stream": stream, "grid": 1, "us": 5, "buffer": buffer}


def rec(event, stream):
    return {"op": "record", "event": event, "stream": stream}


def wait(event, stream):
    return {"op": "wait", "event": event, "stream": stream}


D2H = {"op": "copy", "dst": "h0", "src": "d0", "bytes": 4096, "stream": "s1"}
READ = {"op": "host_read", "buffer": "h0"}


def sync(stream=None):
    return {"op": "sync", "what": "stream", "stream": stream} if stream else {"op": "sync", "what": "device"}


class OverlapHostMovesHostWorkBetweenLaunches(unittest.TestCase):
    @staticmethod
    def loop_body(p):
        return [(s["op"], s.get("us")) for s in p["threads"][0]["steps"][0]["body"]]

    def test_host_work_between_launches_after_a_blocking_step_moves_after_them(self):
        # f9 g009155's second loop: a cudaMallocHost opens the body, so no launch comes before its
        # first blocking step; the host steps between the kernels after it still move after them.
        host = lambda us: {"op": "host", "us": us}
        p = program([{"op": "loop", "count": 2, "body": [
            {"op": "alloc", "buffer": "t0", "kind": "pinned", "bytes": 4096}, k("s0", "d0"),
            {"op": "free", "buffer": "t0"}, k("s0", "d0"), host(40), k("s0", "d1"), host(36), k("s0", "d0"),
            sync("s0")]}])
        out = overlap_host.apply(p)
        self.assertEqual(validate(out), [])
        self.assertEqual(self.loop_body(out), [("alloc", None), ("kernel", 5), ("free", None), ("kernel", 5),
                                               ("kernel", 5), ("kernel", 5), ("host", 40), ("host", 36),
                                               ("sync", None)])

    def test_host_work_stays_before_a_pageable_download(self):
        # A download to pageable memory returns only once the GPU work before it is done: host work
        # moved past it runs after that work instead of beside it (g020288: 0.9 ms slower). Host work
        # between the launches before it moves only up to it; with a pinned buffer, past it.
        host = lambda us: {"op": "host", "us": us}
        for kind, expect in (("pageable", [("kernel", 5), ("kernel", 5), ("host", 50), ("copy", None),
                                           ("sync", None)]),
                             ("pinned", [("kernel", 5), ("kernel", 5), ("copy", None), ("host", 50),
                                         ("sync", None)])):
            p = program([{"op": "loop", "count": 2, "body": [
                k("s0", "d0"), host(50), k("s0", "d0"),
                {"op": "copy", "dst": "h0", "src": "d0", "bytes": 4096, "stream": "s0"}, sync("s0")]}])
            next(b for b in p["buffers"] if b["name"] == "h0")["kind"] = kind
            self.assertEqual(validate(p), [])
            out = overlap_host.apply(p)
            self.assertEqual(validate(out), [], kind)
            self.assertEqual(self.loop_body(out), expect, kind)


class PinHostPinsAtSetup(unittest.TestCase):
    def test_a_buffer_allocated_in_the_range_becomes_a_declared_pinned_one(self):
        upload = {"op": "copy", "dst": "d0", "src": "t0", "bytes": 4096, "stream": "s0"}
        p = program([sync(),
                     {"op": "loop", "count": 3, "body": [
                         {"op": "alloc", "buffer": "t0", "kind": "pageable", "bytes": 4096}, upload,
                         k("s0", "d0"), sync("s0"), {"op": "free", "buffer": "t0"}]}])
        out = pin_host.apply(p)
        self.assertEqual(validate(out), [])
        # No cudaMallocHost inside the range: the program pins its staging buffer once, at setup.
        self.assertFalse([s for s in all_steps(out) if s["op"] in ("alloc", "free")])
        self.assertIn({"name": "t0", "kind": "pinned", "bytes": 4096}, out["buffers"])
        self.assertEqual(norm(p, ["alloc", "free"]), norm(out, ["alloc", "free"]))


class StreamPriorityAppliesWhereAKernelFillsTheDevice(unittest.TestCase):
    def test_raises_the_sub_wave_stream_beside_a_full_wave(self):
        wide = dict(k("s0", "d0"), grid=132 * 8)  # one full wave of 256-thread blocks
        p = program([wide, k("s1", "d1")])
        out = stream_priority.apply(p)
        self.assertEqual({s["name"]: s.get("priority") for s in out["streams"]},
                         {"s0": None, "s1": "high", "s2": None})
        self.assertEqual(validate(out), [])

    def test_not_without_a_kernel_that_fills_every_sm(self):
        p = program([dict(k("s0", "d0"), grid=132 * 8 - 1), k("s1", "d1")])
        self.assertIsInstance(stream_priority.apply(p), NotApplicable)

    def test_not_for_the_legacy_stream(self):
        p = program([dict(k("s0", "d0"), grid=2112)])
        p["streams"].append({"name": "null", "kind": "legacy"})
        p["threads"][0]["steps"].append(k("null", "d1"))
        self.assertEqual(validate(p), [])
        self.assertIsInstance(stream_priority.apply(p), NotApplicable)
        p["streams"][-1]["priority"] = "high"
        self.assertTrue(validate(p))  # a priority is for created streams only


class GraphCaptureCapturesEveryRun(unittest.TestCase):
    def test_two_runs_split_by_host_work_are_two_graphs(self):
        first = [k("s0", "d0"), k("s0", "d1"), D2H | {"stream": "s0"}, k("s0", "d0")]
        second = [k("s0", "d1"), k("s0", "d0"), k("s0", "d1")]
        host = {"op": "host", "us": 5}
        p = program([{"op": "loop", "count": 4, "body": first + [host] + second + [sync("s0"), READ]}])
        out = graph_capture.apply(p)
        self.assertEqual(validate(out), [])
        self.assertEqual([g["body"] for g in out["graphs"]], [first, second])
        self.assertEqual(out["threads"][0]["steps"][0]["body"],
                         [{"op": "graph_launch", "graph": "graph", "stream": "s0"}, host,
                          {"op": "graph_launch", "graph": "graph_1", "stream": "s0"},
                          sync("s0"), READ])
        self.assertEqual(executed(p), executed(out))

    def test_a_run_it_refuses_stays_between_the_graphs(self):
        short = [k("s0", "d0"), k("s0", "d1")]  # two kernels: too few for a graph of its own
        mixed = [k("s0", "d0"), k("s1", "d1"), k("s0", "d0")]  # two streams
        run = [k("s2", "d0"), k("s2", "d1"), k("s2", "d0")]
        body = short + [sync("s0")] + mixed + [rec("e0", "s1")] + run
        p = program([{"op": "loop", "count": 2, "body": body}])
        out = graph_capture.apply(p)
        self.assertEqual(validate(out), [])
        self.assertEqual([g["body"] for g in out["graphs"]], [run])
        self.assertEqual(out["threads"][0]["steps"][0]["body"],
                         short + [sync("s0")] + mixed + [rec("e0", "s1"),
                          {"op": "graph_launch", "graph": "graph", "stream": "s2"}])
        self.assertEqual(executed(p), executed(out))


class DeferReadDefersEveryLoop(unittest.TestCase):
    def loop(self, stream):
        return {"op": "loop", "count": 3,
                "body": [k(stream, "d0"), dict(D2H, stream=stream), sync(stream), READ]}

    def test_both_threads_loops_each_with_their_own_buffer_and_events(self):
        p = program([self.loop("s1")])
        p["threads"].append({"name": "second", "steps": [self.loop("s2"), self.loop("s2")]})
        self.assertEqual(validate(p), [])
        out = defer_read.apply(p)
        self.assertEqual(validate(out), [])
        self.assertEqual(unprotected_reads(out), set())
        # Three loops, each with a second buffer and two events of its own.
        self.assertEqual(sorted(b["name"] for b in out["buffers"] if b["name"].startswith("h0")),
                         ["h0", "h0_next", "h0_next_1", "h0_next_2"])
        self.assertEqual(len(out["events"]), len(p["events"]) + 6)
        for thread in out["threads"]:
            syncs = [s for s in walk(thread["steps"]) if s["op"] == "sync"]
            self.assertTrue(syncs)
            self.assertTrue(all(s["what"] == "event" for s in syncs), thread["name"])
        drop = ["sync", "record", "host_read"]
        self.assertEqual(norm(p, drop), norm(out, drop, rename=True))

    def test_other_blocking_steps_of_the_body_stay(self):
        body = [k("s1", "d1"), sync("s1"), k("s1", "d0"), dict(D2H, stream="s1"), sync(), READ,
                k("s1", "d1")]
        p = program([{"op": "loop", "count": 2, "body": body}])
        out = defer_read.apply(p)
        self.assertEqual(validate(out), [])
        self.assertEqual(unprotected_reads(out), set())
        syncs = [(s["what"], s.get("stream")) for s in walk(out["threads"][0]["steps"])
                 if s["op"] == "sync" and s["what"] != "event"]
        self.assertEqual(syncs, [("stream", "s1")] * 2)  # the device one deferred, not the others

    def test_not_where_the_synchronize_also_protects_a_synchronous_copy(self):
        # The next iteration's synchronous copy overwrites d0, which this one's kernel writes.
        upload = {"op": "copy", "dst": "d0", "src": "d1", "bytes": 4096, "async": False}
        body = [upload, k("s1", "d0"), dict(D2H, stream="s1"), sync("s1"), READ]
        p = program([{"op": "loop", "count": 2, "body": body}])
        self.assertEqual(unprotected_reads(p), set())
        self.assertIsInstance(defer_read.apply(p), NotApplicable)


class MultiStreamSplitsLoopsWithHostCode(unittest.TestCase):
    H2D = {"op": "copy", "dst": "d0", "src": "h0", "bytes": 4096, "stream": "s1"}

    def loop(self, body, count=3):
        return {"op": "loop", "count": count, "body": body}

    def test_host_code_and_reads_stay_and_read_the_iterations_copy(self):
        body = [self.H2D, k("s1", "d0"), dict(D2H, stream="s1"), sync("s1"), READ,
                {"op": "host", "us": 5}]
        p = program([self.loop(body)])
        out = multi_stream.apply(p)
        self.assertIsInstance(out, dict)
        self.assertEqual(validate(out), [])
        self.assertEqual(unprotected_reads(out), set())
        steps = [s for s in walk(out["threads"][0]["steps"])]
        self.assertTrue(all("stream" not in s for s in steps if s["op"] in ("host", "host_read")))
        reads = [s["buffer"] for s in steps if s["op"] == "host_read"]
        self.assertEqual(reads, ["h0", "h0_part1", "h0_part2"])  # h0 is written by the copy-out
        drop = ["sync", "record", "wait"]
        self.assertEqual(norm(p, drop, ["stream"]), norm(out, drop, ["stream"], True))

    def test_a_loop_of_gpu_work_alone_goes_first(self):
        with_host = self.loop([self.H2D, k("s1", "d0"), {"op": "host", "us": 5}])
        gpu_only = self.loop([dict(self.H2D, stream="s2"), k("s2", "d1")])
        p = program([with_host, sync(), gpu_only])
        out = multi_stream.apply(p)
        self.assertEqual(out["threads"][0]["steps"][0], with_host)  # left as it was
        self.assertNotIn("s2", {s.get("stream") for s in walk(out["threads"][0]["steps"])})

    def test_a_device_synchronize_in_the_body_stays(self):
        p = program([self.loop([self.H2D, k("s1", "d0"), sync(), {"op": "host", "us": 5}])])
        out = multi_stream.apply(p)
        self.assertEqual(validate(out), [])
        self.assertEqual(count(out, lambda s: s["op"] == "sync" and s["what"] == "device"), 3)

    def test_not_with_allocations_in_the_body(self):
        alloc = {"op": "alloc", "buffer": "d1", "kind": "device", "bytes": 4096}
        free = {"op": "free", "buffer": "d1"}
        p = program([self.loop([alloc, self.H2D, k("s1", "d0"), free])], buffers_=("d0",))
        self.assertIsInstance(multi_stream.apply(p), NotApplicable)

    def test_the_whole_advice_on_a_legacy_loop_with_synchronous_pageable_copies(self):
        # cudaMemcpy from pageable memory and kernels on the legacy stream: split over blocking
        # created streams (the legacy stream's barriers with other threads stay), copies made
        # asynchronous on the iteration's stream from pinned buffers, each read synchronized.
        h2d = {"op": "copy", "dst": "d0", "src": "h0", "bytes": 4096, "async": False}
        d2h = {"op": "copy", "dst": "h0", "src": "d0", "bytes": 4096, "async": False}
        p = program([], streams=("s0",))
        p["threads"][0]["steps"] = [self.loop([h2d, k("null", "d0"), d2h, READ])]
        p["streams"].append({"name": "null", "kind": "legacy"})
        p["buffers"][-1]["kind"] = "pageable"
        self.assertEqual(validate(p), [])
        out = multi_stream.apply(p)
        self.assertIsInstance(out, dict)
        self.assertEqual(validate(out), [])
        self.assertEqual(unprotected_reads(out), set())
        lanes = [s for s in out["streams"] if s["name"].startswith("null_part")]
        self.assertEqual([s["kind"] for s in lanes], ["blocking"] * 3)
        copies = [s for s in walk(out["threads"][0]["steps"]) if s["op"] == "copy"]
        self.assertTrue(all(c.get("async", True) and c["stream"].startswith("null_part") for c in copies))
        self.assertTrue(all(b["kind"] != "pageable" for b in out["buffers"]))


class CopyAheadKeepsTheKernelsInOrder(unittest.TestCase):
    H2D = {"op": "copy", "dst": "d0", "src": "h0", "bytes": 4096, "stream": "s1"}

    def loop(self, body, count=3):
        return {"op": "loop", "count": count, "body": body}

    def test_an_accumulator_loop_copies_its_input_ahead_into_two_buffers(self):
        # d1 is an accumulator every iteration reads and writes: it keeps one buffer and its
        # kernels stay in order on s1; the input d0 alternates with d0_ahead.
        p = program([self.loop([self.H2D, k("s1", "d0"), k("s1", "d1"), {"op": "host", "us": 5}])])
        out = copy_ahead.apply(p)
        self.assertIsInstance(out, dict)
        self.assertEqual(validate(out), [])
        steps = executed(out)
        kernels = [s for s in steps if s["op"] == "kernel"]
        self.assertEqual({s["stream"] for s in kernels}, {"s1"})
        self.assertEqual([s["buffer"] for s in kernels if s["buffer"] != "d1"], ["d0", "d0_ahead", "d0"])
        copies = [s for s in steps if s["op"] == "copy"]
        self.assertEqual([(s["dst"], s["stream"]) for s in copies],
                         [("d0", "s1_ahead"), ("d0_ahead", "s1_ahead"), ("d0", "s1_ahead")])
        # Each iteration's kernels wait for its copy's event, its copy for the kernels that read
        # the buffer two iterations before (the event of the same parity).
        ops = [(s["op"], s.get("event"), s.get("stream")) for s in steps if s["op"] != "host"]
        self.assertEqual(ops[:5], [("wait", "s1_free0", "s1_ahead"), ("copy", None, "s1_ahead"),
                                   ("record", "s1_in0", "s1_ahead"), ("wait", "s1_in0", "s1"),
                                   ("kernel", None, "s1")])
        self.assertEqual(ops[6], ("record", "s1_free0", "s1"))
        self.assertEqual(ops[-1], ("record", "s1_free0", "s1"))  # the third iteration: buffer 0 again

    def test_only_that_loop_shape(self):
        for body, why in (([self.H2D, k("s1", "d0"), dict(D2H, stream="s1")], "copy-out"),
                          ([self.H2D, k("s1", "d0"), sync("s1")], "more than"),
                          ([k("s1", "d0"), self.H2D, k("s1", "d0")], "copies after"),
                          ([dict(self.H2D, bytes=1024), k("s1", "d0")], "part of its buffer")):
            result = copy_ahead.apply(program([self.loop(body)]))
            self.assertIsInstance(result, NotApplicable)
            self.assertIn(why, result.reason)

    def test_not_where_the_input_buffer_is_used_after_the_loop(self):
        p = program([self.loop([self.H2D, k("s1", "d0")]), k("s1", "d0")])
        self.assertIn("outside the loop", copy_ahead.apply(p).reason)


class RemoveSyncIsSafe(unittest.TestCase):
    def test_keeps_the_sync_a_read_needs(self):
        p = program([k("s1", "d0"), D2H, sync("s1"), READ])
        self.assertIsInstance(remove_sync.apply(p), NotApplicable)

    def test_removes_a_sync_of_the_wrong_stream_or_a_second_one(self):
        p = program([k("s1", "d0"), D2H, sync("s0"), sync("s1"), sync(), READ, k("s0", "d1"), sync()])
        steps = remove_sync.apply(p)["threads"][0]["steps"]
        self.assertEqual([s["op"] for s in steps], ["kernel", "copy", "sync", "host_read", "kernel"])
        self.assertIn(steps[2], (sync("s1"), sync()))

    def test_a_wait_carries_protection(self):
        p = program([D2H, rec("e0", "s1"), wait("e0", "s0"), sync("s0"), READ])
        self.assertIsInstance(remove_sync.apply(p), NotApplicable)
        p = program([D2H, rec("e0", "s1"), sync("s0"), READ, sync("s1")])
        self.assertIsInstance(remove_sync.apply(p), dict)


class DropWaitIsSafe(unittest.TestCase):
    def test_keeps_a_wait_for_data(self):
        p = program([k("s0", "d0"), rec("e0", "s0"), wait("e0", "s1"), k("s1", "d0")])
        self.assertIsInstance(drop_wait.apply(p), NotApplicable)

    def test_drops_a_wait_for_other_data(self):
        p = program([k("s0", "d0"), rec("e0", "s0"), wait("e0", "s1"), k("s1", "d1")])
        out = drop_wait.apply(p)
        self.assertEqual([s["op"] for s in out["threads"][0]["steps"]], ["kernel", "record", "kernel"])
        self.assertEqual(drop_wait.finding(p), "cross-stream-kernel-wait")

    def test_keeps_a_chain_that_carries_data(self):
        p = program([k("s0", "d0"), rec("e0", "s0"), wait("e0", "s1"), k("s1", "d1"),
                     rec("e1", "s1"), wait("e1", "s2"), k("s2", "d0")])
        self.assertIsInstance(drop_wait.apply(p), NotApplicable)

    def test_a_loop_carries_a_dependence_to_the_next_iteration(self):
        # s1 reads d0 after the wait; the next iteration's s0 kernel rewrites d0 (no wait for
        # that), so the wait is still the only thing ordering s0 -> s1.
        body = [k("s0", "d0"), rec("e0", "s0"), wait("e0", "s1"), k("s1", "d0")]
        p = program([{"op": "loop", "count": 3, "body": copy.deepcopy(body)}])
        self.assertIsInstance(drop_wait.apply(p), NotApplicable)

    def test_corpus_drops_no_ordered_dependence(self):
        # defer-read too: a synchronize it defers may have ordered one iteration's GPU work
        # before the next's.
        for tid in ("drop-wait", "defer-read"):
            for line in lines():
                var = line["variants"].get(tid)
                if var is None:
                    continue
                base = line["variants"]["baseline"]
                for bt, vt in zip(base["threads"], var["threads"]):
                    self.assertOrdered(base, bt, var, vt, "%s %s" % (line["id"], tid))

    def assertOrdered(self, base, bt, var, vt, pid):
        bops, vops = thread_ops(base, bt["steps"]), thread_ops(var, vt["steps"])
        bi = [i for i, o in enumerate(bops) if o[0]["op"] in ISSUING]
        vi = [i for i, o in enumerate(vops) if o[0]["op"] in ISSUING]
        self.assertEqual(len(bi), len(vi), pid)
        to_var = dict(zip(bi, vi))
        bmask, vmask = before_masks(bops), before_masks(vops)
        for j, conflicts in conflict_masks(bops).items():
            ordered = conflicts & bmask.get(j, 0)
            for i in bi:
                if ordered >> i & 1:
                    self.assertTrue(vmask[to_var[j]] >> to_var[i] & 1, "%s ops %d -> %d" % (pid, i, j))


if __name__ == "__main__":
    unittest.main()
