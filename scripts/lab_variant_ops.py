#!/usr/bin/env python3
"""What a fix changed on the GPU: the ops of a lab program's kept runs (docs/lab.md, "The fixed
programs' own traces"), from the DIR that `lab_collect.py --variant-traces DIR` wrote
(`VARIANT_TRACES=1 scripts/lab_record.sh` puts it in OUT_DIR/variants).

  lab_variant_ops.py DIR ID [VARIANT ...]   each run's GPU ops, one a line: start (µs from the run's
                                            first op), duration (µs), stream, kind, what (kernels:
                                            name, grid x block; copies: kind, bytes)
  lab_variant_ops.py DIR ID --cmp VARIANT   kernels of the baseline and VARIANT matched in order by
                                            (name, grid): their durations and the ratio (does a
                                            kernel run longer in the fixed program?)
  lab_variant_ops.py DIR ID --calls VARIANT  the CUDA API calls of the baseline's and VARIANT's runs
                                            by name: how many, their median and summed time (µs)
                                            (did a fix change what a call costs? The lab's
                                            multi-stream allocates buffers of its own, and a
                                            loop's cudaMalloc can then take the driver's fast path)
  lab_variant_ops.py DIR ID --analyze VARIANT [ARG ...]
                                            `cuoverlap analyze` of that run's window (CUOVERLAP, or
                                            build/cli/cuoverlap)
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_trace  # noqa: E402  (plain or gzip-compressed traces)

COPY_KINDS = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}


def run_ops(trace, window):
    """[(start, end, stream, kind, what, kernel key or None)] of the GPU ops that start in window."""
    lo, hi = window
    db = lab_trace.connect(trace)
    ops = []
    for start, end, stream, name, grid, block in db.execute(
            "SELECT k.start, k.end, k.streamId, s.value, k.gridX * k.gridY * k.gridZ, "
            "k.blockX * k.blockY * k.blockZ FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.shortName WHERE k.start >= ? AND k.start < ?", (lo, hi)):
        ops.append((start, end, stream, "kernel", f"{name} {grid}x{block}", (name, grid)))
    for start, end, stream, kind, size in db.execute(
            "SELECT start, end, streamId, copyKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY "
            "WHERE start >= ? AND start < ?", (lo, hi)):
        ops.append((start, end, stream, "copy", f"{COPY_KINDS.get(kind, kind)} {size} B", None))
    for start, end, stream, size in db.execute(
            "SELECT start, end, streamId, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET "
            "WHERE start >= ? AND start < ?", (lo, hi)):
        ops.append((start, end, stream, "memset", f"{size} B", None))
    db.close()
    return sorted(ops)


def show(trace, program, variant, run):
    ops = run_ops(trace, run["window_ns"])
    first = ops[0][0] if ops else run["window_ns"][0]
    print(f"== {program} {variant}: span {run['span_ns'] / 1e3:.1f} µs (rep {run['rep']})")
    for start, end, stream, kind, what, _ in ops:
        print(f"{(start - first) / 1e3:10.1f} {(end - start) / 1e3:9.1f}  s{stream:<4} {kind:6} {what}")


def compare(trace, program, runs, variant):
    def kernels(name):
        return [(key, end - start) for start, end, _, kind, _, key in run_ops(trace, runs[name]["window_ns"])
                if kind == "kernel"]

    fixed = kernels(variant)
    used = [False] * len(fixed)
    for key, duration in kernels("baseline"):
        match = next((i for i, (k, _) in enumerate(fixed) if not used[i] and k == key), None)
        if match is None:
            print(f"{key[0]:28} grid {key[1]:6}  base {duration / 1e3:9.1f}  not in {variant}")
            continue
        used[match] = True
        after = fixed[match][1]
        print(f"{key[0]:28} grid {key[1]:6}  base {duration / 1e3:9.1f}  fixed {after / 1e3:9.1f}  "
              f"x{after / max(duration, 1):.2f}")


def run_calls(trace, window):
    """{API name: [durations in ns]} of the runtime and driver calls that start in window."""
    lo, hi = window
    db = lab_trace.connect(trace)
    calls = {}
    for start, end, name in db.execute(
            "SELECT r.start, r.end, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "JOIN StringIds s ON s.id = r.nameId WHERE r.start >= ? AND r.start < ?", (lo, hi)):
        calls.setdefault(name.split("_v")[0], []).append(end - start)
    db.close()
    return calls


def compare_calls(trace, runs, variant):
    before = run_calls(trace, runs["baseline"]["window_ns"])
    after = run_calls(trace, runs[variant]["window_ns"])

    def summary(durations):
        if not durations:
            return f"{0:5} {'-':>9} {'-':>10}"
        ordered = sorted(durations)
        return f"{len(ordered):5} {ordered[len(ordered) // 2] / 1e3:9.1f} {sum(ordered) / 1e3:10.1f}"

    print(f"{'':32} {'baseline':>26}   {variant:>26}")
    print(f"{'call':32} {'n':>5} {'median':>9} {'sum':>10}   {'n':>5} {'median':>9} {'sum':>10}")
    for name in sorted(set(before) | set(after), key=lambda n: -sum(before.get(n, [])) - sum(after.get(n, []))):
        print(f"{name:32} {summary(before.get(name, []))}   {summary(after.get(name, []))}")


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[0] in ("-h", "--help"):
        sys.exit(__doc__)
    directory, program, rest = args[0], args[1], args[2:]
    try:
        with open(os.path.join(directory, "index.json")) as f:
            index = json.load(f)
    except (OSError, ValueError) as error:
        sys.exit(f"lab_variant_ops: {directory}/index.json: {error}")
    if program not in index:
        sys.exit(f"lab_variant_ops: {program}: no kept runs in {directory}")
    trace = os.path.join(directory, index[program]["trace"])
    runs = index[program]["runs"]
    wanted = rest[1:2] if rest[:1] in (["--cmp"], ["--analyze"], ["--calls"]) else rest
    for variant in wanted:
        if variant not in runs:
            sys.exit(f"lab_variant_ops: {program} has no run of {variant} (it has: {', '.join(runs)})")
    if rest[:1] == ["--cmp"] and len(rest) == 2:
        compare(trace, program, runs, rest[1])
    elif rest[:1] == ["--calls"] and len(rest) == 2:
        compare_calls(trace, runs, rest[1])
    elif rest[:1] == ["--analyze"] and len(rest) >= 2:
        lo, hi = runs[rest[1]]["window_ns"]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        cli = os.environ.get("CUOVERLAP", os.path.join(root, "build/cli/cuoverlap"))
        sys.exit(subprocess.run([cli, "analyze", trace, "--window", f"{lo}:{hi}"] + rest[2:]).returncode)
    elif rest[:1] in (["--cmp"], ["--analyze"], ["--calls"]):
        sys.exit(__doc__)
    else:
        for variant in rest or runs:
            show(trace, program, variant, runs[variant])


if __name__ == "__main__":
    main()
