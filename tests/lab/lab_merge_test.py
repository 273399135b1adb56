#!/usr/bin/env python3
"""scripts/lab_merge.py --variants-only and --rerecorded on corpora made here: a newer recording's
variants that the corpus's programs lack are added with the baseline runs recorded with them; the
corpus's own cases, a variant it has already and a program it lacks are left as they are. With
--rerecorded, the variants the corpus has get the newer runs and their baselines instead.

  lab_merge_test.py PATH/TO/lab_merge.py
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

MERGE = None


def write_corpus(path, programs, lines, date):
    os.makedirs(path)
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump({"schema": "cuoverlap-lab-corpus/1", "date": date, "corpus": "programs.jsonl.gz",
                   "programs": programs, "failed": []}, f)
    with gzip.open(os.path.join(path, "programs.jsonl.gz"), "wt") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


def program(pid, trace, baseline_spans, variants):
    return {"id": pid, "trace": trace,
            "baseline": {"window_ns": [0, 10], "kept_rep": 1, "spans_ns": baseline_spans,
                         "median_ns": sorted(baseline_spans)[len(baseline_spans) // 2]},
            "variants": {name: {"finding": "f-" + name, "spans_ns": spans,
                                "median_ns": sorted(spans)[len(spans) // 2]}
                         for name, spans in variants.items()}}


def line(pid, variants):
    return {"id": pid, "seed": 1, "shape": "pipeline",
            "variants": {name: {"id": pid, "variant": name} for name in ["baseline"] + variants},
            "findings": {name: "f-" + name for name in variants}}


class VariantsOnly(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.corpus = os.path.join(cls.tmp.name, "corpus")
        newer = os.path.join(cls.tmp.name, "newer")
        write_corpus(cls.corpus, [program("g1", "batch000.sqlite", [100, 101, 102], {"pin-host": [90, 91, 92]})],
                     [line("g1", ["pin-host"])], "2026-01-01")
        write_corpus(newer, [program("g1", "batch000.sqlite", [103, 104, 105],
                                     {"pin-host": [1, 2, 3], "hoist-alloc": [105, 106, 107]}),
                             program("g9", "batch000.sqlite", [5, 5, 5], {"pin-host": [4, 4, 4]})],
                     [line("g1", ["pin-host", "hoist-alloc"]), line("g9", ["pin-host"])], "2026-02-02")
        cls.result = subprocess.run([sys.executable, MERGE, cls.corpus, newer, "--variants-only"],
                                    capture_output=True, text=True)
        with open(os.path.join(cls.corpus, "manifest.json")) as f:
            cls.manifest = json.load(f)
        with gzip.open(os.path.join(cls.corpus, "programs.jsonl.gz"), "rt") as f:
            cls.lines = [json.loads(x) for x in f]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_runs(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        self.assertIn("1 variants", self.result.stdout)
        self.assertIn("1 present already, 1 programs not in it", self.result.stdout)

    def test_new_variant_carries_its_own_baseline(self):
        (g1,) = self.manifest["programs"]
        self.assertEqual(g1["variants"]["hoist-alloc"]["spans_ns"], [105, 106, 107])
        self.assertEqual(g1["variants"]["hoist-alloc"]["baseline_spans_ns"], [103, 104, 105])
        self.assertEqual(self.manifest["added_variants"],
                         [{"id": "g1", "variants": ["hoist-alloc"], "recorded": "2026-02-02"}])

    def test_existing_cases_untouched(self):
        (g1,) = self.manifest["programs"]
        self.assertEqual(g1["baseline"]["spans_ns"], [100, 101, 102])
        self.assertEqual(g1["variants"]["pin-host"]["spans_ns"], [90, 91, 92])
        self.assertNotIn("baseline_spans_ns", g1["variants"]["pin-host"])
        self.assertEqual(g1["trace"], "batch000.sqlite")

    def test_corpus_line_gets_the_description(self):
        self.assertEqual([x["id"] for x in self.lines], ["g1"])
        self.assertEqual(sorted(self.lines[0]["variants"]), ["baseline", "hoist-alloc", "pin-host"])
        self.assertEqual(self.lines[0]["findings"]["hoist-alloc"], "f-hoist-alloc")


class Rerecorded(unittest.TestCase):
    """--rerecorded: a variant recorded again replaces the corpus's runs of it, with its baseline."""

    def merge(self, newer_lines):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        corpus = os.path.join(self.tmp.name, "corpus")
        newer = os.path.join(self.tmp.name, "newer")
        corpus_g1 = program("g1", "batch000.sqlite", [100, 101, 102], {"pin-host": [90, 91, 92], "hoist-alloc": [99, 99, 99]})
        corpus_g1["variants"]["pin-host"]["stream_id"] = 7
        write_corpus(corpus, [corpus_g1], [line("g1", ["pin-host", "hoist-alloc"])], "2026-01-01")
        write_corpus(newer, [program("g1", "batch000.sqlite", [102, 103, 104, 105, 106],
                                     {"pin-host": [80, 81, 82, 83, 84], "graph-capture": [1, 1, 1, 1, 1]})],
                     newer_lines, "2026-03-03")
        result = subprocess.run([sys.executable, MERGE, corpus, newer, "--rerecorded"],
                                capture_output=True, text=True)
        with open(os.path.join(corpus, "manifest.json")) as f:
            return result, json.load(f)

    def test_replaces_runs_and_keeps_the_rest(self):
        result, manifest = self.merge([line("g1", ["pin-host", "graph-capture"])])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("1 variants", result.stdout)
        (g1,) = manifest["programs"]
        pin = g1["variants"]["pin-host"]
        self.assertEqual(pin["spans_ns"], [80, 81, 82, 83, 84])
        self.assertEqual(pin["median_ns"], 82)
        self.assertEqual(pin["baseline_spans_ns"], [102, 103, 104, 105, 106])
        self.assertEqual((pin["finding"], pin["stream_id"]), ("f-pin-host", 7))
        self.assertEqual(g1["baseline"]["spans_ns"], [100, 101, 102])  # the program's own runs stay
        self.assertEqual(g1["variants"]["hoist-alloc"]["spans_ns"], [99, 99, 99])
        self.assertNotIn("graph-capture", g1["variants"])  # a variant the corpus lacks is not added
        self.assertEqual(manifest["rerecorded_variants"],
                         [{"id": "g1", "variants": ["pin-host"], "recorded": "2026-03-03", "reps": 5}])

    def test_a_drifted_baseline_is_left_out_unless_kept(self):
        """Newer baselines more than 5% from the corpus's (median 120 against 101): the program is
        named and left as it was; --keep-drifted merges it."""
        for keep in (False, True):
            self.tmp = tempfile.TemporaryDirectory()
            self.addCleanup(self.tmp.cleanup)
            corpus = os.path.join(self.tmp.name, "corpus")
            newer = os.path.join(self.tmp.name, "newer")
            write_corpus(corpus, [program("g1", "batch000.sqlite", [100, 101, 102], {"pin-host": [90, 91, 92]})],
                         [line("g1", ["pin-host"])], "2026-01-01")
            write_corpus(newer, [program("g1", "batch000.sqlite", [119, 120, 121], {"pin-host": [80, 81, 82]})],
                         [line("g1", ["pin-host"])], "2026-03-03")
            result = subprocess.run([sys.executable, MERGE, corpus, newer, "--rerecorded"]
                                    + (["--keep-drifted"] if keep else []), capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(corpus, "manifest.json")) as f:
                pin = json.load(f)["programs"][0]["variants"]["pin-host"]
            if keep:
                self.assertEqual(pin["spans_ns"], [80, 81, 82])
                self.assertNotIn("left out", result.stdout)
            else:
                self.assertEqual(pin["spans_ns"], [90, 91, 92])
                self.assertNotIn("baseline_spans_ns", pin)
                self.assertIn("1 programs left out", result.stdout)
                self.assertIn("g1 +18.8%", result.stdout)

    def test_another_description_is_an_error(self):
        changed = line("g1", ["pin-host"])
        changed["variants"]["pin-host"]["bytes"] = 4096
        result, manifest = self.merge([changed])
        self.assertEqual(result.returncode, 1)
        self.assertIn("g1 pin-host", result.stderr)
        self.assertEqual(manifest["programs"][0]["variants"]["pin-host"]["spans_ns"], [90, 91, 92])


class Changed(unittest.TestCase):
    """--changed: a variant whose transform changed replaces the corpus's runs AND its description;
    the program's kept run, its other variants and its baseline stay."""

    def merge(self, newer_line):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        corpus = os.path.join(self.tmp.name, "corpus")
        newer = os.path.join(self.tmp.name, "newer")
        corpus_g1 = program("g1", "batch000.sqlite", [100, 101, 102],
                            {"pin-host": [130, 131, 132], "hoist-alloc": [99, 99, 99]})
        corpus_g1["variants"]["pin-host"]["stale"] = "changed"  # lab_stale.py --mark's
        write_corpus(corpus, [corpus_g1], [line("g1", ["pin-host", "hoist-alloc"])], "2026-01-01")
        write_corpus(newer, [program("g1", "batch000.sqlite", [103, 104, 105], {"pin-host": [80, 81, 82]})],
                     [newer_line], "2026-03-03")
        result = subprocess.run([sys.executable, MERGE, corpus, newer, "--changed"],
                                capture_output=True, text=True)
        with open(os.path.join(corpus, "manifest.json")) as f:
            manifest = json.load(f)
        with gzip.open(os.path.join(corpus, "programs.jsonl.gz"), "rt") as f:
            lines = [json.loads(x) for x in f]
        return result, manifest, lines

    def test_replaces_runs_and_description(self):
        changed = line("g1", ["pin-host"])
        changed["variants"]["pin-host"]["buffers"] = ["t0"]
        result, manifest, lines = self.merge(changed)
        self.assertEqual(result.returncode, 0, result.stderr)
        (g1,) = manifest["programs"]
        pin = g1["variants"]["pin-host"]
        self.assertEqual((pin["spans_ns"], pin["baseline_spans_ns"]), ([80, 81, 82], [103, 104, 105]))
        self.assertNotIn("stale", pin)  # recorded as its transform makes it now
        self.assertEqual(g1["baseline"]["spans_ns"], [100, 101, 102])
        self.assertEqual(g1["variants"]["hoist-alloc"]["spans_ns"], [99, 99, 99])
        self.assertEqual(lines[0]["variants"]["pin-host"]["buffers"], ["t0"])
        self.assertIn("hoist-alloc", lines[0]["variants"])
        self.assertEqual(manifest["changed_variants"],
                         [{"id": "g1", "variants": ["pin-host"], "recorded": "2026-03-03", "reps": 3}])

    def test_an_unchanged_variant_keeps_its_runs(self):
        """A whole recording's variant whose description is the corpus's did not change: its runs
        stay (merging it would replace a measurement with another session's for no reason)."""
        result, manifest, lines = self.merge(line("g1", ["pin-host"]))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("0 variants", result.stdout)
        self.assertIn("1 unchanged, left as they were", result.stdout)
        pin = manifest["programs"][0]["variants"]["pin-host"]
        self.assertEqual(pin["spans_ns"], [130, 131, 132])
        self.assertNotIn("baseline_spans_ns", pin)
        self.assertEqual(manifest.get("changed_variants", []), [])

    def test_another_baseline_is_an_error(self):
        other = line("g1", ["pin-host"])
        other["variants"]["baseline"]["seed"] = 2
        result, manifest, _ = self.merge(other)
        self.assertEqual(result.returncode, 1)
        self.assertIn("g1", result.stderr)
        self.assertEqual(manifest["programs"][0]["variants"]["pin-host"]["spans_ns"], [130, 131, 132])


class BadInput(unittest.TestCase):
    def test_two_modes_at_once_is_a_usage_error(self):
        # --changed with --rerecorded would log changed variants and keep the old descriptions.
        with tempfile.TemporaryDirectory() as tmp:
            result = subprocess.run([sys.executable, MERGE, tmp, tmp, "--changed", "--rerecorded"],
                                    capture_output=True, text=True)
        self.assertEqual(result.returncode, 2)
        self.assertIn("not allowed with", result.stderr)

    def test_missing_corpus_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = subprocess.run([sys.executable, MERGE, os.path.join(tmp, "none"), tmp, "--variants-only"],
                                    capture_output=True, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("manifest.json", result.stderr)


class NoisierRecording(unittest.TestCase):
    """A whole re-record whose baselines spread far more than the runs they replace is refused
    (a noisy machine), the corpus untouched; --accept-noisier is the way past."""

    def test_refused_and_untouched(self):
        with tempfile.TemporaryDirectory() as tmp:
            corpus, newer = os.path.join(tmp, "corpus"), os.path.join(tmp, "newer")
            write_corpus(corpus, [program("g1", "batch000.sqlite", [100, 101, 102, 103, 104], {})],
                         [line("g1", [])], "2026-01-01")
            write_corpus(newer, [program("g1", "batch000.sqlite", [100, 110, 120, 130, 140], {})],
                         [line("g1", [])], "2026-02-02")
            with open(os.path.join(corpus, "manifest.json")) as f:
                before = f.read()
            result = subprocess.run([sys.executable, MERGE, corpus, newer], capture_output=True, text=True)
            self.assertEqual(result.returncode, 1)
            self.assertIn("spread 8.50x", result.stdout)  # (130 - 110) / 120 against (103 - 101) / 102
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
            self.assertIn("--accept-noisier", result.stderr)
            with open(os.path.join(corpus, "manifest.json")) as f:
                self.assertEqual(f.read(), before)
            self.assertEqual(sorted(os.listdir(corpus)), ["manifest.json", "programs.jsonl.gz"])

    def test_a_trace_name_taken_is_refused(self):
        # Two whole merges on one day got the same default prefix: the second overwrote the first's
        # traces, which its programs still used.
        with tempfile.TemporaryDirectory() as tmp:
            corpus, newer = os.path.join(tmp, "corpus"), os.path.join(tmp, "newer")
            write_corpus(corpus, [program("g1", "r1_batch000.sqlite", [100, 101, 102], {})],
                         [line("g1", [])], "2026-01-01")
            write_corpus(newer, [program("g2", "batch000.sqlite", [100, 101, 102], {})],
                         [line("g2", [])], "2026-02-02")
            for directory in (corpus, newer):
                with open(os.path.join(directory, "batch000.sqlite" if directory == newer
                                       else "r1_batch000.sqlite"), "w") as f:
                    f.write(directory)
            with open(os.path.join(corpus, "manifest.json")) as f:
                before = f.read()
            result = subprocess.run([sys.executable, MERGE, corpus, newer, "--prefix", "r1_"],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 1)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
            self.assertIn("r1_batch000.sqlite already; pass another --prefix", result.stderr)
            with open(os.path.join(corpus, "manifest.json")) as f:
                self.assertEqual(f.read(), before)
            with open(os.path.join(corpus, "r1_batch000.sqlite")) as f:
                self.assertEqual(f.read(), corpus)

    def test_spread(self):
        sys.path.insert(0, os.path.dirname(os.path.abspath(MERGE)))
        import lab_merge
        self.assertIsNone(lab_merge.spread([1, 2, 3]))
        self.assertAlmostEqual(lab_merge.spread([100, 101, 102, 103, 104]), 2 / 102)


if __name__ == "__main__":
    MERGE = sys.argv.pop(1)
    unittest.main()
