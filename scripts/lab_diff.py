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


def main():
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
