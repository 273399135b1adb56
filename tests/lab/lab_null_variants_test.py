#!/usr/bin/env python3
"""scripts/lab_null_variants.py: null variants (copies of a baseline) and what the lab measures of them.

  lab_null_variants_test.py PATH/TO/lab_null_variants.py
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def program(pid, shape, baseline, nulls):
    variants = {name: {"spans_ns": spans} for name, spans in zip(("n1", "n2", "n3"), nulls)}
    return {"id": pid, "shape": shape, "baseline": {"spans_ns": baseline}, "variants": variants}


class LabNullVariants(unittest.TestCase):
    def test_make_copies_each_baseline_three_times(self):
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "programs.jsonl.gz")
            with gzip.open(source, "wt") as f:
                for k in range(6):
                    shape = "threads" if k % 2 else "pipeline"
                    f.write(json.dumps({"id": f"g{k}", "seed": k, "shape": shape,
                                        "variants": {"baseline": {"schema": 1, "k": k}, "remove-sync": {}}}) + "\n")
            out = os.path.join(tmp, "nulls.jsonl")
            result = run("make", source, out, "--count", "2", "--seed", "1")
            self.assertEqual(result.returncode, 0, result.stderr)
            lines = [json.loads(line) for line in open(out)]
            self.assertEqual(len(lines), 4)
            self.assertEqual(sum(line["shape"] == "threads" for line in lines), 2)
            for line in lines:
                self.assertEqual(list(line["variants"]), ["baseline", "n1", "n2", "n3"])
                for name in ("n1", "n2", "n3"):
                    self.assertEqual(line["variants"][name], line["variants"]["baseline"])
            # Never over an existing file.
            again = run("make", source, out)
            self.assertNotEqual(again.returncode, 0)

    def test_summarize_counts_savings_a_claim_of_nothing_misses(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "manifest.json")
            base = [1_000_000] * 5
            programs = [
                # the copies 30 µs faster in every rep: outside a claim of 0
                program("g1", "threads", base, [[970_000] * 5] * 3),
                # the copies as fast: within
                program("g2", "pipeline", base, [base] * 3),
            ]
            with open(path, "w") as f:
                json.dump({"programs": programs}, f)
            result = run("summarize", path)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("threads    all         3  outside with claim 0: 3 (100%)", result.stdout)
            self.assertIn("one thread all         3  outside with claim 0: 0 (0%)", result.stdout)
            self.assertIn("30.00", result.stdout)

    def test_bad_input_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.json")
            with open(path, "w") as f:
                f.write("not json")
            result = run("summarize", path)
            self.assertEqual(result.returncode, 2)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1)
            self.assertEqual(run("nothing").returncode, 2)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
