#!/usr/bin/env python3
"""Chooses the undecided cases of a lab corpus worth recording again with more runs (docs/lab.md).

  lab_rerecord_select.py CORPUS SCORE.json [--ratio R] [--out PREFIX]

A case is undecided when its saving's uncertainty exceeds its tolerance (`cuoverlap lab score
CORPUS --format json` gives both). The uncertainty falls as 1/sqrt(runs), so a case whose
uncertainty is r times its tolerance needs about r^2 times the runs it had: each case with r <=
R (default 2) is chosen — by its measurement alone, never by its score — and its program is
recorded with its baseline and chosen variants, n * r_max^2 * 1.3 runs rounded up to 90, 180 or 360
(the most). Prints each run count's programs, cases and estimated GPU seconds; with --out writes
PREFIX_REPS.jsonl, the corpus lines to record (`PROGRAMS=FILE REPS=REPS scripts/lab_record.sh`),
then `lab_merge.py CORPUS NEWER --rerecorded`.
"""
import argparse
import collections
import gzip
import json
import os
import sys

TIERS = (90, 180, 360)
SMALL_SAVING_NS, ABSOLUTE_NS, RELATIVE = 70_000, 20_000, 0.3  # the score's tolerance


def tolerance(case):
    saved = max(case["saving_ns"], 0)
    return ABSOLUTE_NS if saved < SMALL_SAVING_NS else RELATIVE * saved


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("score")
    parser.add_argument("--ratio", type=float, default=2.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    programs = {p["id"]: p for p in json.load(open(f"{args.corpus}/manifest.json"))["programs"]}
    chosen = collections.defaultdict(dict)  # program -> variant -> uncertainty / tolerance
    for case in json.load(open(args.score))["cases"]:
        ratio = case["uncertainty_ns"] / tolerance(case)
        if not case["decided"] and ratio <= args.ratio:
            chosen[case["program"]][case["variant"]] = ratio
    tiers = collections.defaultdict(list)
    for pid, variants in chosen.items():
        need = len(programs[pid]["baseline"]["spans_ns"]) * max(variants.values()) ** 2 * 1.3
        tiers[next((t for t in TIERS if t >= need), TIERS[-1])].append(pid)
    for reps, pids in sorted(tiers.items()):
        span = sum(programs[p]["baseline"]["median_ns"] +
                   sum(programs[p]["variants"][v]["median_ns"] for v in chosen[p]) for p in pids)
        print(f"{reps} runs: {len(pids)} programs, {sum(len(chosen[p]) for p in pids)} cases, "
              f"{span * reps / 1e9:.0f} GPU s of spans")
    if not args.out:
        return
    with gzip.open(f"{args.corpus}/programs.jsonl.gz", "rt") as f:
        lines = {line["id"]: line for line in map(json.loads, f)}
    for reps, pids in tiers.items():
        path = f"{args.out}_{reps}.jsonl"
        with open(path + ".tmp", "w") as f:  # whole or not at all
            for pid in pids:
                line = dict(lines[pid])
                line["variants"] = {k: v for k, v in line["variants"].items()
                                    if k == "baseline" or k in chosen[pid]}
                line["findings"] = {k: v for k, v in line.get("findings", {}).items() if k in chosen[pid]}
                f.write(json.dumps(line, separators=(",", ":")) + "\n")
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"lab_rerecord_select: {type(error).__name__}: {error}")
