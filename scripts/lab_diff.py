#!/usr/bin/env python3
"""Compare lab scores case by case (docs/lab.md, "Judging a model change").

`cuoverlap lab score CORPUS --format json -o X.json` writes every case of a corpus: its measured
saving and uncertainty, the finding's claim (cost_ns) and the verdicts. A model change is judged
by what it moves, on every corpus it is scored on, not by a total alone:

  lab_diff.py A.json B.json [--finding F] [--costs]
      the totals of both scores (within, decided within, decided, false findings, missed) and each
      case whose verdict moved: + into ±30%, - out of it, ~ another verdict (decided, false,
      missed); with --costs also cases whose claim moved by more than 5% of the saving or 20 µs.
      --finding keeps the cases of that finding id or transform. Exit 0; 2 on bad input.
  lab_diff.py --outside X.json FINDING [--all]
      the cases of a finding id or transform outside ±30% (every case with --all): span, measured
      saving ± uncertainty, claim, W(ithin)/x, D(ecided)/u(ndecided), FALSE or MISSED.
  lab_diff.py --consistent X.json Y.json [Z.json ...] [--finding F]
      scores of several recordings of the same programs (c1 and c3, their H200 replica): the cases
      outside ±30% on every one of them, the claim too high on all (over) or too low on all
      (under). A case the recordings' noise put outside lands there on one recording, not on all:
      these are the model's own errors, to study first. Per case its saving and claim on each
      score; then the count per transform, for programs of one host thread and of several.

Cases are matched by (program, transform, variant, finding): two scores of the same corpus, or of
two recordings of the same programs (a replica), line up.
"""
import argparse
import json
import sys

TOTALS = ("within", "decided within", "decided", "false", "missed")


def load(path):
    try:
        with open(path) as f:
            cases = json.load(f)["cases"]
        return {(c["program"], c["transform"], c["variant"], c["finding"] or "-"): c for c in cases}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"lab_diff: {path}: not a lab score with cases ({e})", file=sys.stderr)
        sys.exit(2)


def totals(cases):
    cs = cases.values()
    return (sum(bool(c["within"]) for c in cs), sum(bool(c["within"] and c["decided"]) for c in cs),
            sum(bool(c["decided"]) for c in cs), sum(bool(c["false_finding"]) for c in cs),
            sum(bool(c["missed"]) for c in cs))


def verdict(c):
    return (bool(c["within"]), bool(c["decided"]), bool(c["false_finding"]), bool(c["missed"]))


def keep(key, finding):
    return finding is None or finding in (key[1], key[3])


def moved_line(key, a, b):
    tag = "+" if b["within"] and not a["within"] else "-" if a["within"] and not b["within"] else "~"
    flags = "".join(f" {name} {int(a[k])}->{int(b[k])}" for name, k in
                    (("D", "decided"), ("F", "false_finding"), ("M", "missed")) if bool(a[k]) != bool(b[k]))
    program, _, variant, finding = key
    return (f"{tag} {program} {variant:<20} {finding:<26} saving {a['saving_ns'] / 1e3:9.1f} -> "
            f"{b['saving_ns'] / 1e3:9.1f} us  claim {a['cost_ns'] / 1e3:9.1f} -> {b['cost_ns'] / 1e3:9.1f} us{flags}")


def diff(args):
    a, b = load(args.a), load(args.b)
    for name, case_set in (("A", a), ("B", b)):
        print(f"{name}: " + ", ".join(f"{label} {n}" for label, n in zip(TOTALS, totals(case_set))))
    only = [(k, "A") for k in a if k not in b] + [(k, "B") for k in b if k not in a]
    for key, side in sorted(only):
        if keep(key, args.finding):
            print(f"only in {side}: {' '.join(key)}")
    for key in sorted(set(a) & set(b)):
        if not keep(key, args.finding):
            continue
        x, y = a[key], b[key]
        cost_moved = abs(x["cost_ns"] - y["cost_ns"]) > max(0.05 * max(x["saving_ns"], 1), 20_000)
        if verdict(x) != verdict(y) or (args.costs and cost_moved):
            print(moved_line(key, x, y))


def outside(args):
    for key, c in sorted(load(args.score).items()):
        if not keep(key, args.finding) or (c["within"] and not args.all):
            continue
        mark = " FALSE" if c["false_finding"] else " MISSED" if c["missed"] else ""
        print(f"{key[0]} {key[2]:<20} {key[3]:<26} span {c['span_ns'] / 1e3:9.1f} saving "
              f"{c['saving_ns'] / 1e3:9.1f} ± {c['uncertainty_ns'] / 1e3:7.1f} claim {c['cost_ns'] / 1e3:9.1f} "
              f"{'W' if c['within'] else 'x'}{'D' if c['decided'] else 'u'}{mark}")


def direction(c):
    """0 within ±30%; 1 the claim above the measured saving; -1 below it."""
    if c["within"]:
        return 0
    return 1 if c["cost_ns"] > c["saving_ns"] else -1


def consistent(args):
    if len(args.scores) < 2:
        print("lab_diff: --consistent needs two scores or more", file=sys.stderr)
        sys.exit(2)
    scores = [load(path) for path in args.scores]
    counts = {}
    for key in sorted(set.intersection(*(set(s) for s in scores))):
        if not keep(key, args.finding):
            continue
        cases = [s[key] for s in scores]
        sides = {direction(c) for c in cases}
        if len(sides) != 1 or 0 in sides:
            continue
        side = "over" if sides == {1} else "under"
        counts[(key[1], side)] = counts.get((key[1], side), 0) + 1
        each = "  ".join(f"{c['saving_ns'] / 1e3:8.1f}/{c['cost_ns'] / 1e3:8.1f}" for c in cases)
        print(f"{key[0]} {key[2]:<20} {key[3]:<26} {side:<5} saving/claim us: {each}")
    print(f"{sum(counts.values())} cases outside on all {len(scores)} scores, in one direction")
    for (transform, side), n in sorted(counts.items()):
        print(f"  {transform:<20} {side:<5} {n}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--consistent":
        p = argparse.ArgumentParser(prog="lab_diff.py --consistent")
        p.add_argument("--consistent", action="store_true")
        p.add_argument("scores", nargs="+")
        p.add_argument("--finding")
        consistent(p.parse_args())
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--outside":
        p = argparse.ArgumentParser(prog="lab_diff.py --outside")
        p.add_argument("--outside", dest="score", required=True)
        p.add_argument("finding")
        p.add_argument("--all", action="store_true")
        outside(p.parse_args())
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--finding")
    p.add_argument("--costs", action="store_true")
    diff(p.parse_args())


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(0)
