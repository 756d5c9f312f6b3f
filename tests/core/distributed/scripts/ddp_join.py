"""Uneven inputs under DDP's join(): rank r trains on 3 + 2r batches; every rank saves its
final parameters to OUT/rank<r>.npz. argv: OUT."""
import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
ember.manual_seed(7 + rank)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)),
                                            bucket_cap_mb=0.0001)
start = {k: v.detach().numpy().copy() for k, v in model.module.state_dict().items()}
optimizer = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
with model.join():
    for step in range(3 + 2 * rank):
        data = np.random.default_rng([step, rank])
        x, y = data.standard_normal((4, 4)).astype(np.float32), data.standard_normal((4, 2)).astype(np.float32)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(ember.from_numpy(x)), ember.from_numpy(y)).backward()
        optimizer.step()
final = {k: v.detach().numpy() for k, v in model.module.state_dict().items()}
np.savez(f"{sys.argv[1]}/rank{rank}.npz", **{f"start.{k}": v for k, v in start.items()},
         **{f"final.{k}": v for k, v in final.items()})
