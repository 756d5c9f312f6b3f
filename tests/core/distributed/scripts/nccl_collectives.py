"""The collectives of collectives.py on cuda tensors in a "nccl" group (every dtype cupy
and NCCL share, every op NCCL runs), a DDP step on cuda parameters, and a barrier; each
rank saves what it got to OUT/rank<r>.npz. argv: OUT, "sync" or "async"."""

import sys

import numpy as np
from calls import run_collectives
from data import NCCL_DTYPES, make, nccl_ops

import ember
import ember.distributed as dist

out, mode = sys.argv[1], sys.argv[2]
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
assert ember.cuda.current_device() == rank, "each rank on its own device (LOCAL_RANK)"
results = {}


def run(call, *args, **kwargs):
    if mode == "async":
        work = call(*args, **kwargs, async_op=True)
        work.wait()
    else:
        assert call(*args, **kwargs) is None


def cuda(arr):
    return ember.tensor(np.array(arr), device="cuda")


def back(t):
    a = t.cpu().numpy()
    return a.astype(np.float32) if a.dtype == np.float16 else a


def ring(mine, box):
    works = [dist.isend(mine, dst=(rank + 1) % world), dist.irecv(box, src=(rank - 1) % world)]
    assert all(w.wait() for w in works) and works[1].source_rank() == (rank - 1) % world


run_collectives(results, rank=rank, world=world, dtypes=NCCL_DTYPES, ops=nccl_ops, tensor=cuda, back=back, run=run,
                ring=ring)

# DDP on cuda parameters: the averaged gradient of a linear layer over the ranks' batches
ember.manual_seed(0)
model = ember.nn.Linear(4, 3).to("cuda")
ddp = ember.nn.parallel.DistributedDataParallel(model)
batch = make(rank, "float32", (5, 4), salt=6)
ddp(cuda(batch)).square().sum().backward()
results["ddp-weight"] = model.weight.detach().cpu().numpy()
results["ddp-bias"] = model.bias.detach().cpu().numpy()
results["ddp-weight-grad"] = model.weight.grad.cpu().numpy()
results["ddp-bias-grad"] = model.bias.grad.cpu().numpy()

try:
    dist.all_reduce(ember.ones(2))
except RuntimeError as e:
    assert "No backend type associated with device type cpu" in str(e), e
else:
    raise AssertionError("a CPU tensor ran in a nccl group")
run(dist.barrier)
ember.cuda.synchronize()
np.savez(f"{out}/rank{rank}.npz", **results)
dist.destroy_process_group()
