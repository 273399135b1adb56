#!/usr/bin/env python3
"""scripts/lab_repro.py: two recordings of the same programs, compared on the cases both decided.

  lab_repro_test.py PATH/TO/lab_repro.py
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None


def case(program, finding, saving, within, decided=True):
    return {"program": program, "transform": "t", "variant": "t", "finding": finding,
            "span_ns": 10_000_000, "saving_ns": saving, "uncertainty_ns": 0, "cost_ns": 0,
            "within": within, "decided": decided, "false_finding": False, "missed": False}


class LabRepro(unittest.TestCase):
    def load(self):
        spec = importlib.util.spec_from_file_location("lab_repro", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def test_reproduced(self):
        m = self.load()
        # 30% of the mean: 1.0 and 1.25 ms agree (0.25 <= 0.3375), 1.0 and 1.5 do not.
        self.assertTrue(m.reproduced(case("g", "a", 1_000_000, True), case("g", "a", 1_250_000, True)))
        self.assertFalse(m.reproduced(case("g", "a", 1_000_000, True), case("g", "a", 1_500_000, True)))
        # Small savings: 20 µs apart; a negative saving counts as 0.
        self.assertTrue(m.reproduced(case("g", "a", -50_000, True), case("g", "a", 15_000, True)))
        self.assertFalse(m.reproduced(case("g", "a", 0, True), case("g", "a", 45_000, True)))

    def test_noise_check(self):
        m = self.load()
        index = lambda cases: {(c["program"], c["variant"], c["finding"]): c for c in cases}
        first, second = [], []
        for k, (a, b) in enumerate(((1_000_000, 1_000_000), (1_000_000, 1_010_000), (1_000_000, 1_030_000),
                                    (500_000, 800_000))):
            first.append(dict(case(f"g{k}", "a", a, True), uncertainty_ns=20_000))
            second.append(dict(case(f"g{k}", "a", b, True), uncertainty_ns=20_000))
        # The pair's standard error: hypot(20, 20) / 2 = 14.14 µs; |z| 0, 0.71, 2.12, 21.2.
        n, middle, over2, over3 = m.noise_check(index(first), index(second))
        self.assertEqual(n, 4)
        self.assertAlmostEqual(middle, (10 + 30) / 2 / 14.1421356, places=3)
        self.assertEqual((over2, over3), (0.5, 0.25))
        # No case with an uncertainty: nothing to say.
        self.assertIsNone(m.noise_check(index([case("g", "a", 1, True)]), index([case("g", "a", 2, True)])))

    def test_table_and_bad_input(self):
        first = [case("g1", "a", 1_000_000, True), case("g2", "a", 1_000_000, True),
                 case("g3", "a", 1_000_000, False, decided=False), case("g4", "b", 500_000, False),
                 case("g5", "b", 500_000, True)]
        second = [case("g1", "a", 1_100_000, False), case("g2", "a", 3_000_000, True),
                  case("g3", "a", 1_000_000, True), case("g4", "b", 520_000, True)]
        m = self.load()
        index = lambda cases: {(c["program"], c["variant"], c["finding"]): c for c in cases}
        rows = m.table(index(first), index(second))
        # a: 3 cases in both, 2 decided by both, 1 reproduced (g1); A within 2, B within 1; of the
        # reproduced, A within 1 (g1), B within 0. b: g5 only in A; g4 decided by both, reproduced.
        self.assertEqual(rows[0], ("a", 3, 2, 1, 2, 1, 1, 0))
        self.assertEqual(rows[1], ("b", 1, 1, 1, 0, 1, 0, 1))
        self.assertEqual(rows[2], ("all", 4, 3, 2, 2, 2, 1, 1))
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, cases in (("a.json", first), ("b.json", second)):
                paths.append(os.path.join(tmp, name))
                with open(paths[-1], "w") as f:
                    json.dump({"cases": cases}, f)
            out = subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertTrue(lines[2].startswith("a "), lines)
            self.assertIn("1 ( 50%)", lines[2])
            self.assertTrue(lines[-1].startswith("all "), lines)  # no uncertainties: no noise line
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                f.write("[]")
            for args in ([paths[0], bad], [paths[0], os.path.join(tmp, "missing.json")], [paths[0]]):
                out = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
                self.assertEqual(out.returncode, 2, args)
                self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)
            # Two scores of different programs share nothing both decided.
            other = os.path.join(tmp, "other.json")
            with open(other, "w") as f:
                json.dump({"cases": [case("x9", "a", 1, True)]}, f)
            out = subprocess.run([sys.executable, SCRIPT, paths[0], other], capture_output=True, text=True)
            self.assertEqual(out.returncode, 2)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
