#!/usr/bin/env python3
"""Collector overhead benchmark; prints one Markdown table (docs/BENCHMARKS.md, Collector overhead).

usage: run_collector_bench.py BUILD_DIR [--launches N] [--reps R] [--pipeline-reps R] [--big N]

Two workloads, each run untraced ("none"), under the floor tracer (a CUPTI subscriber enabling the
same kinds and discarding every record) and under cuoverlap, in interleaved repetitions (the order
of the tracers rotates every repetition):
  - bench_empty_launch: N launches of an empty kernel; the launch loop's time per launch.
  - cuoverlap-streams pipeline3 --no-baseline: the process's wall time (start-up and the final
    flush included) and the scenario's own timed region (wall_ms of its --result-line). Also run
    as `cuoverlap record` runs it, with NVTX injection too ("cuoverlap+nvtx"; the floor tracer
    does not trace NVTX, so only "cuoverlap" is compared with it).
Each row: median (min-max), the added time over untraced, and that added time divided by the floor
tracer's (target <= 1.2). Then one cuoverlap run of --big launches: dropped records and records
written per second."""
import argparse, os, re, sqlite3, statistics, subprocess, sys, tempfile, time


def run(cmd, env_extra):
    """Runs cmd; returns (process wall seconds, stdout)."""
    env = dict(os.environ, **env_extra)
    begin = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - begin
    if out.returncode != 0:
        sys.exit(f"{cmd} failed ({out.returncode}): {out.stdout[-2000:]} {out.stderr[-2000:]}")
    return wall, out.stdout


def number(pattern, text):
    m = re.search(pattern, text)
    if m is None:
        sys.exit(f"no '{pattern}' in output: {text[-2000:]}")
    return float(m.group(1))


def session(path):
    db = sqlite3.connect(path)
    rows = dict(db.execute("SELECT key, value FROM CUOVERLAP_SESSION"))
    db.close()
    return rows


def tracer_envs(build, tmp):
    floor = os.path.join(build, "bench/collector/libcuoverlap_floor_tracer.so")
    collector = os.path.join(build, "cli/libcuoverlap_collector.so")
    counter = iter(range(1 << 30))

    def ours(nvtx):
        env = {"CUDA_INJECTION64_PATH": collector, "CUOVERLAP_QUIET": "1",
               "CUOVERLAP_OUTPUT": f"{tmp}/run{next(counter)}.sqlite"}
        if nvtx:
            env["NVTX_INJECTION64_PATH"] = collector
        return env

    return {"none": lambda: {}, "floor": lambda: {"CUDA_INJECTION64_PATH": floor},
            "cuoverlap": lambda: ours(False), "cuoverlap+nvtx": lambda: ours(True)}


def interleave(envs, names, reps, measure):
    """measure(env) -> {metric: value}; returns {metric: {tracer: [values]}}."""
    results = {}
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            for metric, value in measure(envs[name]()).items():
                results.setdefault(metric, {}).setdefault(name, []).append(value)
    return results


def rows(label, unit, scale, per_tracer):
    med = {k: statistics.median(v) * scale for k, v in per_tracer.items()}
    floor_added = med["floor"] - med["none"]
    for name, values in per_tracer.items():
        lo, hi = min(values) * scale, max(values) * scale
        added = med[name] - med["none"]
        ratio = "" if name in ("none", "floor") or floor_added <= 0 else f"{added / floor_added:.2f}"
        print(f"| {label} | {name} | {med[name]:.3f} {unit} ({lo:.3f}-{hi:.3f}) | "
              f"{'' if name == 'none' else f'{added:+.3f} {unit}'} | {ratio} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--launches", type=int, default=200000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--pipeline-reps", type=int, default=11)
    ap.add_argument("--big", type=int, default=1000000)
    a = ap.parse_args()
    empty = os.path.join(a.build, "bench/collector/bench_empty_launch")
    streams = os.path.join(a.build, "workloads/cuoverlap-streams")
    tmp = tempfile.mkdtemp()
    envs = tracer_envs(a.build, tmp)

    launch = interleave(envs, ["none", "floor", "cuoverlap"], a.reps, lambda env: {
        "loop": number(r"loop_s ([0-9.]+)", run([empty, str(a.launches)], env)[1]) / a.launches})
    pipe_cmd = [streams, "pipeline3", "--no-baseline", "--result-line"]

    def pipeline(env):
        wall, out = run(pipe_cmd, env)
        return {"process": wall, "scenario": number(r"result wall_ms=([0-9.]+)", out) / 1e3}

    pipe = interleave(envs, ["none", "floor", "cuoverlap", "cuoverlap+nvtx"], a.pipeline_reps, pipeline)

    print(f"| workload | tracer | median (min-max) | added vs none | added / floor's added |")
    print("| --- | --- | --- | --- | --- |")
    rows(f"{a.launches} empty launches, loop time per launch ({a.reps} reps)", "us", 1e6, launch["loop"])
    rows(f"pipeline3, process wall time ({a.pipeline_reps} reps)", "ms", 1e3, pipe["process"])
    rows(f"pipeline3, scenario wall_ms ({a.pipeline_reps} reps)", "ms", 1e3, pipe["scenario"])

    big = f"{tmp}/big.sqlite"
    loop = number(r"loop_s ([0-9.]+)", run([empty, str(a.big)], envs["cuoverlap"]() | {"CUOVERLAP_OUTPUT": big})[1])
    s = session(big)
    records = sum(int(v) for k, v in s.items() if k.startswith("records."))
    busy = int(s.get("writer_busy_ns", "0")) / 1e9
    span = (int(s["end_ns"]) - int(s["start_ns"])) / 1e9
    print(f"\n{a.big} launches under cuoverlap: loop {loop:.3f} s, records {records}, "
          f"kernels {s.get('records.kernel')}, dropped {s.get('dropped_records')}, "
          f"records/s written: {records / busy:,.0f} (writer busy {busy:.3f} s), "
          f"{records / span:,.0f} over the session's {span:.3f} s; file {os.path.getsize(big) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
