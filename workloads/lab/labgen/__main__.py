"""python3 -m labgen {generate,transforms,stats,validate}: see docs/lab.md."""
import argparse
import json
import sys

from .generator import corpus_line
from .stats import print_stats
from .transforms import REGISTRY, all_findings
from .validate import validate


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m labgen")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write COUNT corpus lines (programs SEED..SEED+COUNT-1)")
    stats = sub.add_parser("stats", help="shapes and how often each transform applies")
    for p in (gen, stats):
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--count", type=int, default=320)
    gen.add_argument("--out", required=True, help="FILE.jsonl, or - for stdout")
    sub.add_parser("transforms", help="the transforms and the finding ids they test")
    val = sub.add_parser("validate", help="check program descriptions (JSON or corpus JSONL)")
    val.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "transforms":
        for tid, module in REGISTRY.items():
            print("%-20s %-45s %s" % (tid, ", ".join(all_findings(tid)), module.DOES))
        return 0
    if args.command == "stats":
        print_stats([corpus_line(args.seed + i) for i in range(args.count)])
        return 0
    if args.command == "validate":
        return _validate(args.files)
    return _generate(args)


def _generate(args):
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    with out:
        for i in range(args.count):
            out.write(json.dumps(corpus_line(args.seed + i), separators=(",", ":")) + "\n")
    return 0


def _validate(files):
    bad = 0
    for path in files:
        with open(path) as f:
            text = f.read()
        docs = [json.loads(l) for l in text.splitlines() if l.strip()] if path.endswith(".jsonl") \
            else [json.loads(text)]
        for doc in docs:
            programs = doc["variants"].items() if "variants" in doc else [("program", doc)]
            for variant, program in programs:
                for error in validate(program):
                    print("%s %s %s: %s" % (path, program.get("id"), variant, error))
                    bad += 1
    return 2 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
