#!/usr/bin/env python3
"""How much of the lab's score is the one kept baseline run (docs/lab.md, "The kept run").

Each corpus program's claims come from analyzing ONE recorded baseline run (its kept window);
its measured savings are medians of many runs. A variant-traces recording (`VARIANT_TRACES=1
scripts/lab_record.sh`, `lab_collect.py --variant-traces DIR`) holds another baseline run of
each of its programs. This tool scores the corpus's measured savings against the claims read
from that other run, and compares claims run by run.

  lab_claim_runs.py build CORPUS DIR OUT
      OUT/manifest.json: CORPUS's programs that DIR/index.json has, each with its trace and kept
      window replaced by DIR's baseline run (the trace trimmed to those windows, as
      lab_collect.py trims), one-stream variants' stream and thread ids named again in that run
      (lab_streams.py); spans, variants and findings stay CORPUS's. Score it with
      `cuoverlap lab score OUT --format json -o B.json`.
  lab_claim_runs.py compare A.json B.json [C.json ...]
      scores of the same cases (the same corpus's spans, claims from different runs): per finding,
      cases whose claims differ by more than their tolerance between the first two, within with
      each run's claim, within only with A's or only with B's, and within, decided-within, false
      findings and misses with the median claim of all runs (the mean of two).
"""
import collections
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_collect  # noqa: E402  (its trim)
import lab_manifest  # noqa: E402  (how a manifest is written)
import lab_streams  # noqa: E402  (stream and thread ids)

# cuoverlap/lab_score.h
RELATIVE, SMALL, ABSOLUTE = 0.30, 70_000, 20_000
FALSE_COST, FALSE_SAVING, MISSED_SAVING = 0.05, 0.02, 0.05


def build(corpus, directory, out):
    with open(os.path.join(directory, "index.json")) as f:
        index = json.load(f)
    with open(os.path.join(corpus, "manifest.json")) as f:
        manifest = json.load(f)
    os.makedirs(out, exist_ok=True)
    programs, windows = [], collections.defaultdict(list)
    for program in manifest["programs"]:
        runs = index.get(program["id"], {}).get("runs", {})
        if "baseline" not in runs:
            continue
        entry = index[program["id"]]
        program["trace"] = "runs_" + entry["trace"]
        program["baseline"]["window_ns"] = runs["baseline"]["window_ns"]
        # The other run is one window: the corpus's other kept runs (lab_collect.py --windows) are
        # not in its trace.
        program["baseline"].pop("windows_ns", None)
        program["baseline"].pop("windows_reps", None)
        windows[entry["trace"]].append(tuple(runs["baseline"]["window_ns"]))
        programs.append(program)
    for trace, kept in windows.items():
        lab_collect.trim(os.path.join(directory, trace), os.path.join(out, "runs_" + trace), kept)
    manifest["programs"] = programs
    with open(os.path.join(out, "manifest.json"), "w") as f:
        lab_manifest.dump(manifest, f)
    link = os.path.join(out, "programs.jsonl.gz")
    if not os.path.exists(link):
        os.symlink(os.path.abspath(os.path.join(corpus, "programs.jsonl.gz")), link)
    counts = lab_streams.annotate(out)
    print("%s: %d programs, %d of %d one-stream variants name their trace stream" % (
        out, len(programs), counts["named"], counts["variants"]))


def tolerance(saving):
    saved = max(saving, 0)
    return ABSOLUTE if saved < SMALL else RELATIVE * saved


def judged(cost, cases):
    """within, false finding, missed for claim `cost` against the cases' measured saving (missed:
    most runs' findings did not fire, as the score counts a finding that fired with no claim)."""
    c = cases[0]
    saving, span = c["saving_ns"], max(c["span_ns"], 1)
    within = abs(cost - max(saving, 0)) <= tolerance(saving)
    false = cost > 0 and cost >= FALSE_COST * span and saving < FALSE_SAVING * span
    missed = statistics.median(x["missed"] for x in cases) >= 0.5 and cost <= 0
    return within, false, missed


def compare(paths):
    """Prints the table; returns its rows (finding -> Counter, "all" the total)."""
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append({(c["program"], c["variant"]): c for c in json.load(f)["cases"]})
    keys = [k for k in runs[0] if all(k in r for r in runs[1:])]
    rows = collections.defaultdict(collections.Counter)
    for key in keys:
        cases = [r[key] for r in runs]
        a, b = cases[0], cases[1]
        claim = statistics.median(c["cost_ns"] for c in cases)
        within, false, missed = judged(claim, cases)
        for row in (rows[a["finding"]], rows["all"]):
            row["cases"] += 1
            row["differ"] += abs(a["cost_ns"] - b["cost_ns"]) > tolerance(a["saving_ns"])
            row["within A"] += a["within"]
            row["within B"] += b["within"]
            row["A only"] += a["within"] and not b["within"]
            row["B only"] += b["within"] and not a["within"]
            row["decided"] += a["decided"]
            row["dw A"] += a["decided"] and a["within"]
            row["dw B"] += a["decided"] and b["within"]
            row["within med"] += within
            row["dw med"] += a["decided"] and within
            row["false A"] += a["false_finding"]
            row["false B"] += b["false_finding"]
            row["false med"] += false
            row["missed A"] += a["missed"]
            row["missed B"] += b["missed"]
            row["missed med"] += missed
    columns = list(rows["all"])
    print("%-26s" % "finding" + "".join("%11s" % c for c in columns))
    for finding in sorted(rows, key=lambda f: (f == "all", f)):
        print("%-26s" % finding + "".join("%11d" % rows[finding][c] for c in columns))
    return rows


def main(argv):
    if len(argv) == 5 and argv[1] == "build":
        build(argv[2], argv[3], argv[4])
    elif len(argv) >= 4 and argv[1] == "compare":
        compare(argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
