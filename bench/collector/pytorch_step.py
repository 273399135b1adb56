#!/usr/bin/env python3
"""A launch-bound PyTorch training step, for the collector overhead benchmark (run_collector_bench.py).

usage: pytorch_step.py [--steps 300] [--warmup 50] [--profile] [--batch 64] [--width 256] [--layers 4]

Model: an MLP of --layers Linear layers (--width wide, ReLU between) trained with SGD (momentum,
foreach) on a fixed batch already on the GPU, MSE loss. At the defaults one step is about 28 GPU
ops (forward, backward, the fused optimizer update) and a few hundred runtime/driver API calls,
each op far shorter than its launch: the step's time is the host's launch time, which is what a
tracer's per-call cost adds to.

Every step ends with torch.cuda.synchronize(), as a loop that reads its loss each step does, so
a step's time (host clock) is its launches plus the GPU's tail. --warmup steps run first and are
not counted (lazy module loading, the caching allocator, cuBLAS handles). --profile wraps warmup
and measured steps in torch.profiler.profile(activities=[CPU, CUDA]) (the profiler's start and its
processing at the end stay outside the measured steps).

Prints `steps N step_ms_median M step_ms_p10 A step_ms_p90 B loss L` (one line) and exits 0, or one
line on stderr and exit 2 without a CUDA GPU or torch."""
import argparse
import statistics
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="measured steps (default 300)")
    ap.add_argument("--warmup", type=int, default=50, help="steps run first, not measured (default 50)")
    ap.add_argument("--profile", action="store_true", help="run under torch.profiler with CUDA activities")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    args = ap.parse_args()
    for name in ("steps", "batch", "width", "layers"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1")
    if args.warmup < 0:
        ap.error("--warmup must be at least 0")
    return args


def build(torch, args):
    layers = []
    for i in range(args.layers):
        layers.append(torch.nn.Linear(args.width, args.width))
        if i + 1 < args.layers:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, foreach=True)
    generator = torch.Generator(device="cuda").manual_seed(0)
    inputs = torch.randn(args.batch, args.width, device="cuda", generator=generator)
    targets = torch.randn(args.batch, args.width, device="cuda", generator=generator)
    return model, optimizer, inputs, targets


def step(torch, model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()
    torch.cuda.synchronize()
    return loss


def run_steps(torch, state, warmup, steps):
    for _ in range(warmup):
        step(torch, *state)
    times = []
    loss = None
    for _ in range(steps):
        begin = time.perf_counter()
        loss = step(torch, *state)
        times.append(time.perf_counter() - begin)
    return times, float(loss.item())


def main():
    args = parse_args()
    try:
        import torch
    except ImportError as error:
        print(f"error: cannot import torch: {error}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: torch finds no CUDA GPU", file=sys.stderr)
        return 2
    state = build(torch, args)
    if args.profile:
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities):
            times, loss = run_steps(torch, state, args.warmup, args.steps)
    else:
        times, loss = run_steps(torch, state, args.warmup, args.steps)
    ms = sorted(t * 1e3 for t in times)
    p10 = ms[int(0.1 * (len(ms) - 1))]
    p90 = ms[int(0.9 * (len(ms) - 1))]
    print(f"steps {len(ms)} step_ms_median {statistics.median(ms):.4f} step_ms_p10 {p10:.4f} "
          f"step_ms_p90 {p90:.4f} loss {loss:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
