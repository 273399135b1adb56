"""A small PyTorch MLP training loop, the shape users wrap with `cuoverlap record`.

Setup does what real scripts do: a first CUDA call and a synchronize, then host-side data
generation and pinning (seconds of CPU work with no CUDA call), then the training loop.
  --mode eager|graphs|compile   how the step runs
  --nvtx                        one NVTX range per step ("step 7") and around setup phases
  --step-name NAME              one NVTX range per step named exactly NAME (implies --nvtx): what
                                `record --capture nvtx:NAME@FIRST-LAST` counts
  --kineto OUT.json             also profile the loop with torch.profiler and write its trace
  --host-setup-s S              seconds of host data generation before the loop
  --pageable                    keep the input batches in pageable memory (no pin_memory()): the
                                bad half of a pair whose fixed half is the default (pinned)
Prints one line: mode, steps, median step time (ms), measured with a host clock after a
synchronize per step (so the timeline keeps its per-step sync, as many training scripts do).
"""
import argparse, statistics, time, os, sys
import numpy as np
import torch

p = argparse.ArgumentParser()
p.add_argument("--mode", default="eager", choices=["eager", "graphs", "compile"])
p.add_argument("--steps", type=int, default=40)
p.add_argument("--nvtx", action="store_true")
p.add_argument("--kineto", default="")
p.add_argument("--host-setup-s", type=float, default=1.0)
p.add_argument("--batch", type=int, default=256)
p.add_argument("--width", type=int, default=1024)
p.add_argument("--sync-every-step", type=int, default=1)
p.add_argument("--pageable", action="store_true")
p.add_argument("--step-name", default="")
a = p.parse_args()
a.nvtx = a.nvtx or bool(a.step_name)

def push(name):
    if a.nvtx: torch.cuda.nvtx.range_push(name)
def pop():
    if a.nvtx: torch.cuda.nvtx.range_pop()

# Under torchrun each rank runs the same loop on its own GPU.
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
dev = torch.device("cuda")
torch.manual_seed(0)
push("setup")
model = torch.nn.Sequential(
    torch.nn.Linear(a.width, a.width), torch.nn.ReLU(),
    torch.nn.Linear(a.width, a.width), torch.nn.ReLU(),
    torch.nn.Linear(a.width, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch.cuda.synchronize()
# Host data generation and pinning: CPU work, no CUDA call in progress.
t_end = time.perf_counter() + a.host_setup_s
rng = np.random.default_rng(0)
chunks = []
while time.perf_counter() < t_end:
    chunks.append(rng.standard_normal((a.batch, a.width), dtype=np.float32))
def host_tensor(t):
    return t if a.pageable else t.pin_memory()
xs = [host_tensor(torch.from_numpy(chunks[i % len(chunks)])) for i in range(8)]
ys = [host_tensor(torch.randint(0, 10, (a.batch,))) for _ in range(8)]
pop()
loss_fn = torch.nn.CrossEntropyLoss()

def step_fn(x, y):
    opt.zero_grad(set_to_none=False)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss

if a.mode == "compile":
    step_fn = torch.compile(step_fn)

static_x = torch.empty((a.batch, a.width), device=dev)
static_y = torch.empty((a.batch,), dtype=torch.long, device=dev)
graph = None
if a.mode == "graphs":
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step_fn(static_x, static_y)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=False)
    with torch.cuda.graph(graph):
        static_loss = step_fn(static_x, static_y)

prof = None
if a.kineto:
    from torch.profiler import profile, ProfilerActivity
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    prof.__enter__()

times = []
for i in range(a.steps):
    t0 = time.perf_counter()
    push(a.step_name or f"step {i}")
    x = xs[i % len(xs)]; y = ys[i % len(ys)]
    if graph is not None:
        static_x.copy_(x, non_blocking=True); static_y.copy_(y, non_blocking=True)
        graph.replay()
    else:
        step_fn(x.to(dev, non_blocking=True), y.to(dev, non_blocking=True))
    if a.sync_every_step and i % a.sync_every_step == 0:
        torch.cuda.synchronize()
    pop()
    if prof is not None: prof.step()
    times.append(time.perf_counter() - t0)
torch.cuda.synchronize()
if prof is not None:
    prof.__exit__(None, None, None)
    prof.export_chrome_trace(a.kineto)
steady = times[len(times) // 4:]
print(f"torch_mlp mode={a.mode} nvtx={int(a.nvtx)} pageable={int(a.pageable)} steps={a.steps} "
      f"median_step_ms={statistics.median(steady) * 1e3:.3f} first_step_ms={times[0] * 1e3:.3f}")
print("step_ms " + " ".join(f"{t * 1e3:.3f}" for t in times))  # the program's own time per step
