"""The collectives of collectives.py on cuda tensors in a "nccl" group (every dtype cupy
and NCCL share, every op NCCL runs), a DDP step on cuda parameters, and a barrier; each
rank saves what it got to OUT/rank<r>.npz. argv: OUT, "sync" or "async"."""

import sys

import numpy as np
from data import DTYPES, SHAPES, make, ops_for

import ember
import ember.distributed as dist

out, mode = sys.argv[1], sys.argv[2]
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
assert ember.cuda.current_device() == rank, "each rank on its own device (LOCAL_RANK)"
results = {}
NCCL_DTYPES = [d for d in DTYPES if d != "bfloat16"]  # cupy has no bfloat16


def nccl_ops(dtype):
    ops = [op for op in ops_for(dtype) if op not in ("BAND", "BOR", "BXOR")]
    return [op for op in ops if op != "PRODUCT"] if dtype.startswith("complex") else ops


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


for dtype in NCCL_DTYPES:
    for shape in SHAPES:
        key = f"{dtype}-{'x'.join(map(str, shape))}"
        x = make(rank, dtype, shape)
        for op in nccl_ops(dtype):
            reduce_op = dist._make_nccl_premul_sum(0.5) if op == "PREMUL_SUM" else getattr(dist.ReduceOp, op)
            t = cuda(x)
            run(dist.all_reduce, t, op=reduce_op)
            results[f"all_reduce-{op}-{key}"] = back(t)
            t = cuda(x)
            run(dist.reduce, t, dst=world - 1, op=reduce_op)
            results[f"reduce-{op}-{key}"] = back(t)
        t = cuda(x)
        run(dist.broadcast, t, src=1)
        results[f"broadcast-{key}"] = back(t)
        outs = [cuda(np.zeros_like(x)) for _ in range(world)]
        run(dist.all_gather, outs, cuda(x))
        results[f"all_gather-{key}"] = np.stack([back(o) for o in outs])
        big = cuda(np.zeros((world, *shape), x.dtype))
        run(dist.all_gather_into_tensor, big, cuda(x))
        results[f"all_gather_into_tensor-{key}"] = back(big)
        if dtype != "bool":
            stacked = make(rank, dtype, (world, *shape), salt=1)
            mine = cuda(np.zeros_like(x))
            run(dist.reduce_scatter_tensor, mine, cuda(stacked))
            results[f"reduce_scatter_tensor-{key}"] = back(mine)
            mine = cuda(np.zeros_like(x))
            run(dist.reduce_scatter, mine, [cuda(block) for block in stacked])
            results[f"reduce_scatter-{key}"] = back(mine)
        gathered = [cuda(np.zeros_like(x)) for _ in range(world)] if rank == 0 else None
        run(dist.gather, cuda(x), gathered, dst=0)
        if rank == 0:
            results[f"gather-{key}"] = np.stack([back(o) for o in gathered])
        pieces = [cuda(make(r, dtype, shape, salt=2)) for r in range(world)] if rank == world - 1 else None
        mine = cuda(np.zeros_like(x))
        run(dist.scatter, mine, pieces, src=world - 1)
        results[f"scatter-{key}"] = back(mine)
        box = cuda(np.zeros_like(x))
        works = [dist.isend(cuda(x), dst=(rank + 1) % world), dist.irecv(box, src=(rank - 1) % world)]
        assert all(w.wait() for w in works) and works[1].source_rank() == (rank - 1) % world
        results[f"ring-{key}"] = back(box)

rows = make(rank, "int64", (world * 2, 3), salt=3)
got = cuda(np.zeros_like(rows))
run(dist.all_to_all_single, got, cuda(rows))
results["all_to_all_single"] = back(got)
outs = [cuda(np.zeros((2, 3), np.int64)) for _ in range(world)]
run(dist.all_to_all, outs, [cuda(make(rank, "int64", (2, 3), salt=4 + r)) for r in range(world)])
results["all_to_all"] = np.stack([back(o) for o in outs])

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
