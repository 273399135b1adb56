#!/usr/bin/env python3
"""scripts/lab_select.py: corpus lines for a focused recording.

  lab_select_test.py PATH/TO/lab_select.py
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None


def program(pid, shape, variants):
    return {"id": pid, "seed": 1, "shape": shape,
            "variants": {v: {"threads": [], "tag": v} for v in ["baseline"] + variants},
            "findings": {v: "finding-" + v.split("@")[0] for v in variants}}


class LabSelect(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_selects_variants_and_shapes(self):
        lines = [program("g1", "pipeline", ["remove-sync", "multi-stream", "multi-stream@s1"]),
                 program("g2", "threads", ["multi-stream@s0", "pin-host"]),
                 program("g3", "training+pipeline", ["remove-sync", "copy-ahead"]),
                 program("g4", "loader", ["pin-host"])]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "programs.jsonl.gz")
            with gzip.open(path, "wt") as f:
                f.writelines(json.dumps(p) + "\n" for p in lines)
            out = self.run_script(path, "--variants", "multi-stream|copy-ahead", "--not-shapes", "threads")
            self.assertEqual(out.returncode, 0, out.stderr)
            kept = [json.loads(line) for line in out.stdout.splitlines()]
            self.assertEqual([p["id"] for p in kept], ["g1", "g3"])
            self.assertEqual(list(kept[0]["variants"]), ["baseline", "multi-stream", "multi-stream@s1"])
            self.assertEqual(kept[0]["findings"], {"multi-stream": "finding-multi-stream",
                                                   "multi-stream@s1": "finding-multi-stream"})
            self.assertEqual(kept[0]["variants"]["baseline"], {"threads": [], "tag": "baseline"})
            self.assertEqual(list(kept[1]["variants"]), ["baseline", "copy-ahead"])
            self.assertIn("2 programs, 3 variants", out.stderr)
            # --shapes from the start of the shape: `pipeline` keeps g1, not g3.
            out = self.run_script(path, "--variants", "multi-stream|copy-ahead", "--shapes", "pipeline")
            self.assertEqual([json.loads(line)["id"] for line in out.stdout.splitlines()], ["g1"])
            # Bad input: one line, exit 2.
            bad = os.path.join(tmp, "bad.jsonl")
            with open(bad, "w") as f:
                f.write('{"id": "g1"}\n')
            for args in ([bad, "--variants", "x"], [path, "--variants", "("],
                         [os.path.join(tmp, "missing.jsonl"), "--variants", "x"]):
                out = self.run_script(*args)
                self.assertEqual(out.returncode, 2, args)
                self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
