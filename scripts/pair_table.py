#!/usr/bin/env python3
"""Prints the counterfactual pair table of docs/findings.md for a directory of recordings.

For each bad cuoverlap-streams scenario and its fixed twin (workloads/streams/scenarios.json
`fixed_twin`, plus the pairs tests/diagnosis/test_counterfactual_pairs.cpp adds), it analyzes
DIR/streams_<bad>.sqlite and DIR/streams_<twin>.sqlite (or .sqlite.gz, as tests/data stores them) with `cuoverlap analyze --format json`
and computes what that test asserts: the responsible findings' cost (after the ledger, whole run)
against the measured span difference, and the fixed twin's largest finding as a share of its span.
Exit 1 when a pair misses (outside +-30%, or a twin finding >= 5% of its span), 2 on bad usage.

  scripts/pair_table.py CUOVERLAP DIR      e.g. build/cli/cuoverlap tests/data
"""
import json
import os
import subprocess
import sys

def recording(folder, scenario):
    """DIR/streams_SCENARIO.sqlite, else its gzip-compressed form (tests/data stores that)."""
    plain = os.path.join(folder, f"streams_{scenario}.sqlite")
    return plain + ".gz" if not os.path.exists(plain) and os.path.exists(plain + ".gz") else plain


TOLERANCE, CLEAN, NEGLIGIBLE = 0.30, 0.05, 0.02
# The test's table: pairs and responsible findings beyond the manifest's.
EXTRA = {
    "serial": ("pipeline3", {"single-stream", "sync-memcpy"}),
    "nullstream-trap": ("nonblocking", {"legacy-default-stream"}),
    "pageable": ("pipeline3", {"pageable-memcpy", "low-overlap"}),
    "sync-in-loop": ("pipeline3", {"blocking-sync-call", "low-overlap"}),
    "event-dag-serialized": ("event-dag", {"event-wait-serialization", "low-overlap"}),
    "host-bound": ("host-bound-graph", {"host-launch-bound"}),
    "implicit-sync": ("implicit-sync-fixed", {"implicit-sync-call", "sync-memset", "low-overlap"}),
    "saturating": ("saturating-fixed", {"device-saturating-kernel"}),
    "sync-copy": ("sync-copy-fixed", {"pageable-memcpy", "sync-memcpy"}),
    "host-busy": ("host-busy-fixed", {"host-busy"}),
    "memset-barrier": ("memset-barrier-fixed", {"legacy-default-stream"}),
    "wait-chain": ("wait-chain-fixed", {"cross-stream-kernel-wait"}),
}


def pairs(root):
    result = {bad: (twin, set(ids)) for bad, (twin, ids) in EXTRA.items()}
    with open(os.path.join(root, "workloads/streams/scenarios.json")) as f:
        for s in json.load(f)["scenarios"]:
            if s.get("fixed_twin"):
                ids = set(s["expected_findings"]) | EXTRA.get(s["name"], ("", set()))[1]
                result[s["name"]] = (s["fixed_twin"], ids)
    return result


def analyze(cli, path):
    out = subprocess.run([cli, "analyze", path, "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    trace = json.loads(out)["traces"][0]
    return trace["devices"][0]["span_ns"], trace["findings"]


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    cli, folder = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    missed = 0
    print("| bad / fixed | responsible findings (cost of each) | cost | measured saving | cost / saving | twin's largest finding |")
    print("| --- | --- | --- | --- | --- | --- |")
    for bad, (twin, responsible) in sorted(pairs(root).items()):
        bad_path, twin_path = recording(folder, bad), recording(folder, twin)
        if not (os.path.exists(bad_path) and os.path.exists(twin_path)):
            print(f"| {bad} / {twin} | trace missing | | | miss | |")
            missed += 1
            continue
        bad_span, bad_findings = analyze(cli, bad_path)
        twin_span, twin_findings = analyze(cli, twin_path)
        charged = [(f["id"], f["time_ns"]) for f in bad_findings if f["id"] in responsible]
        cost = sum(ns for _, ns in charged)
        saving = bad_span - twin_span
        if saving < NEGLIGIBLE * bad_span:
            ok = cost < NEGLIGIBLE * bad_span
            ratio = f"negligible (cost {cost / bad_span:.1%} of span)"
        else:
            ok = (1 - TOLERANCE) * saving <= cost <= (1 + TOLERANCE) * saving
            ratio = f"{cost / saving:.0%}"
        worst = max(twin_findings, key=lambda f: f["time_ns"], default=None)
        twin_note = "clean"
        if worst is not None:
            share = worst["time_ns"] / twin_span
            twin_note = f"{worst['id']} {worst['time_ns'] / 1e6:.2f} ms ({share:.1%})"
            ok = ok and share < CLEAN
        names = " + ".join(f"{i} {ns / 1e6:.2f}" for i, ns in charged) or "none"
        print(f"| {bad} / {twin} | {names} | {cost / 1e6:.2f} ms | {saving / 1e6:.2f} ms | "
              f"{ratio}{'' if ok else ' (**miss**)'} | {twin_note} |")
        missed += 0 if ok else 1
    print(f"\n{len(pairs(root)) - missed} of {len(pairs(root))} pairs within +-30% with clean twins")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
