"""init_process_group's checks, the rank queries, and collectives on a sub-group; prints OK."""
import os
from datetime import timedelta

import ember
import ember.distributed as dist

rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
os.environ["RANK"] = str(rank + 1)
try:
    dist.init_process_group("gloo")
except RuntimeError as e:
    assert f"RANK is {rank + 1} but MPI started this process as rank {rank} of 3" in str(e), e
else:
    raise AssertionError("a RANK that disagrees with MPI's was accepted")
os.environ["RANK"] = str(rank)
for bad, kind in (("nccl", RuntimeError), ("tcp", ValueError)):
    try:
        dist.init_process_group(bad)
    except kind:
        pass
    else:
        raise AssertionError(f"backend {bad} accepted")
assert not dist.is_initialized()
dist.init_process_group(backend="mpi", rank=rank, world_size=3)
assert dist.is_initialized() and dist.get_backend() == "mpi" and dist.get_world_size() == 3
assert dist.get_rank() == rank
pair = dist.new_group([0, 2])
if rank == 1:
    assert pair is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(pair) == -1
else:
    assert dist.get_rank(pair) == rank // 2 and dist.get_world_size(pair) == 2
    assert dist.get_process_group_ranks(pair) == [0, 2] and dist.get_global_rank(pair, 1) == 2
    t = ember.full((2,), float(rank + 1))
    dist.all_reduce(t, group=pair)
    assert t.tolist() == [4.0, 4.0], t
    dist.all_reduce(t, group=pair)  # again: the first call of an (op, dtype) plans it, later ones take the fast path
    assert t.tolist() == [8.0, 8.0], t
    b = ember.full((2,), float(rank))
    dist.broadcast(b, src=2, group=pair)
    assert b.tolist() == [2.0, 2.0], b
# sort_ranks=False: a rank's place in the list is its group rank
turned = dist.new_group([2, 0], sort_ranks=False)
if rank != 1:
    assert dist.get_rank(turned) == {2: 0, 0: 1}[rank] and dist.get_process_group_ranks(turned) == [2, 0]
    b = ember.full((2,), float(rank))
    dist.broadcast(b, group=turned, group_src=0)
    assert b.tolist() == [2.0, 2.0], b
dist.barrier(timeout=timedelta(seconds=30))
dist.barrier(async_op=True, timeout=timedelta(seconds=30)).wait()
t = ember.ones(2)
work = dist.all_reduce(t, async_op=True)
assert work.wait() and work.is_completed() and t.tolist() == [3.0, 3.0]
v = t._version
dist.all_reduce(t)
dist.all_reduce(t, async_op=True).wait()
assert t._version == v + 2 and t.tolist() == [27.0, 27.0], (t._version, v, t)
v = t._version
dist.broadcast(t, src=0)
assert t._version == v + 1
try:
    dist.all_reduce(ember.ones(4, 2).t())
except ValueError as e:
    assert "contiguous" in str(e)
else:
    raise AssertionError("a non-contiguous tensor was accepted")
try:
    dist.all_reduce(ember.ones(2), op=dist.ReduceOp.BAND)
except RuntimeError as e:
    assert "BAND" in str(e)
else:
    raise AssertionError("BAND on floats was accepted")
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"OK {rank}")
