#!/usr/bin/env python3
"""scripts/lab_claim_spread.py: the cases whose window claims disagree, single-thread programs only.

  lab_claim_spread_test.py PATH/TO/lab_claim_spread.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None


def case(program, claims, saving=100_000, within=True, decided=True):
    return {"program": program, "transform": "multi-stream", "variant": "multi-stream",
            "finding": "single-stream", "span_ns": 5_000_000, "saving_ns": saving,
            "uncertainty_ns": 5_000, "cost_ns": sorted(x for x in claims if x is not None)[0], "within": within,
            "decided": decided, "false_finding": False, "missed": False, "claims_ns": claims}


class LabClaimSpread(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump({"programs": [{"id": "g1", "shape": "pipeline"}, {"id": "g2", "shape": "pipeline"},
                                    {"id": "g3", "shape": "threads"}, {"id": "g4", "shape": "chain"}]}, f)
        self.score = os.path.join(d, "score.json")
        with open(self.score, "w") as f:
            json.dump({"cases": [
                case("g1", [26_000, 595_000, 0, 0, 27_000], saving=656_000, within=False),  # listed
                case("g2", [100_000, 120_000, 110_000]),           # within 1.5x: not listed
                case("g3", [0, 900_000, 0]),                       # threads: left out
                case("g4", [0, 50_000, 0]),                        # under 60 µs apart
                case("g4", [10_000, None, 300_000]),               # a window not counted is skipped
            ]}, f)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_lists_single_thread_cases_whose_windows_disagree(self):
        out = self.run_script(self.score, "--corpus", self.tmp.name)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual([l.split()[0] for l in lines[:-1]], ["g1", "g4"])
        self.assertIn("claims 26 595 0 0 27", lines[0])
        self.assertTrue(lines[0].endswith("saving     656 xD"), lines[0])
        self.assertEqual(lines[-1], "2 case(s) listed")

    def test_all_shapes_and_thresholds(self):
        out = self.run_script(self.score, "--all-shapes", "--min-us", "40")
        self.assertEqual([l.split()[0] for l in out.stdout.splitlines()[:-1]], ["g1", "g3", "g4", "g4"])

    def test_bad_input_is_one_line_and_exit_2(self):
        out = self.run_script(os.path.join(self.tmp.name, "missing.json"))
        self.assertEqual(out.returncode, 2)
        self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)
        out = self.run_script(self.score, "--corpus", os.path.join(self.tmp.name, "nowhere"))
        self.assertEqual(out.returncode, 2)
        self.assertIn("not a lab manifest", out.stderr)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
