#!/usr/bin/env python3
"""HolisticTraceAnalysis reads `cuoverlap export --format kineto` and finds what we report.

usage: hta_check.py CUOVERLAP WORKDIR TRACE...

For each trace: export it in Kineto's layout, analyze it with cuoverlap (JSON report), then
  - count the exported events per category with json (an independent count) and with HTA's
    parser: kernel / gpu_memcpy / gpu_memset counts must equal the report's;
  - HTA's temporal breakdown (ns rounding disabled: HTA_DISABLE_NS_ROUNDING=1) must give our
    span (HTA kernel_time), idle (idle_time) and kernel union (compute_time; the traces have no
    NCCL kernels, which HTA counts as non-compute and we as compute) within 0.01 µs.
Exits 77 (ctest: skipped) when HTA cannot be imported: pip install HolisticTraceAnalysis psutil.
"""
import json
import os
import subprocess
import sys

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
try:
    import logging
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
except Exception as error:  # ImportError, or HTA's own missing dependencies
    print(f"SKIP: HolisticTraceAnalysis not importable ({error}); "
          "pip install HolisticTraceAnalysis psutil")
    sys.exit(77)

TOLERANCE_US = 0.01


def check(cli, workdir, trace):
    name = os.path.basename(trace)
    folder = os.path.join(workdir, name)
    os.makedirs(folder, exist_ok=True)
    exported = os.path.join(folder, "rank0.json")
    if os.path.exists(exported):
        os.remove(exported)  # export never overwrites an existing file without --force
    subprocess.run([cli, "export", trace, "--format", "kineto", "-o", exported], check=True,
                   capture_output=True)
    report = json.loads(subprocess.run([cli, "analyze", trace, "--format", "json"], check=True,
                                       capture_output=True, text=True).stdout)
    devices = report["traces"][0]["devices"]
    assert len(devices) == 1, f"{name}: HTA merges the devices of a rank; use one-device traces"
    ours = devices[0]

    events = json.load(open(exported))["traceEvents"]
    counted = {cat: sum(1 for e in events if e.get("cat") == cat and e.get("ph") == "X")
               for cat in ("kernel", "gpu_memcpy", "gpu_memset")}

    analysis = TraceAnalysis(trace_dir=folder)
    df = analysis.t.get_trace(0)
    symbols = analysis.t.symbol_table.get_sym_table()
    cats = df["cat"].map(lambda i: symbols[i])
    hta_counts = {cat: int((cats == cat).sum()) for cat in counted}
    breakdown = analysis.get_temporal_breakdown(visualize=False).iloc[0]

    failures = []
    for cat, field in (("kernel", "kernels"), ("gpu_memcpy", "memcpys"), ("gpu_memset", "memsets")):
        if not counted[cat] == hta_counts[cat] == ours[field]:
            failures.append(f"{cat}: json {counted[cat]}, HTA {hta_counts[cat]}, ours {ours[field]}")
    pairs = (("kernel_time(us)", ours["span_ns"] / 1000),
             ("idle_time(us)", ours["idle_ns"] / 1000),
             ("compute_time(us)", ours["engines"]["compute"]["busy_ns"] / 1000))
    for column, value in pairs:
        if abs(breakdown[column] - value) > TOLERANCE_US:
            failures.append(f"{column}: HTA {breakdown[column]:.3f}, ours {value:.3f}")
    status = "FAIL" if failures else "ok"
    print(f"{status} {name}: kernels {ours['kernels']}, memcpys {ours['memcpys']}, memsets "
          f"{ours['memsets']}; span {ours['span_ns'] / 1000:.3f} µs, idle "
          f"{ours['idle_ns'] / 1000:.3f} µs (HTA {breakdown['kernel_time(us)']:.3f}, "
          f"{breakdown['idle_time(us)']:.3f})")
    for failure in failures:
        print("   ", failure)
    return not failures


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    cli, workdir, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
    results = [check(cli, workdir, trace) for trace in traces]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
