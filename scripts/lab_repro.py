#!/usr/bin/env python3
"""Two recordings of the same lab programs: how often a measured saving is a property of the
program rather than of the recording, and how the claims fare on the cases both measured well
(docs/findings.md, "Fortieth session"; docs/lab.md, "Judging a model change").

  lab_repro.py A.json B.json

A.json and B.json are `cuoverlap lab score CORPUS --format json` of two recordings of the same
programs (the same seeds recorded again, on another day or host: each with its own traces, claims
and spans). Only cases that both recordings decided count (each measured its saving to within the
case's tolerance: docs/findings.md, "The lab's score"), so that neither recording's run-to-run
noise decides the comparison. Such a case's saving is **reproduced** when the two savings agree
within the tolerance of their mean (30%, or 20 µs under 70 µs; a negative saving counts as 0);
where it is not, the program saved a different amount on the other host or day, and a claim read
from that recording's own trace has to follow it. Printed per finding id: the cases both score,
those both decided, how many of those reproduced, and how many are within with A's claims and
with B's (each against its own measured saving), all and for the reproduced ones alone.

Then whether the two recordings differ by more than their runs' noise: over every case both score
with an uncertainty, the difference of the two savings in units of its standard error (each
case's uncertainty is twice its saving's standard error, so the pair's is the root of the sum of
their squares, halved). Where the recordings differ only by run-to-run noise, |z| has a median
of about 0.67 and exceeds 2 for about 5% of the cases; much more says the program saved a
different amount on the other day or host than the runs of either recording show.
Exit 0; 2 on bad input (one line).
"""
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab_rerecord_select import tolerance  # noqa: E402  (the score's tolerance of a case)


def cases_of(path):
    try:
        with open(path) as f:
            score = json.load(f)
        cases = score["cases"]
        return {(c["program"], c["variant"], c["finding"]): c for c in cases}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"lab_repro: {path}: not a lab score ({e.__class__.__name__}: {e})", file=sys.stderr)
        sys.exit(2)


def reproduced(a, b):
    """Whether the two measured savings of one case agree within the tolerance of their mean."""
    sa, sb = max(a["saving_ns"], 0), max(b["saving_ns"], 0)
    return abs(sa - sb) <= tolerance({"saving_ns": (sa + sb) / 2})


def table(first, second):
    """Rows (finding, both score, both decided, reproduced, within A, within B, within A and within
    B of the reproduced) per finding id and 'all', finding ids sorted."""
    rows = defaultdict(lambda: [0] * 7)
    for key, a in first.items():
        b = second.get(key)
        if b is None:
            continue
        row = rows[key[2]]
        row[0] += 1
        if not (a["decided"] and b["decided"]):
            continue
        same = reproduced(a, b)
        row[1] += 1
        row[2] += same
        row[3] += a["within"]
        row[4] += b["within"]
        row[5] += same and a["within"]
        row[6] += same and b["within"]
    total = [sum(r[i] for r in rows.values()) for i in range(7)]
    return [(f, *rows[f]) for f in sorted(rows)] + [("all", *total)]


def noise_check(first, second):
    """(cases, median |z|, share of |z| > 2, share of |z| > 3) over the cases both score with an
    uncertainty: z is the difference of their savings over its standard error (above); None
    where no case has one."""
    z = []
    for key, a in first.items():
        b = second.get(key)
        if b is None:
            continue
        error = math.hypot(a.get("uncertainty_ns", 0), b.get("uncertainty_ns", 0)) / 2
        if error > 0:
            z.append(abs(a["saving_ns"] - b["saving_ns"]) / error)
    if not z:
        return None
    z.sort()
    n = len(z)
    middle = z[n // 2] if n % 2 else (z[n // 2 - 1] + z[n // 2]) / 2
    return n, middle, sum(x > 2 for x in z) / n, sum(x > 3 for x in z) / n


def pct(n, d):
    return f"{n:5d} ({100 * n / d:3.0f}%)" if d else f"{n:5d} (  -%)"


def main():
    if len(sys.argv) != 3:
        print("usage: lab_repro.py A.json B.json", file=sys.stderr)
        return 2
    first, second = cases_of(sys.argv[1]), cases_of(sys.argv[2])
    rows = table(first, second)
    if rows[-1][1] == 0:
        print("lab_repro: the two scores share no case both decided (not recordings of the same programs?)",
              file=sys.stderr)
        return 2
    width = max(28, max(len(r[0]) for r in rows))
    print(f"{'':{width}s}         both    saving        --- both decided ---     --- reproduced ---")
    print(f"{'finding':{width}s}  cases decided  reproduced     within A     within B     within A     within B")
    for f, both, decided, same, wa, wb, sa, sb in rows:
        print(f"{f:{width}s} {both:6d} {decided:7d} {pct(same, decided)} {pct(wa, decided)} {pct(wb, decided)}"
              f" {pct(sa, same)} {pct(sb, same)}")
    noise = noise_check(first, second)
    if noise:
        n, middle, over2, over3 = noise
        print(f"\nthe savings' difference against their runs' noise, over {n} cases: median |z| {middle:.2f} "
              f"(0.67 for noise alone), |z| > 2 for {100 * over2:.0f}% (5%), > 3 for {100 * over3:.0f}% (0.3%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
