#!/usr/bin/env python3
"""How many over-claimed cases would a perfect kernel-stretch model bring within? (diagnosis only)

Usage: scripts/lab_stretch_ceiling.py SCORE_JSON VARIANTS_DIR [VARIANTS_DIR ...]
SCORE_JSON: `cuoverlap lab score CORPUS --format json`; VARIANTS_DIR: the corpus's variant traces
(VARIANT_TRACES=1 scripts/lab_record.sh: index.json and the median run of every variant).
Per case whose baseline and variant median runs launched as many kernels: delta = the variant run's
summed kernel time less the baseline run's (how much longer its kernels ran, side by side). A
decided, over-claimed case (claim > saving, not within) counts as fixable when adding 0.5, 0.75 or
1 times delta to what the fix costs would put the claim within the case's tolerance (±30%, or 20 µs
under a 70 µs saving). Prints per finding: cases, decided, within, over-claimed, fixable
(docs/findings.md, "Thirty-ninth session")."""
import collections, json, sqlite3, sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cases = json.load(open(sys.argv[1]))["cases"]
    index = {}
    for d in sys.argv[2:]:
        for prog, info in json.load(open(f"{d}/index.json")).items():
            index[prog] = (f"{d}/{info['trace']}", info["runs"])
    dbs = {}

    def kernel_time(path, window):
        db = dbs.setdefault(path, sqlite3.connect(path))
        return db.execute("SELECT coalesce(sum(end - start), 0), count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                          "WHERE start >= ? AND start < ?", window).fetchone()

    table = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for c in cases:
        if not c["finding"] or c["program"] not in index:
            continue
        path, runs = index[c["program"]]
        if c["variant"] not in runs:
            continue
        base, base_n = kernel_time(path, runs["baseline"]["window_ns"])
        fixed, fixed_n = kernel_time(path, runs[c["variant"]]["window_ns"])
        if base_n != fixed_n:
            continue
        delta, saving, cost = fixed - base, c["saving_ns"], c["cost_ns"]
        tolerance = max(0.3 * abs(saving), 20000) if saving >= 70000 else 20000
        row = table[c["finding"]]
        row[0] += 1
        if not c["decided"]:
            continue
        row[1] += 1
        row[2] += c["within"]
        if not c["within"] and cost > saving:
            row[3] += 1
            row[4] += any(abs(cost - delta * f - saving) <= tolerance for f in (0.5, 0.75, 1.0))
    print(f"{'finding':28s} {'cases':>5s} {'decided':>7s} {'within':>6s} {'over':>5s} {'fixable':>7s}")
    for finding, row in sorted(table.items()):
        print(f"{finding:28s} {row[0]:5d} {row[1]:7d} {row[2]:6d} {row[3]:5d} {row[4]:7d}")


if __name__ == "__main__":
    main()
