#!/usr/bin/env python3
"""Cases whose claims disagree across a program's scored windows (docs/lab.md, "The kept run").

  lab_claim_spread.py SCORE.json [--corpus DIR] [--min-us US] [--ratio R] [--all-shapes]

SCORE.json is `cuoverlap lab score CORPUS --format json`; each case of a program with several
scored windows lists every window's claim (`claims_ns`, in the order of the manifest's
`baseline.windows_ns`). Runs of one program differ little where one host thread issues its work,
so claims that differ much between them point at the model, not the program: the forty-fourth
session found a schedule bug this way (an op that ended twice, 595 µs claimed in one window of
g000310 and 26 in the others). A case is listed where its largest window claim exceeds its
smallest by at least US µs (default 60) and by a factor of R (default 1.5; a claim of 0 counts as
1 µs). With --corpus (default tests/data/lab) the programs whose shape has several host threads
(`threads`), whose runs do differ, are left out unless --all-shapes. Printed per case: program,
variant, finding, the window claims (µs), the measured saving (µs) and W(ithin)/x, D(ecided)/u.
Inspect one with `scripts/lab_show.py ID --window K`. Exit 0; 2 on bad input (one line).
"""
import argparse
import json
import os
import sys


def fail(message):
    print(f"lab_claim_spread: {message}", file=sys.stderr)
    sys.exit(2)


def spread_cases(cases, shapes, min_us=60.0, ratio=1.5, all_shapes=False):
    """The cases (of a lab score's `cases`) whose window claims differ by at least `min_us` µs and a
    factor of `ratio` (a claim of 0 counting as 1 µs), of one-thread programs unless `all_shapes`
    (`shapes`: program id -> the manifest's shape)."""
    listed = []
    for c in cases:
        if not all_shapes and "threads" in shapes.get(c.get("program"), "threads"):
            continue
        claims = [x for x in (c.get("claims_ns") or []) if x is not None]
        if len(claims) < 2:
            continue
        low, high = min(claims), max(claims)
        if high - low < min_us * 1e3 or high < ratio * max(low, 1e3):
            continue
        listed.append(c)
    return listed


def main():
    parser = argparse.ArgumentParser(add_help=True, usage=__doc__)
    parser.add_argument("score")
    parser.add_argument("--corpus", default="tests/data/lab")
    parser.add_argument("--min-us", type=float, default=60.0)
    parser.add_argument("--ratio", type=float, default=1.5)
    parser.add_argument("--all-shapes", action="store_true")
    args = parser.parse_args()
    try:
        with open(args.score) as f:
            cases = json.load(f)["cases"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{args.score}: not a lab score ({e.__class__.__name__}: {e})")
    shapes = {}
    if not args.all_shapes:
        manifest = os.path.join(args.corpus, "manifest.json")
        try:
            with open(manifest) as f:
                shapes = {p["id"]: p.get("shape", "") for p in json.load(f)["programs"]}
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"{manifest}: not a lab manifest ({e.__class__.__name__}: {e})")
    listed = spread_cases(cases, shapes, args.min_us, args.ratio, args.all_shapes)
    for c in listed:
        claims = [x for x in c["claims_ns"] if x is not None]
        verdict = ("W" if c.get("within") else "x") + ("D" if c.get("decided") else "u")
        print(f"{c['program']} {c['variant']:22} {c['finding'][:28]:28} claims "
              f"{' '.join(str(round(x / 1e3)) for x in claims):30} saving {round(c['saving_ns'] / 1e3):7} {verdict}")
    print(f"{len(listed)} case(s) listed")


if __name__ == "__main__":
    main()
