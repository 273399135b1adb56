#!/usr/bin/env python3
"""HolisticTraceAnalysis on the per-rank Kineto export of a multi-rank trace.

usage: hta_ranks_check.py CUOVERLAP WORKDIR TRACE

Exports TRACE with `--steady-state -o rank%r.json` (one file per rank, each rank's steady state,
as torch.profiler with a schedule would have recorded it), loads the folder with HTA and checks, per
rank, that HTA's communication/computation overlap (get_comm_comp_overlap, over the iterations
HTA keeps: its ProfilerStep#N but the last) is our steady state's communication.hidden_fraction
for that rank's device within 1 point. Exits 77 (ctest: skipped) when HTA cannot be imported.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

try:
    import logging
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
except Exception as error:  # ImportError, or HTA's own missing dependencies
    print(f"SKIP: HolisticTraceAnalysis not importable ({error}); "
          "pip install HolisticTraceAnalysis psutil")
    sys.exit(77)

TOLERANCE_POINTS = 1.0


def main(cli, workdir, trace):
    folder = os.path.join(workdir, "ranks")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    subprocess.run([cli, "export", trace, "--format", "kineto", "--steady-state", "-o",
                    os.path.join(folder, "rank%r.json")], check=True, capture_output=True)
    files = sorted(glob.glob(os.path.join(folder, "rank*.json")))
    report = json.loads(subprocess.run([cli, "analyze", trace, "--format", "json"], check=True,
                                       capture_output=True, text=True).stdout)
    ours = {}
    for rank_file in files:
        doc = json.load(open(rank_file))
        rank = doc["distributedInfo"]["rank"]
        devices = {e["pid"] for e in doc["traceEvents"] if e.get("cat") == "kernel"}
        assert len(devices) == 1, f"{rank_file}: kernels on devices {devices}"
        device = devices.pop()
        steady = report["traces"][0]["steady_state"]
        row = next(d for d in steady["devices"] if d["device_id"] == device)
        ours[rank] = 100.0 * row["communication"]["hidden_fraction"]

    analysis = TraceAnalysis(trace_dir=folder)
    overlap = analysis.get_comm_comp_overlap(visualize=False)
    failures = []
    for _, row in overlap.iterrows():
        rank = int(row["rank"])
        theirs = float(row["comp_comm_overlap_pctg"])
        print(f"rank {rank}: HTA comm/comp overlap {theirs:.2f}%, cuoverlap steady-state hidden "
              f"{ours[rank]:.2f}%")
        if abs(theirs - ours[rank]) > TOLERANCE_POINTS:
            failures.append(f"rank {rank}: HTA {theirs:.2f}% vs ours {ours[rank]:.2f}%")
    if len(overlap) != len(files) or len(files) < 2:
        failures.append(f"HTA read {len(overlap)} ranks from {len(files)} files")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
