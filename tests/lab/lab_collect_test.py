#!/usr/bin/env python3
"""scripts/lab_collect.py on a synthetic trace built here: spans from the GPU ops inside each
`lab ID VARIANT #REP` range, medians, the kept baseline rep, failed runs, and the trimmed trace.

  lab_collect_test.py PATH/TO/lab_collect.py
"""
import contextlib
import gzip
import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

COLLECT = None


def make_trace(path):
    db = sqlite3.connect(path)
    db.executescript("""
      CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
      CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, textId INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, streamId INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, bytes INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, bytes INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, nameId INTEGER,
                                                globalTid INTEGER, correlationId INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (start INTEGER, globalPid INTEGER,
                                                   correlationId INTEGER, eventId INTEGER);
      CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
      CREATE TABLE TARGET_INFO_CUDA_STREAM (streamId INTEGER, contextId INTEGER, flag INTEGER);
      INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (0, 1, 0), (5, 1, 1), (9, 1, 1);
      CREATE TABLE CUOVERLAP_STREAM_ORIGIN (processId INTEGER, contextId INTEGER, streamId INTEGER,
                                            correlationId INTEGER, creator TEXT);
      INSERT INTO CUOVERLAP_STREAM_ORIGIN VALUES (7, 1, 0, 1, NULL), (7, 1, 5, 2, 'cudaStreamCreate_v3020'),
                                                 (7, 1, 9, 3, NULL), (7, 1, 3, 1, 'cudaStreamCreate_v3020');
      INSERT INTO TARGET_INFO_GPU VALUES (0, 'H100');
      INSERT INTO StringIds VALUES (1, 'lab p1 baseline #2'), (2, 'lab warm-up');
    """)
    ranges = [  # name, start, end; p1 baseline #2 is named through StringIds
        ("lab warm-up", 0, 900),
        ("lab p1 baseline #1", 1000, 2000), ("lab p1 fix #1", 2000, 3000),
        (None, 3000, 4000), ("lab p1 fix #2", 4000, 5000),
        ("lab p1 baseline #3", 5000, 6000), ("lab p1 fix #3", 6000, 7000),
        ("lab p2 baseline #1", 7000, 8000), ("lab p2 fix #1", 8000, 9000),
        ("lab p3 baseline #1", 9000, 10000),
    ]
    for name, start, end in ranges:
        text_id = 1 if name is None else None
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?)", (start, end, name, text_id))
    ops = {  # table -> (start, end): spans p1 baseline 500, 300, 400; fix 200, 100, (failed)
        "KERNEL": [(100, 800), (1100, 1500), (3100, 3200), (5100, 5300), (7100, 7300),
                   (8050, 8950), (9500, 10500)],
        "MEMCPY": [(1500, 1600), (2100, 2300), (3300, 3400), (4100, 4200), (6100, 6200), (7300, 7400)],
        "MEMSET": [(5300, 5500), (6300, 6350)],
    }
    for table, rows in ops.items():
        db.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_{table} VALUES (?, ?, 0)", rows)
    # A stream only a run left out used (9), and one no op used (5): neither stays.
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (200, 300, 9)")
    pid = 7 << 24  # nsys ids: globalTid = pid << 24 | tid, globalPid = pid << 24
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?)",
                   [(50, 60, pid | 1, 1), (3050, 3060, pid | 1, 2), (5050, 5060, pid | 1, 3),
                    (7050, 7060, pid | 2, 4)])
    # CUDA event records carry no timestamp: kept with the runtime call that recorded them
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (0, ?, ?, ?)",
                   [(pid, 1, 10), (pid, 3, 30), (pid, 4, 40), (8 << 24, 3, 99)])
    # The memory each op touched has no time either: kept with the call of its correlation id.
    db.execute("CREATE TABLE CUOVERLAP_OP_BUFFERS (globalPid INTEGER, correlationId INTEGER, address INTEGER, "
               "bytes INTEGER, access INTEGER)")
    db.executemany("INSERT INTO CUOVERLAP_OP_BUFFERS VALUES (?, ?, ?, 4096, 3)",
                   [(pid, 1, 100), (pid, 2, 200), (pid, 3, 300), (pid, 3, 301), (pid, 4, 400), (8 << 24, 3, 999)])
    # Allocations and frees (start, address, operation 0 allocation / 1 free): every allocation that
    # lived in a kept run, made before it or not, and its free, made after it or not.
    db.execute("CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER, globalPid INTEGER, address INTEGER, "
               "bytes INTEGER, memKind INTEGER, memoryOperationType INTEGER)")
    db.executemany("INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (?, ?, ?, 4096, 2, ?)",
                   [(50, pid, 0xA, 0), (100, pid, 0xB, 0), (900, pid, 0xB, 1), (5200, pid, 0xC, 0),
                    (5500, pid, 0xA, 1), (6100, pid, 0xD, 0), (6500, pid, 0xE, 0), (6900, pid, 0xD, 1),
                    (7500, pid, 0xE, 1), (9500, pid, 0xF, 0), (5100, pid, 0x10, 0), (6200, pid, 0x10, 1)])
    db.commit()
    db.close()


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


class LabCollectTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="lab_collect_test.")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        trace = os.path.join(cls.dir, "batch0.sqlite")
        make_trace(trace)
        programs = [{"id": p, "seed": i, "shape": "chain", "findings": {"fix": "sync-in-loop"},
                     "variants": {"baseline": {}, "fix": {}}} for i, p in enumerate(["p1", "p2", "p3"])]
        # A fix that answers two findings (drop-wait dropping waits of both kinds) names both.
        programs[1]["findings"]["fix"] = ["event-wait-serialization", "cross-stream-kernel-wait"]
        write_jsonl(os.path.join(cls.dir, "programs.jsonl"), programs)
        results = [{"id": p, "variant": v, "rep": r, "host_us": 1.0, "ok": True}
                   for p, v, r in [("p1", "baseline", 1), ("p1", "fix", 1), ("p1", "baseline", 2),
                                   ("p1", "baseline", 3), ("p1", "fix", 3), ("p2", "baseline", 1),
                                   ("p2", "fix", 1), ("p3", "baseline", 1)]]
        results.append({"id": "p1", "variant": "fix", "rep": 2, "host_us": 1.0, "ok": False,
                        "error": "threads[0].steps[1]: kernel: launch failed"})
        write_jsonl(os.path.join(cls.dir, "results.jsonl"), results)
        cls.out = os.path.join(cls.dir, "corpus")
        subprocess.run([sys.executable, COLLECT, cls.out, "--machine", "H100 test", "--date", "2026-01-01",
                        "--batch", trace, os.path.join(cls.dir, "programs.jsonl"),
                        os.path.join(cls.dir, "results.jsonl")], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(cls.out, "manifest.json")) as f:
            cls.manifest = json.load(f)
        # Again with every variant's kept run (the fixed programs' own traces).
        cls.variants = os.path.join(cls.dir, "variants")
        subprocess.run([sys.executable, COLLECT, os.path.join(cls.dir, "corpus2"), "--variant-traces", cls.variants,
                        "--batch", trace, os.path.join(cls.dir, "programs.jsonl"),
                        os.path.join(cls.dir, "results.jsonl")], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(cls.variants, "index.json")) as f:
            cls.index = json.load(f)

    def test_manifest_lists_of_numbers_on_one_line(self):
        # lab_manifest.dump: a number a line had made the committed manifests 1.6x larger.
        with open(os.path.join(self.out, "manifest.json")) as f:
            text = f.read()
        self.assertIn('"spans_ns": [500, 300, 400]', text)
        self.assertIn('"window_ns": [5000, 6000]', text)
        self.assertTrue(text.endswith("}\n"))

    def test_manifest_header(self):
        self.assertEqual(self.manifest["schema"], "cuoverlap-lab-corpus/1")
        self.assertEqual(self.manifest["machine"], "H100 test")
        self.assertEqual(self.manifest["date"], "2026-01-01")

    def test_spans_medians_and_kept_rep(self):
        p1 = self.manifest["programs"][0]
        self.assertEqual(p1["id"], "p1")
        self.assertEqual(p1["trace"], "batch0.sqlite")
        self.assertEqual(p1["baseline"]["spans_ns"], [500, 300, 400])
        self.assertEqual(p1["baseline"]["median_ns"], 400)
        self.assertEqual(p1["baseline"]["window_ns"], [5000, 6000])  # rep 3 holds the median
        self.assertEqual(p1["variants"]["fix"], {"finding": "sync-in-loop", "spans_ns": [200, 250],
                                                 "median_ns": 225})

    def test_failed_runs_and_programs(self):
        ids = [p["id"] for p in self.manifest["programs"]]
        self.assertEqual(ids, ["p1", "p2"])  # p3's only op runs past its range's end
        failed = {(f["id"], f["variant"], f.get("rep")): f["reason"] for f in self.manifest["failed"]}
        self.assertIn("launch failed", failed[("p1", "fix", 2)])
        self.assertEqual(failed[("p3", "baseline", 1)], "no GPU op inside the range")
        self.assertIn(("p3", "baseline", None), failed)
        # p2's fix: a kernel inside its range: span 900.
        self.assertEqual(self.manifest["programs"][1]["variants"]["fix"]["spans_ns"], [900])

    def test_a_fix_of_two_findings_names_both(self):
        self.assertEqual(self.manifest["programs"][1]["variants"]["fix"]["finding"],
                         ["event-wait-serialization", "cross-stream-kernel-wait"])

    def test_trimmed_trace_keeps_only_kept_windows(self):
        db = sqlite3.connect(os.path.join(self.out, "batch0.sqlite"))
        kernels = db.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start").fetchall()
        self.assertEqual(kernels, [(5100,), (7100,)])
        self.assertEqual(db.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_MEMSET ORDER BY start").fetchall(),
                         [(5300,)])
        self.assertEqual(db.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start").fetchall(),
                         [(5050,), (7050,)])
        self.assertEqual(db.execute("SELECT text FROM NVTX_EVENTS ORDER BY start").fetchall(),
                         [("lab p1 baseline #3",), ("lab p2 baseline #1",)])
        self.assertEqual(db.execute("SELECT eventId FROM CUPTI_ACTIVITY_KIND_CUDA_EVENT ORDER BY eventId").fetchall(),
                         [(30,), (40,)])
        self.assertEqual(db.execute("SELECT COUNT(*) FROM StringIds").fetchone()[0], 2)
        self.assertEqual(db.execute("SELECT name FROM TARGET_INFO_GPU").fetchone()[0], "H100")
        self.assertEqual(db.execute("SELECT streamId FROM TARGET_INFO_CUDA_STREAM").fetchall(), [(0,)])
        # The origins table names streams too, but keeps no stream: the kept streams' rows stay, and
        # those that share a correlation id with one (3: the reader tells created from per-thread by them).
        self.assertEqual(db.execute("SELECT streamId FROM CUOVERLAP_STREAM_ORIGIN ORDER BY streamId").fetchall(),
                         [(0,), (3,)])
        self.assertEqual(db.execute("SELECT address FROM CUOVERLAP_OP_BUFFERS ORDER BY address").fetchall(),
                         [(300,), (301,), (400,)])
        self.assertEqual(db.execute("SELECT start, address, memoryOperationType FROM CUDA_GPU_MEMORY_USAGE_EVENTS "
                                    "ORDER BY start").fetchall(),
                         [(50, 0xA, 0), (5100, 0x10, 0), (5200, 0xC, 0), (5500, 0xA, 1), (6200, 0x10, 1),
                          (6500, 0xE, 0), (7500, 0xE, 1)])

    def test_variant_traces_keep_each_variants_median_run(self):
        # p1's fix ran twice (rep 2 failed): spans 200 (rep 1) and 250 (rep 3); the lower middle is rep 1.
        self.assertEqual(self.index["p1"], {"trace": "batch0.sqlite", "runs": {
            "baseline": {"window_ns": [5000, 6000], "rep": 3, "span_ns": 400},
            "fix": {"window_ns": [2000, 3000], "rep": 1, "span_ns": 200}}})
        self.assertEqual(self.index["p2"]["runs"]["fix"]["span_ns"], 900)
        self.assertNotIn("p3", self.index)  # left out of the corpus: no good baseline run
        db = sqlite3.connect(os.path.join(self.variants, "batch0.sqlite"))
        self.assertEqual(db.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start").fetchall(),
                         [(2100,), (7300,)])
        self.assertEqual(db.execute("SELECT text FROM NVTX_EVENTS ORDER BY start").fetchall(),
                         [("lab p1 fix #1",), ("lab p1 baseline #3",), ("lab p2 baseline #1",),
                          ("lab p2 fix #1",)])

    def test_corpus_copied_gzipped(self):
        with gzip.open(os.path.join(self.out, "programs.jsonl.gz"), "rt") as f:
            self.assertEqual([json.loads(line)["id"] for line in f], ["p1", "p2", "p3"])


class WindowsTest(unittest.TestCase):
    """--windows K: the K baseline runs nearest the median span, the kept run first."""

    @classmethod
    def setUpClass(cls):
        LabCollectTest.setUpClass.__func__(cls)  # the same batch, collected once with today's K = 1

    def collect(self, k):
        out = os.path.join(self.dir, "windows%d" % k)
        subprocess.run([sys.executable, COLLECT, out, "--windows", str(k), "--date", "2026-01-01",
                        "--batch", os.path.join(self.dir, "batch0.sqlite"), os.path.join(self.dir, "programs.jsonl"),
                        os.path.join(self.dir, "results.jsonl")], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "manifest.json")) as f:
            return out, json.load(f)

    def test_batches_in_parallel_join_in_order(self):
        """--jobs: two batches collected in two processes give the manifest one process gives."""
        second = os.path.join(self.dir, "batch1.sqlite")
        shutil.copyfile(os.path.join(self.dir, "batch0.sqlite"), second)
        outs = []
        for jobs in ("1", "2"):
            out = os.path.join(self.dir, "jobs" + jobs)
            subprocess.run([sys.executable, COLLECT, out, "--jobs", jobs, "--windows", "2", "--date", "2026-01-01"]
                           + [arg for trace in (os.path.join(self.dir, "batch0.sqlite"), second)
                              for arg in ("--batch", trace, os.path.join(self.dir, "programs.jsonl"),
                                          os.path.join(self.dir, "results.jsonl"))],
                           check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(out, "manifest.json")) as f:
                outs.append(json.load(f))
            rows = []
            for name in ("batch0.sqlite", "batch1.sqlite"):
                db = sqlite3.connect(os.path.join(out, name))
                rows.append(db.execute("SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start").fetchall())
                db.close()
            outs.append(rows)
        self.assertEqual(outs[0], outs[2])
        self.assertEqual(outs[1], outs[3])
        self.assertEqual([p["trace"] for p in outs[0]["programs"]], ["batch0.sqlite"] * 2 + ["batch1.sqlite"] * 2)

    def test_compressed_traces_hold_the_plain_ones(self):
        """--compress writes BATCH.sqlite.gz, the plain trim's rows; lab_compress.py converts a plain
        corpus to the same; lab_trace reads both."""
        sys.path.insert(0, os.path.dirname(COLLECT))
        import lab_trace
        plain_out, plain = self.collect(2)
        out = os.path.join(self.dir, "compressed")
        subprocess.run([sys.executable, COLLECT, out, "--compress", "--windows", "2", "--date", "2026-01-01",
                        "--batch", os.path.join(self.dir, "batch0.sqlite"), os.path.join(self.dir, "programs.jsonl"),
                        os.path.join(self.dir, "results.jsonl")], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "manifest.json")) as f:
            packed = json.load(f)
        self.assertEqual({p["trace"] for p in packed["programs"]}, {"batch0.sqlite.gz"})
        self.assertFalse(os.path.exists(os.path.join(out, "batch0.sqlite")))
        for program in packed["programs"]:
            program["trace"] = "batch0.sqlite"
        self.assertEqual(packed, plain)

        def rows(path):
            with contextlib.ExitStack() as stack:
                db = lab_trace.connect(path, stack)
                return {t: db.execute(f'SELECT * FROM "{t}"').fetchall() for (t,) in
                        db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        self.assertEqual(rows(os.path.join(out, "batch0.sqlite.gz")), rows(os.path.join(plain_out, "batch0.sqlite")))
        # The migration of a plain corpus: the same compressed bytes (time 0 in the gzip header).
        subprocess.run([sys.executable, os.path.join(os.path.dirname(COLLECT), "lab_compress.py"), plain_out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(plain_out, "manifest.json")) as f:
            self.assertEqual(json.load(f)["programs"], json.load(open(os.path.join(out, "manifest.json")))["programs"])
        with open(os.path.join(plain_out, "batch0.sqlite.gz"), "rb") as a, open(os.path.join(out, "batch0.sqlite.gz"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertFalse(os.path.exists(os.path.join(plain_out, "batch0.sqlite")))

    def test_one_window_is_todays_manifest(self):
        self.assertNotIn("windows_ns", self.manifest["programs"][0]["baseline"])
        _, manifest = self.collect(1)
        self.assertEqual(manifest, self.manifest | {"machine": ""})

    def test_nearest_runs_kept_run_first(self):
        # p1's baseline spans: rep 1 500, rep 2 300, rep 3 400 (the median): reps 1 and 2 are both
        # 100 from it, the lower rep first.
        out, manifest = self.collect(2)
        p1, p2 = manifest["programs"]
        self.assertEqual(p1["baseline"]["window_ns"], [5000, 6000])
        self.assertEqual(p1["baseline"]["kept_rep"], 3)
        self.assertEqual(p1["baseline"]["windows_ns"], [[5000, 6000], [1000, 2000]])
        self.assertEqual(p1["baseline"]["windows_reps"], [3, 1])
        self.assertEqual(p2["baseline"]["windows_ns"], [[7000, 8000]])  # one run: all runs
        db = sqlite3.connect(os.path.join(out, "batch0.sqlite"))
        self.assertEqual(db.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start").fetchall(),
                         [(1100,), (5100,), (7100,)])

    def test_more_windows_than_runs_keeps_all(self):
        out, manifest = self.collect(5)
        p1 = manifest["programs"][0]["baseline"]
        self.assertEqual(p1["windows_reps"], [3, 1, 2])
        self.assertEqual(p1["windows_ns"], [[5000, 6000], [1000, 2000], [3000, 4000]])
        db = sqlite3.connect(os.path.join(out, "batch0.sqlite"))
        self.assertEqual(db.execute("SELECT text FROM NVTX_EVENTS ORDER BY start").fetchall(),
                         [("lab p1 baseline #1",), (None,), ("lab p1 baseline #3",), ("lab p2 baseline #1",)])

    def test_kept_windows_of_an_entry(self):
        spec = importlib.util.spec_from_file_location("lab_collect", COLLECT)
        collect = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(collect)
        _, manifest = self.collect(2)
        self.assertEqual(collect.kept_windows(manifest["programs"][0]), [(5000, 6000), (1000, 2000)])
        self.assertEqual(collect.kept_windows(self.manifest["programs"][0]), [(5000, 6000)])

    def test_windows_below_one_is_refused(self):
        run = subprocess.run([sys.executable, COLLECT, os.path.join(self.dir, "bad"), "--windows", "0",
                              "--batch", "a", "b", "c"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 2)
        self.assertIn("--windows must be at least 1", run.stderr)


class UnifiedMemorySpanTest(unittest.TestCase):
    """A run's span is the analyzer's device span: unified-memory migrations are not ops."""

    def test_migrations_do_not_lengthen_a_span(self):
        work = tempfile.mkdtemp(prefix="lab_collect_um.")
        self.addCleanup(shutil.rmtree, work, ignore_errors=True)
        trace = os.path.join(work, "batch0.sqlite")
        db = sqlite3.connect(trace)
        db.executescript("""
          CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT);
          CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, streamId INTEGER);
          CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, bytes INTEGER,
                                                   copyKind INTEGER);
          INSERT INTO NVTX_EVENTS VALUES (0, 1000, 59, 'lab q1 baseline #1'),
                                         (1000, 2000, 59, 'lab q1 fix #1');
          -- baseline: GPU faults migrate in before the kernel (11), the host's read migrates the
          -- buffer back after it (12): span 100-400, not 50-900
          INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (50, 90, 65536, 11), (300, 400, 4096, 1),
                                                        (600, 900, 65536, 12);
          INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 300, 7), (1100, 1300, 7);
          -- a migration with no copy kind recorded counts as a copy
          INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1300, 1350, 16, NULL), (1400, 1900, 65536, 13);
        """)
        db.commit()
        db.close()
        write_jsonl(os.path.join(work, "programs.jsonl"),
                    [{"id": "q1", "seed": 1, "shape": "chain", "findings": {"fix": "managed-page-faults"},
                      "variants": {"baseline": {}, "fix": {}}}])
        write_jsonl(os.path.join(work, "results.jsonl"),
                    [{"id": "q1", "variant": v, "rep": 1, "host_us": 1.0, "ok": True}
                     for v in ("baseline", "fix")])
        out = os.path.join(work, "corpus")
        subprocess.run([sys.executable, COLLECT, out, "--batch", trace,
                        os.path.join(work, "programs.jsonl"), os.path.join(work, "results.jsonl")],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "manifest.json")) as f:
            q1 = json.load(f)["programs"][0]
        self.assertEqual(q1["baseline"]["spans_ns"], [300])
        self.assertEqual(q1["variants"]["fix"]["spans_ns"], [250])


if __name__ == "__main__":
    COLLECT = sys.argv.pop(1)
    unittest.main()
