#!/usr/bin/env python3
"""What the lab's measurement alone says of a fix that changes nothing (docs/lab.md, "Null variants").

  lab_null_variants.py make PROGRAMS.jsonl[.gz] OUT.jsonl [--count N] [--seed S]
  lab_null_variants.py summarize MANIFEST.json

`make` draws N programs of each kind (the generator's `threads` shape, and every other shape: one
host thread) from a corpus's programs (seed S; N 30, S 49) and writes each as a corpus line whose
variants are its baseline and three copies of it, `n1`, `n2` and `n3`. Recorded like any corpus
(`PROGRAMS=OUT.jsonl scripts/lab_record.sh DIR`), every rep runs the baseline first and then the
copies in that order (cuoverlap-lab runs a program's variants interleaved, the baseline first).

`summarize` reads that recording's manifest.json and prints, per kind and copy, the median over
programs of the saving the lab measures for the copy (the median of the reps' paired
differences, as `cuoverlap lab score` does), how many of those are positive, and how many null
cases a claim of 0 would have outside the score's tolerance (a saving above 20 µs: every null
saving is under 70 µs or should be), with the cases' median uncertainty (twice the standard error,
from the differences' interquartile range). A saving that leans one way with the copy's place says
the run order biases the measurement; the share outside is the floor that noise alone puts under
a perfect model's claims of nothing. Exit 0; 2 on bad input (one line).
"""
import gzip
import json
import random
import statistics
import sys

NULLS = ("n1", "n2", "n3")
SMALL_TOLERANCE_NS = 20_000


def fail(message):
    print(f"lab_null_variants: {message}", file=sys.stderr)
    sys.exit(2)


def read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt") as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        fail(f"{path}: not a corpus of JSON lines ({e})")


def make(args):
    if len(args) < 2:
        fail("usage: make PROGRAMS.jsonl[.gz] OUT.jsonl [--count N] [--seed S]")
    source, out = args[0], args[1]
    count = int(args[args.index("--count") + 1]) if "--count" in args else 30
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 49
    lines = read_lines(source)
    if not all(isinstance(line, dict) and "baseline" in line.get("variants", {}) for line in lines):
        fail(f"{source}: a line without a baseline variant")
    rng = random.Random(seed)
    threads = [line for line in lines if line.get("shape") == "threads"]
    one = [line for line in lines if line.get("shape") != "threads"]
    picked = rng.sample(threads, min(count, len(threads))) + rng.sample(one, min(count, len(one)))
    with open(out, "x") as f:
        for line in picked:
            baseline = line["variants"]["baseline"]
            variants = {"baseline": baseline, **{name: baseline for name in NULLS}}
            f.write(json.dumps({"id": line["id"], "seed": line.get("seed"), "shape": line.get("shape"),
                                "variants": variants}) + "\n")
    print(f"{out}: {len(picked)} programs ({min(count, len(threads))} threads), variants baseline, "
          + ", ".join(NULLS))


def uncertainty(differences):
    ordered = sorted(differences)
    n = len(ordered)
    q1, q3 = ordered[n // 4], ordered[(3 * n) // 4]
    return 2 * 1.2533 * (q3 - q1) / 1.349 / n ** 0.5


def summarize(args):
    if len(args) != 1:
        fail("usage: summarize MANIFEST.json")
    try:
        with open(args[0]) as f:
            programs = json.load(f)["programs"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{args[0]}: not a lab manifest ({e})")
    print("kind       copy  programs    median saving µs  positive")
    for kind in ("threads", "one thread"):
        chosen = [p for p in programs if (p.get("shape") == "threads") == (kind == "threads")]
        outside, cases, errors = 0, 0, []
        for name in NULLS:
            savings = []
            for p in chosen:
                baseline = p["baseline"]["spans_ns"]
                spans = p["variants"].get(name, {}).get("spans_ns", [])
                if len(spans) != len(baseline) or len(spans) < 2:
                    continue
                differences = [b - s for b, s in zip(baseline, spans)]
                saving = statistics.median(differences)
                savings.append(saving)
                cases += 1
                outside += saving > SMALL_TOLERANCE_NS
                errors.append(uncertainty(differences))
            if savings:
                print(f"{kind:10} {name:4} {len(savings):8} {statistics.median(savings) / 1e3:17.2f}"
                      f"  {sum(s > 0 for s in savings):4}/{len(savings):<3}")
        if cases:
            print(f"{kind:10} all  {cases:8}  outside with claim 0: {outside} ({outside / cases:.0%}), "
                  f"median uncertainty {statistics.median(errors) / 1e3:.1f} µs")


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("make", "summarize"):
        fail("usage: lab_null_variants.py make PROGRAMS OUT [--count N] [--seed S] | summarize MANIFEST.json")
    (make if sys.argv[1] == "make" else summarize)(sys.argv[2:])


if __name__ == "__main__":
    main()
