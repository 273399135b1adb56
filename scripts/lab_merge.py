#!/usr/bin/env python3
"""Replaces programs of a lab corpus with those of a newer corpus (docs/lab.md).

  lab_merge.py CORPUS NEWER [--prefix P]
  lab_merge.py CORPUS NEWER --variants-only
  lab_merge.py CORPUS NEWER --rerecorded
  lab_merge.py CORPUS NEWER --changed

When a transform changes, only the programs whose variants changed need recording again
(`PROGRAMS=FILE scripts/lab_record.sh ...`). Every program of NEWER replaces the one of CORPUS with
the same id, whole (its baseline and every variant come from one recording, so that they share the
machine's drift), and its corpus line replaces the old one in programs.jsonl.gz; NEWER's traces are
copied into CORPUS as P + their name (default "r" + the date: r20261123_batch000.sqlite). A
program of NEWER that CORPUS lacks is added. The manifest lists each replacement under
"replaced": [{"id", "trace", "recorded"}]. Traces no program uses any more are deleted.
A recording of the same programs on a noisy machine start is no better measurement: before
anything changes, the replaced programs' baseline spread (interquartile range over median) in NEWER
is compared with CORPUS's, the median of the ratios printed with the median ratio of their spans,
and a NEWER whose spread is more than 1.3 times CORPUS's is refused unless --accept-noisier is
given (2026-11-25: a machine start ran the managed programs' baselines with 1.5-2.1 times the
spread and 3.5-6% slower; the next start, 0.8-1.0 times).

With --variants-only (a transform that now applies to programs it did not before, recorded as each
program's baseline and its new variants only), CORPUS keeps its programs, traces and cases: each
variant of NEWER that the CORPUS program lacks is added with `"baseline_spans_ns"`, the baseline
runs recorded with it (`cuoverlap lab score` pairs the variant with those, not with the program's
runs of another recording), and its description joins the program's corpus line. A variant CORPUS
has already, and a program CORPUS lacks, are left out (counted). The manifest lists the additions
under "added_variants": [{"id", "variants", "recorded"}]; the streams of one-stream variants are
named again in CORPUS's traces (lab_streams.py).

With --rerecorded (variants recorded again with more runs, each with baseline runs of its own,
because their saving's uncertainty left them undecided: chosen by that uncertainty alone, never by
their score), each variant of NEWER that the CORPUS program has replaces that variant's runs:
"spans_ns", "median_ns" and "baseline_spans_ns" come from NEWER, the rest of the entry (its
finding, the stream it acts on) stays. A variant whose description differs from CORPUS's is an
error (it would be another program). The manifest lists them under "rerecorded_variants": [{"id",
"variants", "recorded", "reps"}].

With --changed (a transform whose output changed for programs it applied to already, recorded as
each program's baseline and the changed variants), the same, except that the variant's description
is NEWER's and replaces CORPUS's in programs.jsonl.gz (a variant of NEWER whose description is
CORPUS's did not change: it is left as it was, counted, so a whole recording's other variants do not
replace the corpus's runs): the claims still come from CORPUS's kept
baseline run (the baseline's description must not differ), the saving from the changed fix's runs
beside baseline runs of their own, and the variant is no longer marked stale (lab_stale.py). The
manifest lists them under "changed_variants".

With any of the three, a program whose newer baseline median lies more than 5% from the corpus's
(the score's `drifted`: another machine start ran it otherwise) is left out and named, since its
variants' savings would not be comparable with the claims of the analyzed recording; record it
again whole, or pass --keep-drifted.
"""
import argparse
import datetime
import gzip
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_collect  # noqa: E402  (its trim: rows inside kept windows)
import lab_manifest  # noqa: E402  (how a manifest is written)
import lab_trace  # noqa: E402  (plain or gzip-compressed traces)
import lab_streams  # noqa: E402  (names the stream a one-stream variant acts on)


def read_lines(path):
    """id -> corpus line (dict), in file order."""
    with gzip.open(path, "rt") as f:
        return {entry["id"]: entry for entry in map(json.loads, f)}


def write_atomically(path, write):
    with (gzip.open if path.endswith(".gz") else open)(path + ".tmp", "wt") as f:
        write(f)
    os.replace(path + ".tmp", path)


def add_variants(args, manifest, newer):
    """--variants-only: the variants of NEWER's programs that CORPUS's lack, with their baselines.
    --rerecorded: the runs of the variants CORPUS's programs have, with their baselines.
    --changed: as --rerecorded, and those variants' descriptions too (the baselines' must match)."""
    lines_path = os.path.join(args.corpus, manifest.get("corpus", "programs.jsonl.gz"))
    lines = read_lines(lines_path)
    newer_lines = read_lines(os.path.join(args.newer, newer.get("corpus", "programs.jsonl.gz")))
    by_id = {p["id"]: p for p in manifest["programs"]}
    replacing = args.rerecorded or args.changed
    added = manifest.setdefault("changed_variants" if args.changed else
                                "rerecorded_variants" if args.rerecorded else "added_variants", [])
    counts = {"variants": 0, "present": 0, "unknown programs": 0, "unchanged": 0}
    drifted = []
    for program in newer["programs"]:
        target = by_id.get(program["id"])
        if target is None or program["id"] not in lines:
            counts["unknown programs"] += 1
            continue
        line, newer_line = lines[program["id"]], newer_lines[program["id"]]
        names = []
        drift = statistics.median(program["baseline"]["spans_ns"]) / target["baseline"]["median_ns"] - 1
        if abs(drift) > MAX_BASELINE_DRIFT and not args.keep_drifted:
            # Its runs would be paired with baselines that ran otherwise than the analyzed recording's:
            # the claim and the saving would be of two programs (the score's `drifted`).
            drifted.append(f"{program['id']} {drift:+.1%}")
            continue
        for name, variant in program["variants"].items():
            if replacing:
                if name not in target["variants"]:
                    counts["present"] += 1  # not in CORPUS: nothing to record again
                    continue
                if args.changed:
                    if newer_line["variants"]["baseline"] != line["variants"]["baseline"]:
                        raise ValueError(f"{program['id']}: its baseline is not CORPUS's")
                    if newer_line["variants"][name] == line["variants"][name]:
                        counts["unchanged"] += 1  # its transform makes it as recorded: its runs stay
                        continue
                    line["variants"][name] = newer_line["variants"][name]
                    target["variants"][name].pop("stale", None)  # recorded as the transform makes it now
                elif newer_line["variants"][name] != line["variants"][name]:
                    raise ValueError(f"{program['id']} {name}: its description is not CORPUS's")
                target["variants"][name].update(
                    spans_ns=variant["spans_ns"], median_ns=variant["median_ns"],
                    baseline_spans_ns=program["baseline"]["spans_ns"])
                names.append(name)
                continue
            if name in target["variants"]:
                counts["present"] += 1
                continue
            entry = {k: v for k, v in variant.items() if k not in ("stream_id", "thread_id")}
            entry["baseline_spans_ns"] = program["baseline"]["spans_ns"]
            target["variants"][name] = entry
            line["variants"][name] = newer_line["variants"][name]
            if name in newer_line.get("findings", {}):
                line.setdefault("findings", {})[name] = newer_line["findings"][name]
            names.append(name)
        if names:
            added.append({"id": program["id"], "variants": names, "recorded": newer.get("date", "")})
            if replacing:
                added[-1]["reps"] = len(program["baseline"]["spans_ns"])
            manifest["failed"] = manifest.get("failed", []) + [
                f for f in newer.get("failed", []) if f.get("id") == program["id"] and f.get("variant") in names]
            counts["variants"] += len(names)
    if not args.rerecorded:  # with --rerecorded the descriptions are CORPUS's already
        write_atomically(lines_path, lambda f: f.writelines(
            json.dumps(entry, separators=(",", ":")) + "\n" for entry in lines.values()))
    manifest_path = os.path.join(args.corpus, "manifest.json")
    write_atomically(manifest_path, lambda f: lab_manifest.dump(manifest, f))
    named = lab_streams.annotate(args.corpus)
    if drifted:
        print(f"lab_merge: {len(drifted)} programs left out, their baselines more than "
              f"{MAX_BASELINE_DRIFT:.0%} away from the corpus's (record them again whole, or pass "
              f"--keep-drifted): {', '.join(drifted)}")
    unchanged = f"{counts['unchanged']} unchanged, left as they were; " if args.changed else ""
    print(f"lab_merge: {counts['variants']} variants from {args.newer} into {args.corpus} "
          f"({counts['present']} {'not in it' if replacing else 'present already'}, {unchanged}"
          f"{counts['unknown programs']} programs not in it; "
          f"{named['named']} of {named['variants']} one-stream variants name their stream)")


# At most this median ratio of the replaced programs' baseline spread, newer over corpus.
MAX_SPREAD_RATIO = 1.3
# At most this share between a newer recording's baseline median and the corpus's, for variants
# merged with baselines of their own (cuoverlap/lab_score.h's kBaselineDriftShare).
MAX_BASELINE_DRIFT = 0.05


def spread(spans):
    """Interquartile range over median of a program's runs; None for fewer than 4 runs."""
    if len(spans) < 4:
        return None
    ordered = sorted(spans)
    n = len(ordered)
    middle = statistics.median(ordered)
    return (ordered[(3 * n) // 4] - ordered[n // 4]) / middle if middle > 0 else None


def baseline_comparison(manifest, newer):
    """(programs compared, median spread ratio, median span ratio) of NEWER's programs against the
    corpus programs they replace; (0, None, None) where none compares."""
    old = {p["id"]: p for p in manifest["programs"]}
    spreads, spans = [], []
    for program in newer["programs"]:
        before = old.get(program["id"])
        if before is None:
            continue
        a, b = spread(program["baseline"]["spans_ns"]), spread(before["baseline"]["spans_ns"])
        if a is not None and b:
            spreads.append(a / b)
        if before["baseline"].get("median_ns"):
            spans.append(program["baseline"]["median_ns"] / before["baseline"]["median_ns"])
    if not spreads:
        return 0, None, None
    return len(spreads), statistics.median(spreads), statistics.median(spans) if spans else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("newer")
    parser.add_argument("--prefix", default="r" + datetime.date.today().strftime("%Y%m%d") + "_")
    mode = parser.add_mutually_exclusive_group()  # one way to merge at a time
    mode.add_argument("--variants-only", action="store_true",
                      help="add the variants CORPUS's programs lack, with their own baseline runs")
    mode.add_argument("--rerecorded", action="store_true",
                      help="replace the runs of the variants CORPUS's programs have, with their own baseline runs")
    mode.add_argument("--changed", action="store_true",
                      help="replace the runs and descriptions of variants whose transform changed, with their own baseline runs")
    parser.add_argument("--keep-drifted", action="store_true",
                        help=f"with the modes above, also merge programs whose newer baselines ran more than "
                             f"{MAX_BASELINE_DRIFT * 100:.0f}%% away from the corpus's")
    parser.add_argument("--accept-noisier", action="store_true",
                        help=f"replace programs even where NEWER's baselines spread over {MAX_SPREAD_RATIO}x CORPUS's")
    args = parser.parse_args()
    manifest_path = os.path.join(args.corpus, "manifest.json")
    manifest = json.load(open(manifest_path))
    newer = json.load(open(os.path.join(args.newer, "manifest.json")))
    if manifest.get("schema") != newer.get("schema"):
        sys.exit(f"lab_merge: {args.newer}: schema {newer.get('schema')} is not {manifest.get('schema')}")
    if args.variants_only or args.rerecorded or args.changed:
        add_variants(args, manifest, newer)
        return
    compared, spread_ratio, span_ratio = baseline_comparison(manifest, newer)
    if compared:
        print(f"lab_merge: the {compared} replaced programs' baselines: spread {spread_ratio:.2f}x, "
              f"span {span_ratio:.3f}x the corpus's (medians)")
        if spread_ratio > MAX_SPREAD_RATIO and not args.accept_noisier:
            sys.exit(f"lab_merge: {args.newer}: its baselines spread {spread_ratio:.2f}x the runs they would "
                     f"replace (at most {MAX_SPREAD_RATIO}x): a noisy machine; record again, or pass --accept-noisier")
    renamed = {p["trace"]: args.prefix + p["trace"] for p in newer["programs"]}
    taken = sorted(name for name in renamed.values() if os.path.exists(os.path.join(args.corpus, name)))
    if taken:  # another merge's traces (the same day's default prefix): never overwrite them
        sys.exit(f"lab_merge: {args.corpus} has {taken[0]} already; pass another --prefix")
    for trace, name in renamed.items():
        shutil.copyfile(os.path.join(args.newer, trace), os.path.join(args.corpus, name))
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
        lab_manifest.dump(manifest, f)
    os.replace(manifest_path + ".tmp", manifest_path)
    used = {p["trace"] for p in manifest["programs"]}
    for name in os.listdir(args.corpus):
        if name.endswith((".sqlite", ".sqlite.gz")) and name not in used:
            os.remove(os.path.join(args.corpus, name))
    # A trace some of whose programs were replaced still holds their windows: trim every trace again
    # to the windows of the programs that still use it (all their kept runs: windows_ns) (which also applies the current trim to
    # traces collected before it changed).
    for trace in sorted(used):
        windows = [w for p in manifest["programs"] if p["trace"] == trace for w in lab_collect.kept_windows(p)]
        path = os.path.join(args.corpus, trace)
        lab_collect.trim(path, path + ".tmp", windows, compress=lab_trace.compressed(path))
        os.replace(path + ".tmp", path)
    print(f"lab_merge: {len(new_ids)} programs from {args.newer} into {args.corpus}")


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError, KeyError, TypeError) as error:  # a missing or malformed corpus
        sys.exit(f"lab_merge: {type(error).__name__}: {error}")
