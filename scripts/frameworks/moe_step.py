"""Expert-parallel (MoE) training step on every GPU of the host (launch with torchrun): each rank
holds one expert; tokens go to their expert and back through two all-to-alls per layer
(torch.distributed.nn.functional.all_to_all_single, so backward has its two as well).
  --mode exposed   the all-to-alls wait for the gate and the expert waits for them (the usual
                   first version: every all-to-all exposed)
  --ffn 1 --dtype bfloat16 --width 4096 --tokens 16384: far less compute a byte sent, so that
                   the all-to-alls are a large share of the step
  --mode overlap   the batch in two chunks: chunk 1's dispatch runs on a side stream while chunk 0's
                   expert computes (the usual fix)
CUOVERLAP_RANK_OUTPUT (with {rank}) sets the collector's output per rank before CUDA starts."""
import argparse, os, statistics, time
rank_env = int(os.environ.get("RANK", "0"))
if os.environ.get("CUOVERLAP_RANK_OUTPUT"):
    os.environ["CUOVERLAP_OUTPUT"] = os.environ["CUOVERLAP_RANK_OUTPUT"].format(rank=rank_env)
import torch
import torch.distributed as dist
from torch.distributed.nn.functional import all_to_all_single

p = argparse.ArgumentParser()
p.add_argument("--mode", default="exposed", choices=["exposed", "overlap"])
p.add_argument("--steps", type=int, default=12)
p.add_argument("--width", type=int, default=2048)
p.add_argument("--tokens", type=int, default=8192)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--ffn", type=int, default=4, help="expert hidden width / width")
p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
a = p.parse_args()
dtype = getattr(torch, a.dtype)

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
torch.manual_seed(rank)
experts = [torch.nn.Sequential(torch.nn.Linear(a.width, a.ffn * a.width), torch.nn.GELU(),
                               torch.nn.Linear(a.ffn * a.width, a.width)).to(dev, dtype)
           for _ in range(a.layers)]
params = [q for e in experts for q in e.parameters()]
opt = torch.optim.SGD(params, lr=1e-4)
x = torch.randn(a.tokens, a.width, device=dev, dtype=dtype)


def moe_layer(h, expert):
    # tokens are already grouped by destination rank in equal shares (a balanced router)
    routed = all_to_all_single(torch.empty_like(h), h)
    out = expert(routed)
    return all_to_all_single(torch.empty_like(out), out)


def moe_layer_chunked(h, expert, side):
    parts = h.chunk(2)
    outs = []
    routed0 = all_to_all_single(torch.empty_like(parts[0]), parts[0])
    with torch.cuda.stream(side):
        side.wait_stream(torch.cuda.current_stream())
        routed1 = all_to_all_single(torch.empty_like(parts[1]), parts[1])
    outs.append(expert(routed0))
    torch.cuda.current_stream().wait_stream(side)
    outs.append(expert(routed1))
    back = [all_to_all_single(torch.empty_like(o), o) for o in outs]
    return torch.cat(back)


side = torch.cuda.Stream()
times = []
for i in range(a.steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push(f"step {i}")
    opt.zero_grad(set_to_none=True)
    h = x
    for e in experts:
        h = moe_layer(h, e) if a.mode == "exposed" else moe_layer_chunked(h, e, side)
    h.float().pow(2).mean().backward()
    opt.step()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
if rank == 0:
    print(f"moe {a.mode} ffn {a.ffn} {a.dtype}: median step {statistics.median(times[2:]) * 1e3:.2f} ms over {len(times) - 2} steps")
dist.destroy_process_group()
