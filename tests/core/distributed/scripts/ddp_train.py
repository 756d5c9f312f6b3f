"""DDP training of a small model for a few steps; each rank saves its starting (after DDP's
broadcast) and final parameters to OUT/rank<r>.npz. argv: OUT, micro-batches per step (the
first ones run under no_sync), bucket_cap_mb, and "plain", "unused" (a layer the forward
skips, with find_unused_parameters) or "missing" (that layer without it: the second forward
raises)."""

import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn

out, micro, cap, variant = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
ember.manual_seed(100 + rank)  # different on every rank: DDP's broadcast makes them equal


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
        if variant != "plain":  # a layer the forward skips
            self.spare = nn.Linear(2, 2)
        self.register_buffer("seen", ember.full((3,), float(rank)))

    def forward(self, x):
        return self.body(x)


model = nn.parallel.DistributedDataParallel(Net(), bucket_cap_mb=cap, find_unused_parameters=variant == "unused")
assert model.module.seen.tolist() == [0.0, 0.0, 0.0], "buffers come from rank 0"
start = {k: v.detach().numpy().copy() for k, v in model.module.state_dict().items()}
optimizer = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
data = np.random.default_rng(0)
for _ in range(4):
    x = data.standard_normal((12, 4)).astype(np.float32)
    y = data.standard_normal((12, 2)).astype(np.float32)
    shard = slice(rank * 12 // world, (rank + 1) * 12 // world)
    xs, ys = np.array_split(x[shard], micro), np.array_split(y[shard], micro)
    optimizer.zero_grad()
    for m in range(micro):
        if m < micro - 1:
            with model.no_sync():
                loss = nn.functional.mse_loss(model(ember.from_numpy(xs[m])), ember.from_numpy(ys[m]))
                loss.backward()
        else:
            loss = nn.functional.mse_loss(model(ember.from_numpy(xs[m])), ember.from_numpy(ys[m]))
            loss.backward()
    optimizer.step()
if variant == "unused":
    assert model.module.spare.weight.grad is None, "a parameter no rank used keeps grad None"
final = {k: v.detach().numpy() for k, v in model.module.state_dict().items()}
np.savez(f"{out}/rank{rank}.npz", **{f"start.{k}": v for k, v in start.items()},
         **{f"final.{k}": v for k, v in final.items()})
dist.destroy_process_group()
