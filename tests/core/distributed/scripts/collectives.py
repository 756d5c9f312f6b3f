"""Every collective on the inputs of data.py; each rank saves what it got to OUT/rank<r>.npz.
argv: OUT, "sync" or "async"."""

import sys

import numpy as np
from calls import run_collectives
from data import DTYPES, make, ops_for, plain

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


def ring(mine, box):
    # blocking send and recv, ordered so that the ring cannot deadlock
    if rank % 2 == 0:
        dist.send(mine, dst=(rank + 1) % world)
        sender = dist.recv(box, src=(rank - 1) % world)
    else:
        sender = dist.recv(box)
        dist.send(mine, dst=(rank + 1) % world)
    assert sender == (rank - 1) % world, sender


run_collectives(results, rank=rank, world=world, dtypes=DTYPES, ops=ops_for, tensor=tensor, back=back, run=run,
                ring=ring)
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
