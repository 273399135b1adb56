#!/usr/bin/env python3
"""Collector overhead benchmark; prints a Markdown table (docs/BENCHMARKS.md, Collector overhead).

usage: run_collector_bench.py BUILD_DIR [--launches N] [--reps R] [--big N]
Interleaves runs of bench_empty_launch untraced, under the floor tracer and under cuoverlap;
reports the launch-loop time per launch (median, min-max over the repetitions) and each tracer's
added time over untraced. Then one cuoverlap run of --big launches: dropped records and records
written per second (writer thread busy time and wall time)."""
import argparse, os, re, sqlite3, statistics, subprocess, sys, tempfile

def run(cmd, env_extra):
    env = dict(os.environ, **env_extra)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{cmd} failed ({out.returncode}): {out.stderr}")
    m = re.search(r"loop_s ([0-9.]+)", out.stdout)
    return float(m.group(1))

def session(path):
    db = sqlite3.connect(path)
    rows = dict(db.execute("SELECT key, value FROM CUOVERLAP_SESSION"))
    db.close()
    return rows

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--launches", type=int, default=200000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--big", type=int, default=1000000)
    a = ap.parse_args()
    app = os.path.join(a.build, "bench/collector/bench_empty_launch")
    floor = os.path.join(a.build, "bench/collector/libcuoverlap_floor_tracer.so")
    collector = os.path.join(a.build, "cli/libcuoverlap_collector.so")
    tmp = tempfile.mkdtemp()
    configs = {"none": lambda i: {},
               "floor": lambda i: {"CUDA_INJECTION64_PATH": floor},
               "cuoverlap": lambda i: {"CUDA_INJECTION64_PATH": collector, "CUOVERLAP_QUIET": "1",
                                       "CUOVERLAP_OUTPUT": f"{tmp}/rep{i}.sqlite"}}
    times = {k: [] for k in configs}
    for i in range(a.reps):
        for name, env in configs.items():
            times[name].append(run([app, str(a.launches)], env(i)) / a.launches * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"| {a.launches} empty-kernel launches | per launch, median (min-max) over {a.reps} | added vs none |")
    print("| --- | --- | --- |")
    for k, v in times.items():
        print(f"| {k} | {med[k]:.3f} us ({min(v):.3f}-{max(v):.3f}) | {med[k] - med['none']:+.3f} us |")
    floor_added, ours_added = med["floor"] - med["none"], med["cuoverlap"] - med["none"]
    print(f"\ncuoverlap added / floor added = {ours_added / floor_added:.3f} (target <= 1.2)")
    big = f"{tmp}/big.sqlite"
    wall = run([app, str(a.big)], configs["cuoverlap"](0) | {"CUOVERLAP_OUTPUT": big})
    s = session(big)
    records = sum(int(v) for k, v in s.items() if k.startswith("records."))
    busy = int(s.get("writer_busy_ns", "0")) / 1e9
    span = (int(s["end_ns"]) - int(s["start_ns"])) / 1e9
    print(f"\n{a.big} launches under cuoverlap: loop {wall:.3f} s, records {records}, "
          f"kernels {s.get('records.kernel')}, dropped {s.get('dropped_records')}, "
          f"records/s written: {records / busy:,.0f} (writer busy {busy:.3f} s), "
          f"{records / span:,.0f} over the session's {span:.3f} s; file {os.path.getsize(big) / 1e6:.1f} MB")

if __name__ == "__main__":
    main()
