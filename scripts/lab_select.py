#!/usr/bin/env python3
"""Corpus lines for a focused recording: the programs with a variant of the given transforms, each
with its baseline and those variants alone (docs/lab.md, "The split programs with op buffers").

  lab_select.py PROGRAMS.jsonl[.gz] --variants REGEX [--shapes REGEX] [--not-shapes REGEX] > OUT.jsonl

PROGRAMS is a corpus's programs.jsonl.gz (or a generator's output). A variant is kept when REGEX
matches its name from the start (`multi-stream|copy-ahead` keeps multi-stream@s1 too); a program
is kept when it keeps a variant and its shape matches --shapes and not --not-shapes (each from the
start of the shape, as `threads` or `pipeline+loader`). Its `findings` keep the kept variants'.
Record the output with `PROGRAMS=OUT.jsonl scripts/lab_record.sh`. Exit 0; 2 on bad input
(one line).
"""
import argparse
import gzip
import json
import re
import sys


def fail(message):
    print(f"lab_select: {message}", file=sys.stderr)
    sys.exit(2)


def select(lines, variants, shapes=None, not_shapes=None):
    """The kept programs (dicts) of the corpus lines `lines`, as the module's text says."""
    kept = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            program = json.loads(line)
            shape = program.get("shape", "")
            names = list(program["variants"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"line {number}: not a corpus line ({e.__class__.__name__}: {e})") from e
        if shapes is not None and not shapes.match(shape):
            continue
        if not_shapes is not None and not_shapes.match(shape):
            continue
        chosen = [v for v in names if v != "baseline" and variants.match(v)]
        if not chosen or "baseline" not in names:
            continue
        program["variants"] = {v: program["variants"][v] for v in ["baseline"] + chosen}
        program["findings"] = {v: f for v, f in program.get("findings", {}).items() if v in chosen}
        kept.append(program)
    return kept


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("programs")
    parser.add_argument("--variants", required=True)
    parser.add_argument("--shapes")
    parser.add_argument("--not-shapes")
    args = parser.parse_args()
    try:
        patterns = [re.compile(p) if p is not None else None for p in (args.variants, args.shapes, args.not_shapes)]
    except re.error as e:
        fail(f"not a regular expression: {e}")
    opener = gzip.open if args.programs.endswith(".gz") else open
    try:
        with opener(args.programs, "rt") as f:
            kept = select(f, *patterns)
    except (OSError, EOFError, UnicodeDecodeError) as e:
        fail(f"{args.programs}: {e}")
    except ValueError as e:
        fail(f"{args.programs}: {e}")
    for program in kept:
        sys.stdout.write(json.dumps(program) + "\n")
    print(f"lab_select: {len(kept)} programs, {sum(len(p['variants']) - 1 for p in kept)} variants",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
