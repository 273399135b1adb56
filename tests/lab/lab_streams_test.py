#!/usr/bin/env python3
"""scripts/lab_streams.py on a synthetic trace built here: which trace stream a description
stream is, by the multiset of its GPU work, the legacy default stream included.

  lab_streams_test.py PATH/TO/lab_streams.py
"""
import gzip
import importlib.util
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import unittest

STREAMS = None


def program():
    # Thread main: a loop of copy + kernel on the legacy stream "null" and a synchronous copy
    # (cudaMemcpy, no stream: the legacy stream too); thread worker: kernels on its stream s1 and a
    # synchronous memset (the legacy stream). s2 (another name of the legacy stream) runs a kernel.
    return {
        "buffers": [{"name": "h0", "kind": "pinned", "bytes": 4096},
                    {"name": "d0", "kind": "device", "bytes": 4096}],
        "streams": [{"name": "null", "kind": "legacy"}, {"name": "s1", "kind": "nonblocking"},
                    {"name": "s2", "kind": "legacy"}],
        "threads": [
            {"name": "main", "steps": [
                {"op": "loop", "count": 2, "body": [
                    {"op": "copy", "dst": "d0", "src": "h0", "bytes": 4096, "stream": "null"},
                    {"op": "kernel", "stream": "null", "grid": 64, "us": 10, "buffer": "d0"}]},
                {"op": "copy", "dst": "h0", "src": "d0", "bytes": 4096, "async": False}]},
            {"name": "worker", "steps": [
                {"op": "kernel", "stream": "s1", "grid": 132, "us": 10, "buffer": "d0"},
                {"op": "kernel", "stream": "s1", "grid": 132, "us": 10, "buffer": "d0"},
                {"op": "memset", "buffer": "d0", "bytes": 4096, "async": False},
                {"op": "kernel", "stream": "s2", "grid": 8, "us": 10, "buffer": "d0"}]}]}


SCHEMA = """
  CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, streamId INTEGER, gridX INTEGER,
                                           gridY INTEGER, gridZ INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, streamId INTEGER, copyKind INTEGER,
                                           bytes INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, streamId INTEGER, bytes INTEGER);
"""


def trace(rows):
    """An in-memory trace of the three GPU op tables holding `rows` (INSERT statements)."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA + rows)
    return db


def threads_program(split):
    """Threads main and worker both issue to the legacy stream "null"; with `split`, main's loop
    moved to created streams (the multi-stream transform)."""
    main_stream = ["null_part0", "null_part1"] if split else ["null", "null"]
    return {
        "buffers": [{"name": "h0", "kind": "pinned", "bytes": 4096},
                    {"name": "d0", "kind": "device", "bytes": 4096}],
        "streams": [{"name": "null", "kind": "legacy"}] +
                   ([{"name": n, "kind": "blocking"} for n in main_stream] if split else []),
        "threads": [
            {"name": "main", "steps": [
                step for s in main_stream for step in (
                    {"op": "copy", "dst": "d0", "src": "h0", "bytes": 4096, "stream": s},
                    {"op": "kernel", "stream": s, "grid": 64, "us": 10, "buffer": "d0"})]},
            {"name": "worker", "steps": [
                {"op": "kernel", "stream": "null", "grid": 8, "us": 10, "buffer": "d0"},
                {"op": "kernel", "stream": "null", "grid": 8, "us": 10, "buffer": "d0"}]}]}


THREADS_SCHEMA = """
  CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, streamId INTEGER, correlationId INTEGER,
                                           gridX INTEGER, gridY INTEGER, gridZ INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, streamId INTEGER, correlationId INTEGER,
                                           copyKind INTEGER, bytes INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, streamId INTEGER, correlationId INTEGER,
                                           bytes INTEGER);
  CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (globalTid INTEGER, correlationId INTEGER);
"""


class LabStreamsTest(unittest.TestCase):
    def test_names_the_thread_whose_loop_on_a_shared_stream_was_split(self):
        pid = 4242 << 24
        db = sqlite3.connect(":memory:")
        db.executescript(THREADS_SCHEMA + f"""
          INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (5, 7, 1, 1, 4096), (25, 7, 3, 1, 4096);
          INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 7, 2, 64, 1, 1), (30, 7, 4, 64, 1, 1),
                                                        (40, 7, 5, 8, 1, 1), (50, 7, 6, 8, 1, 1);
          INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({pid | 11}, 1), ({pid | 11}, 2), ({pid | 11}, 3),
                                                         ({pid | 11}, 4), ({pid | 12}, 5), ({pid | 12}, 6);
        """)
        baseline, variant = threads_program(False), threads_program(True)
        self.assertEqual(STREAMS.thread_id(db, (0, 100), baseline, variant, "null", 7), 11)
        # one thread on the stream: its loop is the stream's, no thread to name
        alone = threads_program(False)
        alone["threads"] = alone["threads"][:1]
        self.assertIsNone(STREAMS.thread_id(db, (0, 100), alone, variant, "null", 7))


    def test_each_kept_window_names_its_own_stream_and_thread(self):
        # Three kept baseline runs (baseline.windows_ns): the split stream is trace stream 7 (main:
        # tid 11) in the first, 9 (main: tid 21) in the second; the third's work matches nothing.
        corpus = tempfile.mkdtemp(prefix="lab_streams_windows.")
        self.addCleanup(shutil.rmtree, corpus, ignore_errors=True)
        pid = 4242 << 24
        db = sqlite3.connect(os.path.join(corpus, "batch0.sqlite"))
        db.executescript(THREADS_SCHEMA + f"""
          INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (5, 7, 1, 1, 4096), (25, 7, 3, 1, 4096),
                                                        (105, 9, 11, 1, 4096), (125, 9, 13, 1, 4096);
          INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 7, 2, 64, 1, 1), (30, 7, 4, 64, 1, 1),
                                                        (40, 7, 5, 8, 1, 1), (50, 7, 6, 8, 1, 1),
                                                        (110, 9, 12, 64, 1, 1), (130, 9, 14, 64, 1, 1),
                                                        (140, 9, 15, 8, 1, 1), (150, 9, 16, 8, 1, 1),
                                                        (210, 3, 22, 64, 1, 1);
          INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
            ({pid | 11}, 1), ({pid | 11}, 2), ({pid | 11}, 3), ({pid | 11}, 4), ({pid | 12}, 5), ({pid | 12}, 6),
            ({pid | 21}, 11), ({pid | 21}, 12), ({pid | 21}, 13), ({pid | 21}, 14), ({pid | 22}, 15),
            ({pid | 22}, 16), ({pid | 31}, 22);
        """)
        db.commit()
        db.close()
        with gzip.open(os.path.join(corpus, "programs.jsonl.gz"), "wt") as f:
            for pid in ("p1", "p2"):
                f.write(json.dumps({"id": pid, "variants": {"baseline": threads_program(False),
                                                            "multi-stream": threads_program(True)}}) + "\n")
        baseline = {"window_ns": [0, 100], "windows_ns": [[0, 100], [100, 200], [200, 300]]}
        manifest = {"programs": [{"id": "p1", "trace": "batch0.sqlite", "baseline": baseline,
                                  "variants": {"multi-stream": {"finding": "single-stream"}}},
                                 {"id": "p2", "trace": "batch0.sqlite", "baseline": {"window_ns": [0, 100]},
                                  "variants": {"multi-stream": {"finding": "single-stream"}}}]}
        with open(os.path.join(corpus, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        STREAMS.annotate(corpus)
        with open(os.path.join(corpus, "manifest.json")) as f:
            p1, p2 = [p["variants"]["multi-stream"] for p in json.load(f)["programs"]]
        self.assertEqual(p1, {"finding": "single-stream", "stream_id": 7, "thread_id": 11,
                              "stream_ids": [7, 9, None], "thread_ids": [11, 21, None]})
        # One kept run (no windows_ns): named as today.
        self.assertEqual(p2, {"finding": "single-stream", "stream_id": 7, "thread_id": 11})

    def test_a_per_thread_default_stream_is_each_threads_own(self):
        # Threads main and worker both issue to "ptds" (cudaStreamPerThread): two trace streams.
        # The variant splits worker's loop: its key names worker's, which matches one trace stream.
        def ptds_program(split):
            worker = ["ptds_part0", "ptds_part1"] if split else ["ptds", "ptds"]
            return {
                "buffers": [{"name": "h0", "kind": "pinned", "bytes": 4096},
                            {"name": "d0", "kind": "device", "bytes": 4096}],
                "streams": [{"name": "ptds", "kind": "per-thread"}] +
                           ([{"name": n, "kind": "nonblocking"} for n in worker] if split else []),
                "threads": [
                    {"name": "main", "steps": [
                        {"op": "kernel", "stream": "ptds", "grid": 8, "us": 10, "buffer": "d0"},
                        {"op": "copy", "dst": "d0", "src": "h0", "bytes": 4096, "stream": "ptds"}]},
                    {"name": "worker", "steps": [
                        step for s in worker for step in (
                            {"op": "copy", "dst": "d0", "src": "h0", "bytes": 4096, "stream": s},
                            {"op": "kernel", "stream": s, "grid": 64, "us": 10, "buffer": "d0"})]}]}
        db = trace("""
          INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 15, 8, 1, 1), (30, 21, 64, 1, 1),
                                                        (50, 21, 64, 1, 1);
          INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (20, 15, 1, 4096), (25, 21, 1, 4096),
                                                        (45, 21, 1, 4096);
        """)
        baseline = ptds_program(False)
        self.assertEqual(STREAMS.stream_ids(db, (0, 100), baseline), {"ptds@main": 15, "ptds@worker": 21})
        self.assertEqual(STREAMS.split_key(baseline, ptds_program(True)), "ptds@worker")

    def test_a_per_thread_split_without_one_mover_names_no_stream(self):
        # Both threads move their loop off "ptds" (cudaStreamPerThread): no one thread's trace
        # stream to name. A created stream's split keeps its plain name.
        def program(streams, threads):
            return {"buffers": [{"name": "d0", "kind": "device", "bytes": 4096}], "streams": streams,
                    "threads": [{"name": name, "steps": [{"op": "kernel", "stream": s, "grid": 8, "us": 10,
                                                          "buffer": "d0"} for s in steps]}
                                for name, steps in threads]}
        ptds = [{"name": "ptds", "kind": "per-thread"}]
        parts = [{"name": "ptds_part0", "kind": "nonblocking"}, {"name": "ptds_part1", "kind": "nonblocking"}]
        baseline = program(ptds, [("main", ["ptds", "ptds"]), ("worker", ["ptds", "ptds"])])
        both = program(ptds + parts, [("main", ["ptds_part0", "ptds_part1"]),
                                      ("worker", ["ptds_part0", "ptds_part1"])])
        self.assertEqual(STREAMS.split_stream(baseline, both), "ptds")
        self.assertIsNone(STREAMS.split_key(baseline, both))
        created = [{"name": "s1", "kind": "blocking"}]
        split = program(created + [{"name": "s1_part0", "kind": "nonblocking"}],
                        [("main", ["s1_part0", "s1_part0"]), ("worker", ["s1_part0", "s1_part0"])])
        self.assertEqual(STREAMS.split_key(program(created, [("main", ["s1"]), ("worker", ["s1"])]), split), "s1")

    def test_legacy_stream_holds_every_threads_synchronous_copies_and_memsets(self):
        db = trace("""
          INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 7, 64, 1, 1), (30, 7, 64, 1, 1),
                                                        (40, 14, 132, 1, 1), (50, 14, 132, 1, 1),
                                                        (70, 7, 8, 1, 1);
          INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (5, 7, 1, 4096), (25, 7, 1, 4096), (60, 7, 2, 4096);
          INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (65, 7, 4096);
        """)
        self.assertEqual(STREAMS.stream_ids(db, (0, 100), program()), {"null": 7, "s1": 14, "s2": 7})

    def test_a_stream_whose_work_differs_gets_no_id(self):
        db = trace("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 7, 64, 1, 1), (40, 14, 132, 1, 1);")
        self.assertEqual(STREAMS.stream_ids(db, (0, 100), program()), {})


if __name__ == "__main__":
    spec = importlib.util.spec_from_file_location("lab_streams", sys.argv.pop(1))
    STREAMS = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(STREAMS)
    unittest.main()
