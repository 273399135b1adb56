#!/usr/bin/env python3
"""scripts/lab_variant_ops.py: a lab program's kept runs, their GPU ops, kernels compared in order,
and the CUDA calls of the baseline and a fixed program side by side.

  lab_variant_ops_test.py PATH/TO/lab_variant_ops.py
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None

US = 1000  # ns


def make_trace(path):
    """Two runs of one program: the baseline (from 0) and multi-stream (from 10 ms)."""
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, streamId INTEGER,
            shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,
            blockY INTEGER, blockZ INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, streamId INTEGER,
            copyKind INTEGER, bytes INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, streamId INTEGER,
            bytes INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, nameId INTEGER);
        INSERT INTO StringIds VALUES (1, 'touchSpinKernel'), (2, 'cudaMalloc_v3020'),
            (3, 'cudaLaunchKernel_v7000'), (4, 'cudaStreamSynchronize_v3020');
    """)
    base, fixed = 0, 10_000 * US
    for origin, kernel_us, malloc_us in ((base, 200, 75), (fixed, 300, 5)):
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 7, 1, 4096)",
                   (origin + 10 * US, origin + 12 * US))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 7, 1, 1056, 1, 1, 256, 1, 1)",
                   (origin + 20 * US, origin + (20 + kernel_us) * US))
        for k in range(3):  # three allocations of the loop, then a launch and a synchronize
            at = origin + k * 1000 * US
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 2)", (at, at + malloc_us * US))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 3)", (origin + 15 * US, origin + 19 * US))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 4)", (origin + 19 * US, origin + 400 * US))
    db.commit()
    db.close()


class LabVariantOps(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        make_trace(os.path.join(self.dir, "batch000.sqlite"))
        runs = {"baseline": {"window_ns": [0, 5_000 * US], "rep": 2, "span_ns": 4_000 * US},
                "multi-stream": {"window_ns": [10_000 * US, 15_000 * US], "rep": 1, "span_ns": 3_000 * US}}
        with open(os.path.join(self.dir, "index.json"), "w") as f:
            json.dump({"g000001": {"trace": "batch000.sqlite", "runs": runs}}, f)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, self.dir, *args], capture_output=True, text=True)

    def test_each_run_lists_its_ops(self):
        out = self.run_script("g000001", "baseline")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0], "== g000001 baseline: span 4000.0 µs (rep 2)")
        self.assertIn("copy   HtoD 4096 B", lines[1])
        self.assertIn("kernel touchSpinKernel 1056x256", lines[2])

    def test_kernels_compared_in_order(self):
        out = self.run_script("g000001", "--cmp", "multi-stream")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.rstrip().endswith("fixed     300.0  x1.50"), out.stdout)

    def test_calls_side_by_side(self):
        out = self.run_script("g000001", "--calls", "multi-stream")
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[2:]}
        # n, median, sum for the baseline, then for the fixed program (µs)
        self.assertEqual(rows["cudaMalloc"], ["3", "75.0", "225.0", "3", "5.0", "15.0"])
        self.assertEqual(rows["cudaStreamSynchronize"], ["1", "381.0", "381.0", "1", "381.0", "381.0"])
        # the summed time orders the rows: the synchronize first
        self.assertEqual(out.stdout.splitlines()[2].split()[0], "cudaStreamSynchronize")

    def test_bad_input_is_one_line_and_not_zero(self):
        out = self.run_script("g000001", "--calls", "nope")
        self.assertNotEqual(out.returncode, 0)
        self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)
        self.assertIn("has no run of nope", out.stderr)
        out = self.run_script("g000002")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no kept runs", out.stderr)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
