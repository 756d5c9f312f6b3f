"""A DDP-ready training script run as one process: it checks for a distributed launch,
picks its device, wraps the model when distributed, and saves from rank 0 only."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp and dist.is_available():
    dist.init_process_group(backend="gloo")
rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
device = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
torch.manual_seed(1234 + rank)

model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
if ddp:
    model = DDP(model)
raw = model.module if ddp else model
data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
sampler = DistributedSampler(data, num_replicas=world, rank=rank) if ddp else None
loader = DataLoader(data, batch_size=16, sampler=sampler, shuffle=sampler is None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(2):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
if rank == 0:
    torch.save(raw.state_dict(), os.environ["OUT"])
    print(f"rank {rank} of {world} on {device}: loss {loss.item():.4f}, cuda {torch.cuda.is_available()}, "
          f"memory {torch.cuda.memory_allocated()}")
if ddp:
    dist.destroy_process_group()
