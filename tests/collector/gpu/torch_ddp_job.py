"""A small 2-rank DDP training job for the collector's multi-process GPU test (issue 10).

Run under torchrun (python3 -m torch.distributed.run --standalone --nproc_per_node 2 ...): each
rank trains an MLP with DistributedDataParallel (NCCL all-reduce in backward), fed by a DataLoader
whose 2 workers are spawned processes that each touch CUDA once (so that workers are CUDA
processes the collector must trace too). About 2 x 4 steps; prints one line per rank.
"""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


class CudaTouchingDataset(Dataset):
    """Random samples; in a worker process, the first sample also runs one op on the GPU."""

    def __init__(self):
        self.touched = False

    def __len__(self):
        return 64

    def __getitem__(self, index):
        if torch.utils.data.get_worker_info() is not None and not self.touched:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
            torch.ones(1024, device="cuda").mul_(2)
            torch.cuda.synchronize()
            self.touched = True
        return torch.randn(256), torch.randn(256)


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 256)).cuda()
    ddp = DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loader = DataLoader(CudaTouchingDataset(), batch_size=16, num_workers=2,
                        multiprocessing_context="spawn", persistent_workers=True)
    steps = 0
    for _ in range(2):
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = ((ddp(x) - y) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
    torch.cuda.synchronize()
    dist.barrier()
    print(f"rank {dist.get_rank()}: {steps} steps, loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
