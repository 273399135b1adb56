"""Data-parallel training step on every GPU of the host (launch with torchrun).
  --mode ddp      DistributedDataParallel, default buckets: all-reduce overlaps backward
  --mode ddp-onebucket   one bucket for all gradients: all-reduce starts after backward (exposed)
  --mode fsdp     FSDP2 (fully_shard per layer): all-gather before forward/backward, reduce-scatter
  --kineto T      torch.profiler trace per rank, T with {rank}
CUOVERLAP_RANK_OUTPUT (with {rank}) sets the collector's output per rank before CUDA starts, for
recording without `cuoverlap record` (each rank its own file)."""
import argparse, os, statistics, time
rank_env = int(os.environ.get("RANK", "0"))
if os.environ.get("CUOVERLAP_RANK_OUTPUT"):
    os.environ["CUOVERLAP_OUTPUT"] = os.environ["CUOVERLAP_RANK_OUTPUT"].format(rank=rank_env)
import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", default="ddp", choices=["ddp", "ddp-onebucket", "fsdp"])
p.add_argument("--steps", type=int, default=16)
p.add_argument("--width", type=int, default=4096)
p.add_argument("--layers", type=int, default=8)
p.add_argument("--batch", type=int, default=1024)
p.add_argument("--kineto", default="")
a = p.parse_args()

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
torch.manual_seed(0)
layers = []
for _ in range(a.layers):
    layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(a.width, 10)).to(dev)
if a.mode == "fsdp":
    from torch.distributed.fsdp import fully_shard
    for m in model:
        if isinstance(m, torch.nn.Linear):
            fully_shard(m)
    fully_shard(model)
else:
    from torch.nn.parallel import DistributedDataParallel as DDP
    cap = 100000 if a.mode == "ddp-onebucket" else 25
    model = DDP(model, device_ids=[local], bucket_cap_mb=cap)
opt = torch.optim.SGD(model.parameters(), lr=0.001)
g = torch.Generator(device=dev).manual_seed(rank)
x = torch.randn(a.batch, a.width, device=dev, generator=g)
y = torch.randint(0, 10, (a.batch,), device=dev, generator=g)

prof = None
if a.kineto:
    from torch.profiler import profile, ProfilerActivity
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    prof.__enter__()
times = []
for i in range(a.steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push(f"step {i}")
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
    if prof is not None: prof.step()
if prof is not None:
    prof.__exit__(None, None, None)
    prof.export_chrome_trace(a.kineto.format(rank=rank))
med = statistics.median(times[a.steps // 4:]) * 1e3
print(f"ddp_step mode={a.mode} rank={rank} world={world} steps={a.steps} median_step_ms={med:.3f}", flush=True)
print(f"rank={rank} step_ms " + " ".join(f"{t * 1e3:.3f}" for t in times), flush=True)
dist.destroy_process_group()
