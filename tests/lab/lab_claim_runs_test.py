#!/usr/bin/env python3
"""scripts/lab_claim_runs.py: a corpus whose kept windows are another recording's baseline runs
(build), and the median claim of several scores judged as the score judges a claim (compare).

  lab_claim_runs_test.py PATH/TO/lab_claim_runs.py
"""
import contextlib
import gzip
import importlib.util
import io
import json
import os
import sqlite3
import sys
import tempfile
import unittest

RUNS = None


def case(program, cost, saving, span=1_000_000, missed=False, within=None):
    tol = 20_000 if saving < 70_000 else 0.3 * saving
    return {"program": program, "variant": "pin-host", "finding": "pageable-memcpy", "span_ns": span,
            "saving_ns": saving, "cost_ns": cost, "decided": True, "false_finding": False,
            "missed": missed, "within": abs(cost - max(saving, 0)) <= tol if within is None else within}


class Compare(unittest.TestCase):
    def compare(self, *scores):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for k, cases in enumerate(scores):
                paths.append(os.path.join(tmp, "%d.json" % k))
                with open(paths[-1], "w") as f:
                    json.dump({"cases": cases}, f)
            with contextlib.redirect_stdout(io.StringIO()):
                return RUNS.compare(paths)["all"]

    def test_claims_apart_and_the_mean(self):
        # Saving 1 ms: 0.9 ms is within, 0.5 ms is not; their mean 0.7 ms is within.
        row = self.compare([case("g1", 900_000, 1_000_000), case("g2", 1_000_000, 1_000_000)],
                           [case("g1", 500_000, 1_000_000), case("g2", 1_100_000, 1_000_000)])
        self.assertEqual(row["cases"], 2)
        self.assertEqual(row["differ"], 1)  # 0.4 ms apart > 0.3 ms; 0.1 ms is not
        self.assertEqual((row["within A"], row["within B"], row["A only"], row["B only"]), (2, 1, 1, 0))
        self.assertEqual(row["within med"], 2)

    def test_missed_needs_most_runs_silent(self):
        # A finding that fired in one of two runs is not missed with the median (the mean) claim.
        row = self.compare([case("g1", 0, 200_000, missed=True)], [case("g1", 200_000, 200_000)])
        self.assertEqual((row["missed A"], row["missed B"], row["missed med"]), (1, 0, 0))
        row = self.compare([case("g1", 0, 200_000, missed=True)], [case("g1", 0, 200_000, missed=True)])
        self.assertEqual(row["missed med"], 1)


class Build(unittest.TestCase):
    def test_windows_and_trim(self):
        with tempfile.TemporaryDirectory() as tmp:
            corpus, runs, out = (os.path.join(tmp, d) for d in ("corpus", "runs", "out"))
            os.makedirs(corpus)
            os.makedirs(runs)
            manifest = {"schema": "cuoverlap-lab-corpus/1", "programs": [
                {"id": "g1", "trace": "b0.sqlite", "baseline": {"window_ns": [10, 20], "median_ns": 9,
                                                                  "windows_ns": [[10, 20], [50, 60]],
                                                                  "windows_reps": [2, 1]},
                 "variants": {}},
                {"id": "g2", "trace": "b0.sqlite", "baseline": {"window_ns": [30, 40], "median_ns": 9},
                 "variants": {}}]}
            with open(os.path.join(corpus, "manifest.json"), "w") as f:
                json.dump(manifest, f)
            with gzip.open(os.path.join(corpus, "programs.jsonl.gz"), "wt") as f:
                f.write(json.dumps({"id": "g1", "variants": {}}) + "\n")
            db = sqlite3.connect(os.path.join(runs, "batch000.sqlite"))
            db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, streamId INTEGER)")
            db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, 7)", [(100,), (150,), (250,)])
            db.commit()
            db.close()
            # g1's baseline run and a variant's; g2 has no run there and is left out.
            with open(os.path.join(runs, "index.json"), "w") as f:
                json.dump({"g1": {"trace": "batch000.sqlite", "runs": {
                    "baseline": {"window_ns": [100, 200]}, "pin-host": {"window_ns": [200, 300]}}}}, f)
            with contextlib.redirect_stdout(io.StringIO()):
                RUNS.build(corpus, runs, out)
            with open(os.path.join(out, "manifest.json")) as f:
                built = json.load(f)
            self.assertEqual([p["id"] for p in built["programs"]], ["g1"])
            self.assertEqual(built["programs"][0]["baseline"]["window_ns"], [100, 200])
            # The corpus's other kept runs (lab_collect.py --windows) are not in the other run's trace.
            self.assertNotIn("windows_ns", built["programs"][0]["baseline"])
            self.assertNotIn("windows_reps", built["programs"][0]["baseline"])
            trace = os.path.join(out, built["programs"][0]["trace"])
            starts = [r[0] for r in sqlite3.connect(trace).execute(
                "SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")]
            self.assertEqual(starts, [100, 150])  # the variant's run is trimmed away


if __name__ == "__main__":
    spec = importlib.util.spec_from_file_location("lab_claim_runs", sys.argv.pop(1))
    RUNS = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(RUNS)
    unittest.main()
