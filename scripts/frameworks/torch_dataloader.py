"""PyTorch training fed by a DataLoader with worker processes and pin_memory=True.
Each sample costs some CPU work in the worker (a decode stand-in), so the GPU can wait on data."""
import argparse, statistics, time
import torch
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--cpu-ms", type=float, default=0.05, help="CPU work per sample, ms")
p.add_argument("--batch", type=int, default=128)
p.add_argument("--width", type=int, default=2048, help="hidden width of the MLP")
p.add_argument("--nvtx", action="store_true")
a = p.parse_args()

class Synthetic(Dataset):
    def __len__(self): return 1 << 20
    def __getitem__(self, i):
        t_end = time.perf_counter() + a.cpu_ms / 1e3
        g = torch.Generator().manual_seed(i)
        x = torch.randn(1024, generator=g)
        while time.perf_counter() < t_end:
            x = x * 1.0000001
        return x, i % 10

if __name__ == "__main__":
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(1024, a.width), torch.nn.ReLU(), torch.nn.Linear(a.width, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Synthetic(), batch_size=a.batch, num_workers=a.workers, pin_memory=True,
                        persistent_workers=False)
    times = []
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(loader):
        if i == a.steps: break
        if a.nvtx: torch.cuda.nvtx.range_push(f"step {i}")
        x = x.to(dev, non_blocking=True); y = y.to(dev, non_blocking=True)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(); opt.step()
        loss.item()
        if a.nvtx: torch.cuda.nvtx.range_pop()
        t1 = time.perf_counter(); times.append(t1 - t0); t0 = t1
    print(f"torch_dataloader workers={a.workers} batch={a.batch} width={a.width} steps={len(times)} median_step_ms={statistics.median(times[3:]) * 1e3:.3f}")
    print("step_ms " + " ".join(f"{t * 1e3:.3f}" for t in times))  # the program's own time per step
