#!/usr/bin/env python3
"""scripts/lab_ceiling.py: what a model whose claims are the true savings would score, per finding.

  lab_ceiling_test.py PATH/TO/lab_ceiling.py
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None


def case(finding, saving, uncertainty, within, decided):
    return {"program": "g1", "transform": "t", "variant": "t", "finding": finding,
            "span_ns": 10_000_000,
            "saving_ns": saving, "uncertainty_ns": uncertainty, "cost_ns": 0, "within": within,
            "decided": decided, "false_finding": False, "missed": False}


class LabCeiling(unittest.TestCase):
    def load(self):
        spec = importlib.util.spec_from_file_location("lab_ceiling", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def test_chance_within(self):
        m = self.load()
        # An exact measurement: a right claim is always within.
        self.assertEqual(m.chance_within(1_000_000, 0), 1.0)
        # A decided case (2 sigma at its tolerance): within about 94% of the time (the band is 30%
        # of the measured saving, narrower when the measurement comes out low).
        self.assertAlmostEqual(m.chance_within(1_000_000, 150_000), 0.94, delta=0.01)
        # A saving of nothing measured with 500 µs of noise: within when the measurement comes out
        # under 20 µs (a negative one counts as 0), a little over half the time.
        chance = m.chance_within(0, 250_000)
        self.assertGreater(chance, 0.5)
        self.assertLess(chance, 0.6)

    def test_table_and_bad_input(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "score.json")
            with open(path, "w") as f:
                json.dump({"cases": [case("a", 1_000_000, 0, True, True),
                                     case("a", 0, 500_000, False, False),
                                     case("b", 1_000_000, 0, False, True)]}, f)
            out = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertTrue(lines[2].startswith("a "), lines)
            self.assertIn("    1 ( 50%)", lines[2])
            self.assertTrue(lines[3].startswith("b ") and "0 (  0%)" in lines[3]
                            and "1.0 (100%)" in lines[3], lines)
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                f.write("[]")
            out = subprocess.run([sys.executable, SCRIPT, bad], capture_output=True, text=True)
            self.assertEqual(out.returncode, 2)
            self.assertEqual(len(out.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
