#!/usr/bin/env python3
"""scripts/lab_rerecord_select.py: which undecided cases are recorded again, at how many runs, and
how the programs are split into parts of a device call.

  lab_rerecord_select_test.py PATH/TO/lab_rerecord_select.py
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None
MS = 1_000_000


def write_corpus(tmp, spans_ms):
    """A corpus of programs g0..gN (baseline and variants a, b, each of spans_ms[i] ms, 30 runs)."""
    corpus = os.path.join(tmp, "corpus")
    os.makedirs(corpus)
    programs, lines = [], []
    for index, span in enumerate(spans_ms):
        run = {"median_ns": span * MS, "spans_ns": [span * MS] * 30}
        programs.append({"id": f"g{index}", "baseline": dict(run),
                         "variants": {"a": dict(run), "b": dict(run)}})
        lines.append({"id": f"g{index}", "variants": {"baseline": {}, "a": {}, "b": {}},
                      "findings": {"a": "x", "b": "y"}})
    with open(os.path.join(corpus, "manifest.json"), "w") as f:
        json.dump({"programs": programs}, f)
    with gzip.open(os.path.join(corpus, "programs.jsonl.gz"), "wt") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    return corpus


def case(program, variant, saving_us, uncertainty_us, decided=False):
    return {"program": program, "variant": variant, "saving_ns": saving_us * 1000,
            "uncertainty_ns": uncertainty_us * 1000, "decided": decided}


class RerecordSelect(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def write_score(self, tmp, cases):
        path = os.path.join(tmp, "score.json")
        with open(path, "w") as f:
            json.dump({"cases": cases}, f)
        return path

    def read_lines(self, path):
        with open(path) as f:
            return [json.loads(line) for line in f]

    def test_chosen_by_uncertainty_and_tiered_by_runs_needed(self):
        with tempfile.TemporaryDirectory() as tmp:
            corpus = write_corpus(tmp, [10, 10, 10, 10])
            score = self.write_score(tmp, [
                case("g0", "a", 1000, 450),       # 1.5 x its 300 us tolerance: 30 x 2.25 x 1.3 = 88 -> 90 runs
                case("g1", "a", 1000, 540),       # 1.8 x: 126 -> 180 runs
                case("g1", "b", 1000, 300),       # within tolerance, but undecided: chosen with g1's a
                case("g2", "a", 1000, 900),       # 3 x: left out at the default ratio 2
                case("g3", "a", 1000, 450, decided=True)])  # decided: never chosen
            out = self.run_script(corpus, score, "--out", os.path.join(tmp, "sel"))
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(sorted(f for f in os.listdir(tmp) if f.startswith("sel")),
                             ["sel_180.jsonl", "sel_90.jsonl"])
            g0, = self.read_lines(os.path.join(tmp, "sel_90.jsonl"))
            self.assertEqual((g0["id"], sorted(g0["variants"]), sorted(g0["findings"])),
                             ("g0", ["a", "baseline"], ["a"]))
            g1, = self.read_lines(os.path.join(tmp, "sel_180.jsonl"))
            self.assertEqual((g1["id"], sorted(g1["variants"])), ("g1", ["a", "b", "baseline"]))
            # 90 runs of g0's baseline and a: 1.8 GPU s, 4.5 s of batches estimated.
            self.assertIn("90 runs: 1 programs, 1 cases, 2 GPU s of spans, about 4 s of batches",
                          out.stdout)
            wider = self.run_script(corpus, score, "--ratio", "3")
            self.assertIn("360 runs: 1 programs, 1 cases", wider.stdout)

    def test_runs_needed_from_the_cases_own_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            corpus = write_corpus(tmp, [10, 10, 10])
            manifest_path = os.path.join(corpus, "manifest.json")
            with open(manifest_path) as f:
                manifest = json.load(f)
            runs = {"g0": 90, "g1": 360, "g2": 180}  # variant a recorded again at these runs before
            for program in manifest["programs"]:
                program["variants"]["a"]["spans_ns"] = [10 * MS] * runs[program["id"]]
            with open(manifest_path, "w") as f:
                json.dump(manifest, f)
            score = self.write_score(tmp, [
                case("g0", "a", 1000, 450),   # 1.5 x at 90 runs: 90 x 2.25 x 1.3 = 263 -> 360 runs
                case("g1", "a", 1000, 450),   # 1.5 x at 360 runs already: left out
                case("g2", "a", 1000, 360),   # 1.2 x at 180 runs: 337 -> 360
                case("g2", "b", 1000, 450)])  # b has its 30 runs: 88 -> 90, but g2 needs 360 for a
            out = self.run_script(corpus, score, "--out", os.path.join(tmp, "sel"))
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("1 cases left out: recorded at 360 runs already", out.stdout)
            self.assertEqual(sorted(f for f in os.listdir(tmp) if f.startswith("sel")), ["sel_360.jsonl"])
            lines = self.read_lines(os.path.join(tmp, "sel_360.jsonl"))
            self.assertEqual(sorted((line["id"], sorted(line["variants"])) for line in lines),
                             [("g0", ["a", "baseline"]), ("g2", ["a", "b", "baseline"])])

    def test_parts_keep_each_within_the_seconds_largest_first(self):
        with tempfile.TemporaryDirectory() as tmp:
            corpus = write_corpus(tmp, [40, 30, 20, 10, 10])
            score = self.write_score(tmp, [case(f"g{i}", "a", 1000, 450) for i in range(5)])
            # At 90 runs each program's baseline and a take 2 x span x 90 x 2.5 s of batches:
            # g0 18 s, g1 13.5, g2 9, g3 and g4 4.5: 49.5 s in all, so 20 s gives three parts.
            out = self.run_script(corpus, score, "--out", os.path.join(tmp, "sel"),
                                  "--part-seconds", "20")
            self.assertEqual(out.returncode, 0, out.stderr)
            parts = [[line["id"] for line in self.read_lines(os.path.join(tmp, f"sel_90_p{i}.jsonl"))]
                     for i in range(3)]
            self.assertEqual(parts, [["g0"], ["g1", "g4"], ["g2", "g3"]])
            self.assertFalse(os.path.exists(os.path.join(tmp, "sel_90.jsonl")))
            self.assertIn("sel_90_p1.jsonl: 2 programs, about 18 s of batches", out.stdout)

    def test_whole_programs(self):
        with tempfile.TemporaryDirectory() as tmp:
            corpus = write_corpus(tmp, [10, 10])
            score = self.write_score(tmp, [case("g0", "a", 1000, 450), case("g1", "b", 1000, 900)])
            out = self.run_script(corpus, score, "--out", os.path.join(tmp, "sel"), "--whole")
            self.assertEqual(out.returncode, 0, out.stderr)
            g0, = self.read_lines(os.path.join(tmp, "sel_90.jsonl"))
            # Every variant and finding, though only a was chosen; the estimate counts them all:
            # 90 runs of three 10 ms spans, 2.7 GPU s, 6.75 s of batches.
            self.assertEqual((g0["id"], sorted(g0["variants"]), sorted(g0["findings"])),
                             ("g0", ["a", "b", "baseline"], ["a", "b"]))
            self.assertIn("90 runs: 1 programs, 1 cases, 3 GPU s of spans, about 7 s of batches", out.stdout)

    def test_bad_arguments_are_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            corpus = write_corpus(tmp, [10])
            score = self.write_score(tmp, [])
            for args in (["--part-seconds", "10"], ["--out", "x", "--part-seconds", "0"]):
                out = self.run_script(corpus, score, *args)
                self.assertEqual(out.returncode, 2, out)
                self.assertIn("--part-seconds needs", out.stderr.strip().splitlines()[-1])
            missing = self.run_script(os.path.join(tmp, "none"), score)
            self.assertEqual(missing.returncode, 1)
            self.assertEqual(len(missing.stderr.strip().splitlines()), 1, missing.stderr)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
