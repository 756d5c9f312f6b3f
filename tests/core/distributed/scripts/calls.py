"""Every collective on one rank's inputs (data.py), shared by collectives.py (MPI) and
nccl_collectives.py (NCCL): ``results[key]`` is what this rank got, under the keys the
tests' ``expectations`` name. The scripts pass how they make a tensor of an array
(``tensor``), read one back (``back``), call a collective (``run``: sync or async) and
pass a tensor round the ring (``ring``)."""

import numpy as np
from data import SHAPES, make

import ember.distributed as dist


def run_collectives(results, *, rank, world, dtypes, ops, tensor, back, run, ring):
    for dtype in dtypes:
        for shape in SHAPES:
            key = f"{dtype}-{'x'.join(map(str, shape))}"
            x = make(rank, dtype, shape)
            for op in ops(dtype):
                reduce_op = dist._make_nccl_premul_sum(0.5) if op == "PREMUL_SUM" else getattr(dist.ReduceOp, op)
                t = tensor(x)
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
            box = tensor(np.zeros_like(x))
            ring(tensor(x), box)  # sends to the next rank, receives from the previous one
            results[f"ring-{key}"] = back(box)

    rows = make(rank, "int64", (world * 2, 3), salt=3)
    got = tensor(np.zeros_like(rows))
    run(dist.all_to_all_single, got, tensor(rows))
    results["all_to_all_single"] = back(got)
    outs = [tensor(np.zeros((2, 3), np.int64)) for _ in range(world)]
    run(dist.all_to_all, outs, [tensor(make(rank, "int64", (2, 3), salt=4 + r)) for r in range(world)])
    results["all_to_all"] = np.stack([back(o) for o in outs])
