#!/usr/bin/env python3
"""scripts/lab_stale.py on a corpus made here from generated programs: a variant whose description is
not what its transform makes now is `changed`, one the transform makes where the corpus has none
`new`, one it no longer makes `gone`; --programs writes the lines to record, --mark marks the
changed and gone variants stale in the manifest and unmarks the rest, --check fails where the marks
are not those.

  lab_stale_test.py PATH/TO/lab_stale.py
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None


def generated(seed):
    sys.path.insert(0, os.path.join(os.path.dirname(SCRIPT), "..", "workloads", "lab"))
    from labgen.generator import corpus_line  # noqa: E402  (the generator the corpus came from)
    return corpus_line(seed)


def write_corpus(path, lines):
    os.makedirs(path)
    programs = [{"id": line["id"], "trace": "batch000.sqlite",
                 "baseline": {"window_ns": [0, 10], "spans_ns": [10], "median_ns": 10},
                 "variants": {name: {"finding": line["findings"][name], "spans_ns": [9], "median_ns": 9}
                              for name in line["variants"] if name != "baseline"}}
                for line in lines]
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump({"schema": "cuoverlap-lab-corpus/1", "corpus": "programs.jsonl.gz",
                   "programs": programs}, f)
    with gzip.open(os.path.join(path, "programs.jsonl.gz"), "wt") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


class LabStale(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        # The first generated program with at least two variants.
        line = next(x for x in map(generated, range(1, 200)) if len(x["variants"]) >= 3)
        cls.names = sorted(n for n in line["variants"] if n != "baseline")
        cls.pid = line["id"]
        changed, dropped = cls.names[0], cls.names[1]
        line["variants"][changed] = dict(line["variants"][changed], threads=[])  # another program
        del line["variants"][dropped]
        line["findings"].pop(dropped)
        line["variants"]["copy-ahead@nowhere"] = line["variants"]["baseline"]  # no transform makes it
        line["findings"]["copy-ahead@nowhere"] = "single-stream"
        cls.changed, cls.new = changed, dropped
        cls.corpus = os.path.join(cls.tmp.name, "corpus")
        write_corpus(cls.corpus, [line])
        cls.to_record = os.path.join(cls.tmp.name, "record.jsonl")
        cls.result = subprocess.run([sys.executable, SCRIPT, cls.corpus, "--programs", cls.to_record, "--mark"],
                                    capture_output=True, text=True)
        with open(os.path.join(cls.corpus, "manifest.json")) as f:
            cls.manifest = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_reports_each_kind(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        out = self.result.stdout
        self.assertIn(f"changed: {self.pid}", out)
        self.assertIn(f"new: {self.pid}", out)
        self.assertIn(f"gone: {self.pid}@nowhere", out)
        self.assertIn("2 variants of", out)

    def test_lines_to_record_are_the_transforms_output(self):
        with open(self.to_record) as f:
            (line,) = [json.loads(x) for x in f]
        fresh = generated(int(self.pid[1:]))
        self.assertEqual(sorted(line["variants"]), sorted(["baseline", self.changed, self.new]))
        for name in line["variants"]:
            self.assertEqual(line["variants"][name], fresh["variants"][name])
        self.assertEqual(line["findings"], {n: fresh["findings"][n] for n in (self.changed, self.new)})

    def test_marks_changed_and_gone_only(self):
        (program,) = self.manifest["programs"]
        stale = {name: v.get("stale") for name, v in program["variants"].items()}
        self.assertEqual(stale.pop(self.changed), "changed")
        self.assertEqual(stale.pop("copy-ahead@nowhere"), "gone")
        self.assertEqual(set(stale.values()), {None})

    def test_unmarks_what_is_current_again(self):
        with tempfile.TemporaryDirectory() as tmp:
            corpus = os.path.join(tmp, "corpus")
            line = generated(int(self.pid[1:]))
            write_corpus(corpus, [line])
            path = os.path.join(corpus, "manifest.json")
            with open(path) as f:
                manifest = json.load(f)
            manifest["programs"][0]["variants"][self.changed]["stale"] = "changed"
            with open(path, "w") as f:
                json.dump(manifest, f)
            result = subprocess.run([sys.executable, SCRIPT, corpus, "--mark"], capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("every variant is what its transform makes now", result.stdout)
            with open(path) as f:
                variants = json.load(f)["programs"][0]["variants"]
            self.assertFalse(any("stale" in v for v in variants.values()))

    def test_check_passes_on_marked_and_fails_on_unmarked(self):
        result = subprocess.run([sys.executable, SCRIPT, self.corpus, "--check"], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("2 variants marked stale, as their transforms make them now", result.stdout)
        with tempfile.TemporaryDirectory() as tmp:
            corpus = os.path.join(tmp, "corpus")
            line = generated(int(self.pid[1:]))
            line["variants"][self.changed] = dict(line["variants"][self.changed], threads=[])
            write_corpus(corpus, [line])  # changed, but not marked
            result = subprocess.run([sys.executable, SCRIPT, corpus, "--check"], capture_output=True, text=True)
            self.assertEqual(result.returncode, 1)
            self.assertIn(f"{self.pid} {self.changed}: marked current, changed by its transform now", result.stdout)
            self.assertIn("1 variants marked otherwise", result.stdout)

    def test_missing_corpus_is_one_line(self):
        result = subprocess.run([sys.executable, SCRIPT, os.path.join(self.tmp.name, "none")],
                                capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)
        self.assertIn("lab_stale:", result.stderr)


if __name__ == "__main__":
    SCRIPT = os.path.abspath(sys.argv.pop(1))
    unittest.main()
