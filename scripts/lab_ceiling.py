#!/usr/bin/env python3
"""How far the measurement lets a finding's score go (docs/findings.md, "The lab's score").

  lab_ceiling.py SCORE.json [SCORE.json ...]

SCORE.json is `cuoverlap lab score CORPUS --format json`. For each finding id: its cases, how many
are within ±30% now, and how many a model whose every claim equals the true saving would be
within on average, given each case's measured uncertainty (twice the standard error of its
saving): the measured saving M of such a case is drawn around the true saving T (taken as the
measured one, negative savings as 0) with that error, and the case is within when |T - M| is at
most the tolerance of M (30% of M; 20 µs when M is under 70 µs; a negative M counts as 0). A
decided case (uncertainty at most its tolerance) is within 94% of the time or more; an undecided
one much less. The ceiling is what no change to the model can pass on that recording; more runs of
the undecided cases (or programs whose spans vary less) raise it. Exit 0; 2 on bad input.
"""
import json
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab_rerecord_select import tolerance  # noqa: E402  (the score's tolerance of a case)


def within(claim, saving):
    return abs(claim - max(saving, 0.0)) <= tolerance({"saving_ns": saving})


def chance_within(true_saving, sigma, steps=400):
    """P(within) of the claim true_saving when the measurement is N(true_saving, sigma)."""
    if sigma <= 0:
        return 1.0 if within(true_saving, true_saving) else 0.0
    total = 0.0
    weight = 0.0
    for i in range(steps + 1):
        z = -6.0 + 12.0 * i / steps
        w = math.exp(-0.5 * z * z)
        weight += w
        total += w * within(true_saving, true_saving + z * sigma)
    return total / weight


def main():
    if len(sys.argv) < 2:
        print("usage: lab_ceiling.py SCORE.json [SCORE.json ...]", file=sys.stderr)
        return 2
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                cases = json.load(f)["cases"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"lab_ceiling: {path}: not a lab score with cases ({e})", file=sys.stderr)
            return 2
        rows = defaultdict(lambda: [0, 0, 0.0, 0])
        for c in cases:
            row = rows[c["finding"] or "-"]
            chance = chance_within(max(c["saving_ns"], 0.0), c["uncertainty_ns"] / 2)
            row[0] += 1
            row[1] += bool(c["within"])
            row[2] += chance
            row[3] += bool(c["decided"])
        print(path)
        print(f"{'finding':30s} {'cases':>5s} {'within now':>12s} {'ceiling':>14s} {'decided':>8s}")
        all_rows = [0, 0, 0.0, 0]
        for name, r in sorted(rows.items()):
            print(f"{name[:30]:30s} {r[0]:5d} {r[1]:5d} ({r[1] / r[0]:4.0%}) "
                  f"{r[2]:7.1f} ({r[2] / r[0]:4.0%}) {r[3]:8d}")
            for i in range(4):
                all_rows[i] += r[i]
        n = all_rows[0]
        print(f"{'all':30s} {n:5d} {all_rows[1]:5d} ({all_rows[1] / n:4.0%}) {all_rows[2]:7.1f} "
              f"({all_rows[2] / n:4.0%}) {all_rows[3]:8d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
