#!/usr/bin/env python3
"""Collector overhead benchmark; prints one Markdown table, last (docs/BENCHMARKS.md, Collector overhead).

usage: run_collector_bench.py BUILD_DIR [--only all|empty|pipeline|torch] [--launches N] [--reps R]
           [--pipeline-reps R] [--big N] [--torch-reps R] [--torch-steps N] [--torch-warmup N]
           [--python PY]

Tracers, run in interleaved repetitions (the order rotates every repetition):
  none            untraced
  floor-gpu       the floor tracer (floor_tracer.cpp: a CUPTI subscriber discarding every record)
                  with GPU activity only: kernels, copies, memsets (CUOVERLAP_FLOOR_KINDS=gpu)
  floor           the floor tracer with the collector's kinds, every runtime/driver API call
                  included (CUOVERLAP_FLOOR_KINDS=all)
  cuoverlap       our collector (CUDA_INJECTION64_PATH only, like the floor; for the PyTorch row
                  `cuoverlap record`, as a user runs it)
  cuoverlap -op-buffers  the collector with CUOVERLAP_OP_BUFFERS=0 (no driver callbacks for the memory
                  each op touched; PyTorch row: `record -op-buffers`): what the op buffers cost
  cuoverlap+nvtx  pipeline only: as `cuoverlap record` runs it, NVTX injected too
  closed          `cuoverlap record --capture nvtx:NAME@1000000`: a capture window that never opens
                  (issue 22: the collector's cost outside the window, target <= 2% of the step)
  torch.profiler  PyTorch only: pytorch_step.py --profile (torch.profiler, CPU + CUDA activities)
Workloads:
  - bench_empty_launch: N launches of an empty kernel; the launch loop's time per launch.
  - cuoverlap-streams pipeline3 --no-baseline: the process's wall time (start-up and the final
    flush included) and the scenario's own timed region (wall_ms of its --result-line).
  - pytorch_step.py: a launch-bound MLP training step (~28 GPU ops, a few hundred API calls);
    each run's median step time (host clock, a synchronize ending every step).
Each row: median over repetitions (min-max), the added time over untraced, and that added time
divided by the GPU-only floor's and by the all-API floor's (targets: cuoverlap <= 1.2x floor-gpu
on the PyTorch step, <= 1.0x the floor on empty launches). Before the table: the machine, and one
cuoverlap run of --big launches (dropped records, records written per second)."""
import argparse, os, re, shutil, sqlite3, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env_extra):
    """Runs cmd; returns (process wall seconds, stdout)."""
    env = dict(os.environ, **env_extra)
    begin = time.perf_counter()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    except OSError as error:
        sys.exit(f"error: cannot run {cmd[0]}: {error.strerror}")
    wall = time.perf_counter() - begin
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}): {out.stdout[-2000:]} {out.stderr[-2000:]}")
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


class Tracers:
    """Each tracer: name -> (command -> (command to run, extra environment)). Trace files go to tmp
    and are deleted after each run (remove())."""

    def __init__(self, build, tmp):
        self.floor = os.path.join(build, "bench/collector/libcuoverlap_floor_tracer.so")
        self.collector = os.path.join(build, "cli/libcuoverlap_collector.so")
        self.cli = os.path.join(build, "cli/cuoverlap")
        self.tmp = tmp
        self.count = 0

    def output(self):
        self.count += 1
        return f"{self.tmp}/run{self.count}.sqlite"

    def get(self, name):
        if name == "none":
            return lambda cmd: (cmd, {})
        if name in ("floor", "floor-gpu"):
            kinds = "gpu" if name == "floor-gpu" else "all"
            return lambda cmd: (cmd, {"CUDA_INJECTION64_PATH": self.floor, "CUOVERLAP_FLOOR_KINDS": kinds})
        if name in ("cuoverlap", "cuoverlap+nvtx"):
            def ours(cmd, nvtx=name == "cuoverlap+nvtx"):
                env = {"CUDA_INJECTION64_PATH": self.collector, "CUOVERLAP_QUIET": "1",
                       "CUOVERLAP_OUTPUT": self.output()}
                if nvtx:
                    env["NVTX_INJECTION64_PATH"] = self.collector
                return cmd, env
            return ours
        if name == "cuoverlap -op-buffers":  # without CUOVERLAP_OP_BUFFERS' driver callbacks
            return lambda cmd: (cmd, {"CUDA_INJECTION64_PATH": self.collector, "CUOVERLAP_QUIET": "1",
                                      "CUOVERLAP_OUTPUT": self.output(), "CUOVERLAP_OP_BUFFERS": "0"})
        if name == "cuoverlap record":
            return lambda cmd: ([self.cli, "record", "--force", "-o", self.output(), "--"] + cmd, {})
        if name == "record -op-buffers":
            return lambda cmd: ([self.cli, "record", "--force", "-o", self.output(), "--"] + cmd,
                                {"CUOVERLAP_OP_BUFFERS": "0"})
        if name == "closed":
            return lambda cmd: ([self.cli, "record", "--force", "-o", self.output(), "--capture",
                                 "nvtx:cuoverlap-never@1000000", "--"] + cmd, {})
        if name == "torch.profiler":
            return lambda cmd: (cmd + ["--profile"], {})
        raise ValueError(name)

    def remove(self):
        for name in os.listdir(self.tmp):
            if name.startswith("run"):
                os.remove(os.path.join(self.tmp, name))


def interleave(tracers, names, reps, cmd, measure):
    """measure(wall, stdout) -> {metric: value}; returns {metric: {tracer: [values]}}."""
    results = {}
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            wrapped, env = tracers.get(name)(list(cmd))
            wall, out = run(wrapped, env)
            tracers.remove()
            for metric, value in measure(wall, out).items():
                results.setdefault(metric, {}).setdefault(name, []).append(value)
    return results


def rows(label, unit, scale, per_tracer, ours="cuoverlap"):
    """Table rows of one workload; returns {tracer: added} in `unit`."""
    med = {k: statistics.median(v) * scale for k, v in per_tracer.items()}
    added = {k: med[k] - med["none"] for k in med}
    lines = []
    for name, values in per_tracer.items():
        lo, hi = min(values) * scale, max(values) * scale
        ratios = []
        for floor in ("floor-gpu", "floor"):
            show = name not in ("none", "floor-gpu", floor) and floor in added and added[floor] > 0
            ratios.append(f"{added[name] / added[floor]:.2f}" if show else "")
        pct = f" ({100 * added[name] / med['none']:+.0f}%)" if name != "none" else ""
        lines.append(f"| {label} | {name} | {med[name]:.3f} {unit} ({lo:.3f}-{hi:.3f}) | "
                     f"{'' if name == 'none' else f'{added[name]:+.3f} {unit}{pct}'} | {ratios[0]} | {ratios[1]} |")
    return lines, added


def torch_problem(python):
    probe = subprocess.run([python, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"],
                           capture_output=True, text=True)
    if probe.returncode == 3:
        return f"{python}: torch finds no CUDA GPU"
    if probe.returncode != 0:
        return f"{python}: cannot import torch ({probe.stderr.strip().splitlines()[-1:]})"
    return None


def machine(python, with_torch):
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True)
        gpu = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 and smi.stdout.strip() else "unknown GPU"
    except OSError:
        gpu = "unknown GPU (no nvidia-smi)"
    line = f"machine: {gpu}"
    if with_torch:
        ver = subprocess.run([python, "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
                             capture_output=True, text=True)
        line += f"; torch {ver.stdout.strip()}"
    return line


def big_run(a, tracers, empty):
    big = f"{tracers.tmp}/big.sqlite"
    env = tracers.get("cuoverlap")([])[1] | {"CUOVERLAP_OUTPUT": big}
    loop = number(r"loop_s ([0-9.]+)", run([empty, str(a.big)], env)[1])
    s = session(big)
    records = sum(int(v) for k, v in s.items() if k.startswith("records."))
    busy = int(s.get("writer_busy_ns", "0")) / 1e9
    span = (int(s["end_ns"]) - int(s["start_ns"])) / 1e9
    line = (f"{a.big} launches under cuoverlap: loop {loop:.3f} s, records {records}, "
            f"kernels {s.get('records.kernel')}, dropped {s.get('dropped_records')}, "
            f"records/s written: {records / busy if busy > 0 else float('nan'):,.0f} (writer busy {busy:.3f} s), "
            f"{records / span:,.0f} over the session's {span:.3f} s; file {os.path.getsize(big) / 1e6:.1f} MB")
    os.remove(big)
    return line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--only", choices=["all", "empty", "pipeline", "torch"], default="all")
    ap.add_argument("--launches", type=int, default=200000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--pipeline-reps", type=int, default=11)
    ap.add_argument("--big", type=int, default=1000000, help="0 skips the big run")
    ap.add_argument("--torch-reps", type=int, default=7)
    ap.add_argument("--torch-steps", type=int, default=300)
    ap.add_argument("--torch-warmup", type=int, default=50)
    ap.add_argument("--python", default=sys.executable, help="the interpreter that has torch")
    a = ap.parse_args()
    if min(a.reps, a.pipeline_reps, a.torch_reps) < 1 or a.launches < 1 or a.torch_steps < 1:
        sys.exit("error: repetitions, launches and steps must be at least 1")
    empty = os.path.join(a.build, "bench/collector/bench_empty_launch")
    streams = os.path.join(a.build, "workloads/cuoverlap-streams")
    want = lambda part: a.only in ("all", part)
    tmp = tempfile.mkdtemp()
    tracers = Tracers(a.build, tmp)
    needed = [tracers.floor, tracers.collector] + ([tracers.cli] if want("torch") else []) + \
        ([empty] if want("empty") else []) + ([streams] if want("pipeline") else [])
    missing = [path for path in needed if not os.path.exists(path)]
    if missing:
        sys.exit(f"error: not built: {', '.join(missing)} (cmake --build {a.build} --target cuoverlap "
                 f"cuoverlap_collector bench_empty_launch cuoverlap_floor_tracer cuoverlap-streams)")
    table, notes = [], []

    if want("torch"):
        problem = torch_problem(a.python)
        if problem:
            notes.append(f"PyTorch row skipped: {problem}")
        else:
            cmd = [a.python, os.path.join(HERE, "pytorch_step.py"), "--steps", str(a.torch_steps),
                   "--warmup", str(a.torch_warmup)]
            names = ["none", "floor-gpu", "floor", "cuoverlap record", "record -op-buffers", "closed", "torch.profiler"]
            step = interleave(tracers, names, a.torch_reps, cmd, lambda wall, out: {
                "step": number(r"step_ms_median ([0-9.]+)", out) / 1e3})
            lines, added = rows(f"PyTorch MLP step, median per-step time ({a.torch_reps} reps of "
                                f"{a.torch_steps} steps)", "ms", 1e3, step["step"])
            table += lines
            if added.get("floor-gpu", 0) > 0:
                notes.append(f"PyTorch step: cuoverlap adds {added['cuoverlap record']:.3f} ms/step, the GPU-only "
                             f"floor {added['floor-gpu']:.3f}, all API calls {added['floor']:.3f}, torch.profiler "
                             f"{added['torch.profiler']:.3f}: cuoverlap-added / floor-gpu-added = "
                             f"{added['cuoverlap record'] / added['floor-gpu']:.2f} (target <= 1.2), / floor-added = "
                             f"{added['cuoverlap record'] / added['floor']:.2f}")

    if want("empty"):
        launch = interleave(tracers, ["none", "floor-gpu", "floor", "cuoverlap", "cuoverlap -op-buffers", "closed"], a.reps,
                            [empty, str(a.launches)],
                            lambda wall, out: {"loop": number(r"loop_s ([0-9.]+)", out) / a.launches})
        table += rows(f"{a.launches} empty launches, loop time per launch ({a.reps} reps)", "us", 1e6,
                      launch["loop"])[0]
        if a.big > 0:
            notes.append(big_run(a, tracers, empty))

    if want("pipeline"):
        pipe = interleave(tracers, ["none", "floor-gpu", "floor", "cuoverlap", "cuoverlap -op-buffers", "cuoverlap+nvtx"],
                          a.pipeline_reps,
                          [streams, "pipeline3", "--no-baseline", "--result-line"], lambda wall, out: {
                              "process": wall, "scenario": number(r"result wall_ms=([0-9.]+)", out) / 1e3})
        table += rows(f"pipeline3, process wall time ({a.pipeline_reps} reps)", "ms", 1e3, pipe["process"])[0]
        table += rows(f"pipeline3, scenario wall_ms ({a.pipeline_reps} reps)", "ms", 1e3, pipe["scenario"])[0]

    shutil.rmtree(tmp, ignore_errors=True)
    print(machine(a.python, want("torch") and not any(n.startswith("PyTorch row skipped") for n in notes)))
    for note in notes:
        print(note)
    print()
    print("| workload | tracer | median (min-max) | added vs none | added / floor-gpu's added | added / floor's added |")
    print("| --- | --- | --- | --- | --- | --- |")
    for line in table:
        print(line)


if __name__ == "__main__":
    main()
