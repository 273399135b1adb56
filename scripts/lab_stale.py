#!/usr/bin/env python3
"""Which of a corpus's variants the transforms no longer make as recorded (docs/lab.md).

  lab_stale.py CORPUS [--transform ID] [--programs OUT.jsonl] [--mark | --check]

A transform that changed after a corpus was recorded leaves the corpus judging a finding against a
fix it no longer advises. For each program this applies every transform to the corpus's own baseline
description and compares with the recorded variants:
  changed  the corpus has the variant, the transform now makes another program of it;
  new      the transform now applies where the corpus has no variant;
  gone     the corpus has a variant the transform no longer makes (it does not apply any more).
It prints the counts per transform and the ids (--transform: that transform's variants only).

--programs OUT.jsonl writes the corpus lines to record (`PROGRAMS=OUT.jsonl scripts/lab_record.sh`):
each such program's baseline and its changed and new variants as the transform makes them now; the
recording then goes in with `lab_merge.py CORPUS NEWER --changed` and `--variants-only`.
--mark marks the changed and gone variants in the manifest (`"stale": "changed"` or `"gone"`), which
`cuoverlap lab score` then leaves out and counts, and unmarks the variants that are current again.
Which variants are stale is the transforms' output alone, never their score; `lab_merge.py
--changed` unmarks the variants it records again. --check prints nothing else and exits 1 where the
manifest's marks are not what --mark would make (a transform changed and the corpus was not marked
again), naming the variants.
"""
import argparse
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "workloads", "lab"))
import lab_manifest  # noqa: E402  (how a manifest is written)
from lab_merge import write_atomically  # noqa: E402  (through PATH.tmp, then renamed)
from labgen.generator import variants  # noqa: E402  (every transform's variants of a program)
from labgen.transforms import base_id  # noqa: E402


def read_lines(path):
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def same_program(recorded, made):
    """A recorded variant may carry extra top-level fields (the interpreter ignores them)."""
    return {k: v for k, v in recorded.items() if k in made} == made


def compare(line, only):
    """{"changed"|"new"|"gone": [variant names]} and {name: (program, finding)} for one corpus line."""
    made = variants(line["variants"]["baseline"])
    recorded = {k: v for k, v in line["variants"].items() if k != "baseline"}
    out = {"changed": [], "new": [], "gone": []}
    for name in sorted(set(made) | set(recorded)):
        if only and base_id(name) != only:
            continue
        if name not in recorded:
            out["new"].append(name)
        elif name not in made:
            out["gone"].append(name)
        elif not same_program(recorded[name], made[name][0]):
            out["changed"].append(name)
    return out, made


def mark(corpus, stale, only):
    """Marks CORPUS's manifest variants stale (id -> {name: "changed"|"gone"}); unmarks the rest (of
    transform `only` where given)."""
    manifest_path = os.path.join(corpus, "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    marked = 0
    for program in manifest["programs"]:
        for name, variant in program["variants"].items():
            if only and base_id(name) != only:
                continue
            reason = stale.get(program["id"], {}).get(name)
            if reason:
                variant["stale"] = reason
                marked += 1
            else:
                variant.pop("stale", None)
    write_atomically(manifest_path, lambda f: lab_manifest.dump(manifest, f))
    return marked


def check(manifest, stale, only):
    """The variants whose mark in the manifest differs from `stale` (id -> {name: reason})."""
    wrong = []
    for program in manifest["programs"]:
        for name, variant in program["variants"].items():
            if only and base_id(name) != only:
                continue
            want = stale.get(program["id"], {}).get(name)
            if variant.get("stale") != want:
                wrong.append(f"{program['id']} {name}: marked {variant.get('stale') or 'current'}, "
                             f"{want or 'current'} by its transform now")
    return wrong


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--transform", help="only this transform's variants")
    parser.add_argument("--programs", help="write the corpus lines to record to this file")
    act = parser.add_mutually_exclusive_group()
    act.add_argument("--mark", action="store_true",
                     help="mark the changed and gone variants stale in the manifest (the score leaves them out)")
    act.add_argument("--check", action="store_true",
                     help="exit 1 where the manifest's stale marks are not what --mark would make")
    args = parser.parse_args()
    with open(os.path.join(args.corpus, "manifest.json")) as f:
        manifest = json.load(f)
    lines = read_lines(os.path.join(args.corpus, manifest.get("corpus", "programs.jsonl.gz")))
    totals, to_record, stale = {}, [], {}
    for line in lines:
        found, made = compare(line, args.transform)
        for kind, names in found.items():
            for name in names:
                totals.setdefault(base_id(name), {}).setdefault(kind, []).append(
                    line["id"] + name[len(base_id(name)):])
        fresh = found["changed"] + found["new"]
        if fresh:
            to_record.append({"id": line["id"], "seed": line.get("seed"), "shape": line.get("shape", ""),
                              "variants": dict([("baseline", line["variants"]["baseline"])] +
                                               [(n, made[n][0]) for n in fresh]),
                              "findings": {n: made[n][1] for n in fresh}})
        stale[line["id"]] = {n: kind for kind in ("changed", "gone") for n in found[kind]}
    if args.check:
        wrong = check(manifest, stale, args.transform)
        for line in wrong[:20]:
            print(f"lab_stale: {args.corpus}: {line}")
        if wrong:
            print(f"lab_stale: {args.corpus}: {len(wrong)} variants marked otherwise than their transforms "
                  f"make them now; run lab_stale.py {args.corpus} --mark (docs/lab.md, \"Stale variants\")")
            return 1
        marked = sum(len(v) for v in stale.values())
        print(f"lab_stale: {args.corpus}: {marked} variants marked stale, as their transforms make them now")
        return 0
    for transform, kinds in sorted(totals.items()):
        print(f"{transform}: " + ", ".join(f"{kind} {len(ids)}" for kind, ids in sorted(kinds.items())))
        for kind, ids in sorted(kinds.items()):
            print(f"  {kind}: {' '.join(ids)}")
    if not totals:
        print(f"lab_stale: {args.corpus}: every variant is what its transform makes now")
    if args.programs:
        write_atomically(args.programs, lambda f: f.writelines(
            json.dumps(entry, separators=(",", ":")) + "\n" for entry in to_record))
        print(f"lab_stale: {len(to_record)} programs to record in {args.programs}")
    if args.mark:
        print(f"lab_stale: {mark(args.corpus, stale, args.transform)} variants of {args.corpus} marked stale")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError, KeyError, TypeError) as error:  # a missing or malformed corpus
        sys.exit(f"lab_stale: {type(error).__name__}: {error}")
