"""Uneven inputs: rank r trains on 3 + 2r batches inside DDP's join() ("ddp"), inside
Join([ddp, ZeroRedundancyOptimizer]) ("zero"), with divide_by_initial_world_size=False
("effective"), or with throw_on_early_termination=True ("throw": every rank raises once the
first rank is out of batches; the message goes to OUT/rank<r>.txt). Every rank saves its
starting and final parameters and how many steps it finished to OUT/rank<r>.npz.
argv: OUT, variant."""
import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from ember.distributed.algorithms import Join
from ember.distributed.optim import ZeroRedundancyOptimizer

out, variant = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
ember.manual_seed(7 + rank)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)),
                                            bucket_cap_mb=0.0001)
start = {k: v.detach().numpy().copy() for k, v in model.module.state_dict().items()}
if variant == "zero":
    optimizer = ZeroRedundancyOptimizer(model.parameters(), ember.optim.SGD, lr=0.1, momentum=0.9)
    context = Join([model, optimizer])
else:
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    context = model.join(divide_by_initial_world_size=variant != "effective",
                         throw_on_early_termination=variant == "throw")
steps = 0
try:
    with context:
        for step in range(3 + 2 * rank):
            data = np.random.default_rng([step, rank])
            x, y = data.standard_normal((4, 4)).astype(np.float32), data.standard_normal((4, 2)).astype(np.float32)
            optimizer.zero_grad()
            nn.functional.mse_loss(model(ember.from_numpy(x)), ember.from_numpy(y)).backward()
            optimizer.step()
            steps += 1
except RuntimeError as e:
    with open(f"{out}/rank{rank}.txt", "w") as f:
        f.write(f"{e}\n")
final = {k: v.detach().numpy() for k, v in model.module.state_dict().items()}
np.savez(f"{out}/rank{rank}.npz", steps=steps, **{f"start.{k}": v for k, v in start.items()},
         **{f"final.{k}": v for k, v in final.items()})
