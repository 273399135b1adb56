#!/usr/bin/env python3
"""Chooses the undecided cases of a lab corpus worth recording again with more runs (docs/lab.md).

  lab_rerecord_select.py CORPUS SCORE.json [--ratio R] [--out PREFIX] [--part-seconds S] [--whole]

A case is undecided when its saving's uncertainty exceeds its tolerance (`cuoverlap lab score
CORPUS --format json` gives both). The uncertainty falls as 1/sqrt(runs), so a case whose
uncertainty is r times its tolerance needs about r^2 times the runs it had: each case with r <=
R (default 2) is chosen — by its measurement alone, never by its score — and its program is
recorded with its baseline and chosen variants, n * r^2 * 1.3 runs (n: the case's runs now, the
largest over the program's chosen cases) rounded up to 90, 180 or 360 (the most). A case recorded
at 360 runs already that needs more is left out: as many runs again would not decide it. Prints each run count's programs, cases, GPU seconds of spans and estimated seconds of
batches; with --out writes PREFIX_REPS.jsonl, the corpus lines to record (`PROGRAMS=FILE REPS=REPS
scripts/lab_record.sh`), then `lab_merge.py CORPUS NEWER --rerecorded`.

With --whole each chosen program is written with every variant (the estimate counts them all), to
be merged with `lab_merge.py CORPUS NEWER`, which replaces it whole: its trace, kept runs and
savings then come from one session. A variant merged alone keeps claims read from the corpus's
trace, recorded in another session, and a program's saving moves between sessions by more than its
runs vary within one; for `threads` programs that cost accuracy on both H100 recordings
(docs/lab.md, "--rerecorded"; forty-sixth session).

With --part-seconds S (and --out), each run count's programs are split into as few parts as keep
each part's estimated batches within S seconds (a device call's limit less the build and the
collection), balanced largest first, written as PREFIX_REPS_pN.jsonl. The estimate is the chosen
spans times the run count times BATCH_OVERHEAD: the interpreter's work around each run (reset,
NVTX, the collector) took 1.95-2.5 times the spans on an H100 (2026-11-26: 1,284 s of batches for
an estimated 645 s of spans at 90, 180 and 360 runs).
"""
import argparse
import collections
import gzip
import json
import math
import os
import sys

TIERS = (90, 180, 360)
BATCH_OVERHEAD = 2.5  # seconds of batches per second of chosen spans (see above)
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
    parser.add_argument("--part-seconds", type=float, metavar="S")
    parser.add_argument("--whole", action="store_true")
    args = parser.parse_args()
    if args.part_seconds is not None and (args.part_seconds <= 0 or not args.out):
        parser.error("--part-seconds needs a positive number of seconds and --out")
    programs = {p["id"]: p for p in json.load(open(f"{args.corpus}/manifest.json"))["programs"]}
    chosen = collections.defaultdict(dict)  # program -> variant -> runs the case needs
    at_most = 0
    for case in json.load(open(args.score))["cases"]:
        ratio = case["uncertainty_ns"] / tolerance(case)
        if case["decided"] or ratio > args.ratio:
            continue
        runs = len(programs[case["program"]]["variants"][case["variant"]]["spans_ns"])
        need = runs * ratio ** 2 * 1.3
        if runs >= TIERS[-1] and need > runs:  # as many runs again would not decide it
            at_most += 1
            continue
        chosen[case["program"]][case["variant"]] = need
    if at_most:
        print(f"{at_most} cases left out: recorded at {TIERS[-1]} runs already")
    tiers = collections.defaultdict(list)
    for pid, variants in chosen.items():
        need = max(variants.values())
        tiers[next((t for t in TIERS if t >= need), TIERS[-1])].append(pid)

    def recorded(pid):  # the variants recorded again: the chosen ones, or all with --whole
        return list(programs[pid]["variants"]) if args.whole else list(chosen[pid])

    def spans_s(pid, reps):  # GPU seconds of the program's recorded runs
        return reps * (programs[pid]["baseline"]["median_ns"] +
                       sum(programs[pid]["variants"][v]["median_ns"] for v in recorded(pid))) / 1e9

    files = {}  # path -> programs
    for reps, pids in sorted(tiers.items()):
        span = sum(spans_s(p, reps) for p in pids)
        print(f"{reps} runs: {len(pids)} programs, {sum(len(chosen[p]) for p in pids)} cases, "
              f"{span:.0f} GPU s of spans, about {span * BATCH_OVERHEAD:.0f} s of batches")
        if args.part_seconds is None:
            files[f"{args.out}_{reps}.jsonl"] = pids
            continue
        parts = [[] for _ in range(max(1, math.ceil(span * BATCH_OVERHEAD / args.part_seconds)))]
        loads = [0.0] * len(parts)
        for pid in sorted(pids, key=lambda p: (-spans_s(p, reps), p)):
            lightest = loads.index(min(loads))
            parts[lightest].append(pid)
            loads[lightest] += spans_s(pid, reps) * BATCH_OVERHEAD
        for index, (part, load) in enumerate(zip(parts, loads)):
            path = f"{args.out}_{reps}_p{index}.jsonl"
            files[path] = part
            print(f"  {os.path.basename(path)}: {len(part)} programs, about {load:.0f} s of batches")
    if not args.out:
        return
    with gzip.open(f"{args.corpus}/programs.jsonl.gz", "rt") as f:
        lines = {line["id"]: line for line in map(json.loads, f)}
    for path, pids in files.items():
        with open(path + ".tmp", "w") as f:  # whole or not at all
            for pid in pids:
                line = dict(lines[pid])
                if not args.whole:
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
