#!/usr/bin/env python3
"""scripts/lab_diff.py: two lab scores compared case by case, a finding's cases outside ±30%, and
the cases outside on every recording in one direction.

  lab_diff_test.py PATH/TO/lab_diff.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None


def case(program, cost, saving, within, decided=True, false_finding=False, missed=False,
         finding="pageable-memcpy", transform="pin-host"):
    return {"program": program, "transform": transform, "variant": transform, "finding": finding,
            "span_ns": 1_000_000, "saving_ns": saving, "uncertainty_ns": 5_000, "cost_ns": cost,
            "within": within, "decided": decided, "false_finding": false_finding, "missed": missed}


class LabDiff(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def write(self, tmp, name, cases):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            json.dump({"cases": cases}, f)
        return path

    def test_totals_and_moved_cases(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = self.write(tmp, "a.json", [case("g1", 500_000, 1_000_000, False),
                                           case("g2", 900_000, 1_000_000, True),
                                           case("g3", 100_000, 0, False, false_finding=True,
                                                finding="single-stream", transform="multi-stream")])
            b = self.write(tmp, "b.json", [case("g1", 950_000, 1_000_000, True),
                                           case("g2", 400_000, 1_000_000, False),
                                           case("g3", 0, 0, True, finding="single-stream",
                                                transform="multi-stream")])
            out = self.run_script(a, b)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertEqual(lines[0], "A: within 1, decided within 1, decided 3, false 1, missed 0")
            self.assertEqual(lines[1], "B: within 2, decided within 2, decided 3, false 0, missed 0")
            self.assertTrue(lines[2].startswith("+ g1 "), lines)
            self.assertTrue(lines[3].startswith("- g2 "), lines)
            self.assertTrue(lines[4].startswith("+ g3 ") and lines[4].endswith("F 1->0"), lines)
            only = self.run_script(a, b, "--finding", "single-stream").stdout.splitlines()
            self.assertEqual([l.split()[1] for l in only[2:]], ["g3"])

    def test_costs_list_claims_that_moved_without_a_verdict(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = self.write(tmp, "a.json", [case("g1", 900_000, 1_000_000, True)])
            b = self.write(tmp, "b.json", [case("g1", 1_100_000, 1_000_000, True)])
            self.assertEqual(len(self.run_script(a, b).stdout.splitlines()), 2)
            costs = self.run_script(a, b, "--costs").stdout.splitlines()
            self.assertTrue(costs[2].startswith("~ g1 "), costs)

    def test_outside(self):
        with tempfile.TemporaryDirectory() as tmp:
            x = self.write(tmp, "x.json", [case("g1", 0, 1_000_000, False, missed=True),
                                           case("g2", 950_000, 1_000_000, True)])
            out = self.run_script("--outside", x, "pin-host").stdout.splitlines()
            self.assertEqual(len(out), 1)
            self.assertTrue(out[0].startswith("g1 ") and out[0].endswith("xD MISSED"), out)
            self.assertEqual(len(self.run_script("--outside", x, "pageable-memcpy", "--all").stdout.splitlines()), 2)

    def test_consistent_keeps_cases_outside_everywhere_in_one_direction(self):
        with tempfile.TemporaryDirectory() as tmp:
            # g1 over on both, g2 under on both, g3 over on one and under on the other (noise),
            # g4 within on one.
            x = self.write(tmp, "x.json", [case("g1", 2_000_000, 1_000_000, False),
                                           case("g2", 0, 1_000_000, False),
                                           case("g3", 2_000_000, 1_000_000, False),
                                           case("g4", 2_000_000, 1_000_000, False)])
            y = self.write(tmp, "y.json", [case("g1", 1_500_000, 1_000_000, False),
                                           case("g2", 100_000, 900_000, False),
                                           case("g3", 100_000, 1_000_000, False),
                                           case("g4", 1_000_000, 1_000_000, True)])
            out = self.run_script("--consistent", x, y)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertEqual([l.split()[:4] for l in lines[:2]],
                             [["g1", "pin-host", "pageable-memcpy", "over"],
                              ["g2", "pin-host", "pageable-memcpy", "under"]])
            self.assertTrue(lines[0].endswith("1000.0/  2000.0    1000.0/  1500.0"), lines[0])
            self.assertEqual(lines[2], "2 cases outside on all 2 scores, in one direction")
            self.assertEqual(lines[3].split(), ["pin-host", "over", "1"])
            self.assertEqual(lines[4].split(), ["pin-host", "under", "1"])
            self.assertEqual(self.run_script("--consistent", x, y, "--finding", "single-stream").stdout.splitlines(),
                             ["0 cases outside on all 2 scores, in one direction"])
            one = self.run_script("--consistent", x)
            self.assertEqual(one.returncode, 2)
            self.assertEqual(len(one.stderr.strip().splitlines()), 1)

    def test_bad_input_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                f.write("{not json")
            out = self.run_script(bad, bad)
            self.assertEqual(out.returncode, 2)
            self.assertEqual(len(out.stderr.strip().splitlines()), 1)
            self.assertIn("not a lab score", out.stderr)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
