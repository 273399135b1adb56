#!/usr/bin/env python3
"""Replaces programs of a lab corpus with those of a newer corpus (docs/lab.md).

  lab_merge.py CORPUS NEWER [--prefix P]

When a transform changes, only the programs whose variants changed need recording again
(`PROGRAMS=FILE scripts/lab_record.sh ...`). Every program of NEWER replaces the one of CORPUS with
the same id, whole (its baseline and every variant come from one recording, so that they share the
machine's drift), and its corpus line replaces the old one in programs.jsonl.gz; NEWER's traces are
copied into CORPUS as P + their name (default "r" + the date: r20261123_batch000.sqlite). A
program of NEWER that CORPUS lacks is added. The manifest lists each replacement under
"replaced": [{"id", "trace", "recorded"}]. Traces no program uses any more are deleted.
"""
import argparse
import datetime
import gzip
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_collect  # noqa: E402  (its trim: rows inside kept windows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("newer")
    parser.add_argument("--prefix", default="r" + datetime.date.today().strftime("%Y%m%d") + "_")
    args = parser.parse_args()
    manifest_path = os.path.join(args.corpus, "manifest.json")
    manifest = json.load(open(manifest_path))
    newer = json.load(open(os.path.join(args.newer, "manifest.json")))
    if manifest.get("schema") != newer.get("schema"):
        sys.exit(f"lab_merge: {args.newer}: schema {newer.get('schema')} is not {manifest.get('schema')}")
    renamed = {}
    for program in newer["programs"]:
        trace = program["trace"]
        if trace not in renamed:
            renamed[trace] = args.prefix + trace
            shutil.copyfile(os.path.join(args.newer, trace), os.path.join(args.corpus, renamed[trace]))
    by_id = {p["id"]: k for k, p in enumerate(manifest["programs"])}
    replaced = manifest.setdefault("replaced", [])
    for program in newer["programs"]:
        program = dict(program, trace=renamed[program["trace"]])
        replaced.append({"id": program["id"], "trace": program["trace"],
                         "recorded": newer.get("date", "")})
        if program["id"] in by_id:
            manifest["programs"][by_id[program["id"]]] = program
        else:
            manifest["programs"].append(program)
    new_ids = {p["id"] for p in newer["programs"]}
    manifest["failed"] = [f for f in manifest.get("failed", []) if f.get("id") not in new_ids] + \
        newer.get("failed", [])
    lines_path = os.path.join(args.corpus, manifest.get("corpus", "programs.jsonl.gz"))
    newer_lines = {}
    with gzip.open(os.path.join(args.newer, newer.get("corpus", "programs.jsonl.gz")), "rt") as f:
        for line in f:
            newer_lines[json.loads(line)["id"]] = line
    kept = []
    with gzip.open(lines_path, "rt") as f:
        for line in f:
            pid = json.loads(line)["id"]
            kept.append(newer_lines.pop(pid, line))
    kept.extend(newer_lines.values())
    with gzip.open(lines_path + ".tmp", "wt") as f:
        f.writelines(kept)
    os.replace(lines_path + ".tmp", lines_path)
    with open(manifest_path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(manifest_path + ".tmp", manifest_path)
    used = {p["trace"] for p in manifest["programs"]}
    for name in os.listdir(args.corpus):
        if name.endswith(".sqlite") and name not in used:
            os.remove(os.path.join(args.corpus, name))
    # A trace some of whose programs were replaced still holds their windows: trim every trace again
    # to the windows of the programs that still use it (which also applies the current trim to
    # traces collected before it changed).
    for trace in sorted(used):
        windows = [tuple(p["baseline"]["window_ns"]) for p in manifest["programs"] if p["trace"] == trace]
        path = os.path.join(args.corpus, trace)
        lab_collect.trim(path, path + ".tmp", windows)
        os.replace(path + ".tmp", path)
    print(f"lab_merge: {len(new_ids)} programs from {args.newer} into {args.corpus}")


if __name__ == "__main__":
    main()
