"""Every collective on the inputs of data.py; each rank saves what it got to OUT/rank<r>.npz.
argv: OUT, "sync" or "async"."""

import sys

import numpy as np
from data import DTYPES, SHAPES, make, ops_for, plain

import ember
import ember.distributed as dist

out, mode = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
results = {}


def run(call, *args, **kwargs):
    if mode == "async":
        work = call(*args, **kwargs, async_op=True)
        work.wait()
        assert work.is_completed()
    else:
        assert call(*args, **kwargs) is None


def tensor(arr):
    t = ember.from_numpy(np.array(arr)) if arr.dtype.name != "bfloat16" else ember.tensor(arr.astype(np.float32))
    return t if arr.dtype.name != "bfloat16" else t.to(ember.bfloat16)


def back(t):
    return plain(t.float().numpy() if t.dtype in (ember.bfloat16, ember.float16) else t.numpy())


for dtype in DTYPES:
    for shape in SHAPES:
        key = f"{dtype}-{'x'.join(map(str, shape))}"
        x = make(rank, dtype, shape)
        for op in ops_for(dtype):
            t = tensor(x)
            reduce_op = dist._make_nccl_premul_sum(0.5) if op == "PREMUL_SUM" else getattr(dist.ReduceOp, op)
            run(dist.all_reduce, t, op=reduce_op)
            results[f"all_reduce-{op}-{key}"] = back(t)
            t = tensor(x)
            run(dist.reduce, t, dst=world - 1, op=reduce_op)
            results[f"reduce-{op}-{key}"] = back(t)
        t = tensor(x)
        run(dist.broadcast, t, src=1)
        results[f"broadcast-{key}"] = back(t)
        outs = [tensor(np.zeros_like(x)) for _ in range(world)]
        run(dist.all_gather, outs, tensor(x))
        results[f"all_gather-{key}"] = np.stack([back(o) for o in outs])
        big = tensor(np.zeros((world, *shape), x.dtype))
        run(dist.all_gather_into_tensor, big, tensor(x))
        results[f"all_gather_into_tensor-{key}"] = back(big)
        if dtype != "bool":
            stacked = make(rank, dtype, (world, *shape), salt=1)
            mine = tensor(np.zeros_like(x))
            run(dist.reduce_scatter_tensor, mine, tensor(stacked))
            results[f"reduce_scatter_tensor-{key}"] = back(mine)
            mine = tensor(np.zeros_like(x))
            run(dist.reduce_scatter, mine, [tensor(block) for block in stacked])
            results[f"reduce_scatter-{key}"] = back(mine)
        gathered = [tensor(np.zeros_like(x)) for _ in range(world)] if rank == 0 else None
        run(dist.gather, tensor(x), gathered, dst=0)
        if rank == 0:
            results[f"gather-{key}"] = np.stack([back(o) for o in gathered])
        pieces = [tensor(make(r, dtype, shape, salt=2)) for r in range(world)] if rank == world - 1 else None
        mine = tensor(np.zeros_like(x))
        run(dist.scatter, mine, pieces, src=world - 1)
        results[f"scatter-{key}"] = back(mine)
        # a ring: send to the next rank, receive from the previous one
        box = tensor(np.zeros_like(x))
        if rank % 2 == 0:
            dist.send(tensor(x), dst=(rank + 1) % world)
            sender = dist.recv(box, src=(rank - 1) % world)
        else:
            sender = dist.recv(box)
            dist.send(tensor(x), dst=(rank + 1) % world)
        assert sender == (rank - 1) % world, sender
        results[f"ring-{key}"] = back(box)

rows = make(rank, "int64", (world * 2, 3), salt=3)
got = tensor(np.zeros_like(rows))
run(dist.all_to_all_single, got, tensor(rows))
results["all_to_all_single"] = back(got)
outs = [tensor(np.zeros((2, 3), np.int64)) for _ in range(world)]
run(dist.all_to_all, outs, [tensor(make(rank, "int64", (2, 3), salt=4 + r)) for r in range(world)])
results["all_to_all"] = np.stack([back(o) for o in outs])
# a ring of isend / irecv, both started before either is waited on
box = tensor(np.zeros(4, np.float32))
works = [dist.isend(tensor(make(rank, "float32", (4,), salt=5)), dst=(rank + 1) % world),
         dist.irecv(box, src=(rank - 1) % world)]
assert all(w.wait() for w in works) and works[1].source_rank() == (rank - 1) % world
results["isend_irecv"] = back(box)
run(dist.barrier)
np.savez(f"{out}/rank{rank}.npz", **results)
dist.destroy_process_group()
assert not dist.is_initialized()
