"""Object collectives and monitored_barrier on 3 ranks; each rank writes what it got to
OUT/rank<r>.txt (argv: OUT), as repr lines the test compares with what it expects."""
import dataclasses
import functools
import pickle
import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
report = open(f"{sys.argv[1]}/rank{rank}.txt", "w")  # noqa: SIM115  (closed at exit)
print = functools.partial(print, file=report, flush=True)  # noqa: A001


def mine(r):
    return {"rank": r, "t": ember.full((2,), float(r)), "name": "x" * (100 * r), "items": [r, None, 1.5]}


def show(obj):
    return {k: (v.tolist() if isinstance(v, ember.Tensor) else v) for k, v in obj.items()}


got = [None] * world
dist.all_gather_object(got, mine(rank))
print("all_gather_object", rank, [show(o) for o in got])
box = [None] * world if rank == 1 else None
dist.gather_object(mine(rank), box, dst=1)
print("gather_object", rank, box and [show(o) for o in box])
items = [mine(rank), "text", 7] if rank == 2 else [None, None, None]
dist.broadcast_object_list(items, src=2)
print("broadcast_object_list", rank, [show(items[0]), items[1], items[2]])
out = [None]
dist.scatter_object_list(out, [f"for {r}" for r in range(world)] if rank == 0 else None, src=0)
print("scatter_object_list", rank, out)


@dataclasses.dataclass
class Point:
    x: int


try:
    dist.all_gather_object(got, Point(rank))
except pickle.UnpicklingError as e:
    assert "Point" in str(e) and "trust_object_collectives" in str(e), e
    print("refused", rank)
dist.trust_object_collectives = True
dist.all_gather_object(got, Point(rank))
print("trusted", rank, [p.x for p in got])
dist.monitored_barrier(timeout=timedelta(seconds=20))
if rank == 2:
    time.sleep(2)
try:
    dist.monitored_barrier(timeout=timedelta(seconds=1), wait_all_ranks=True)
except RuntimeError as e:
    print("late", rank, str(e).replace(" ", "_"))
