"""Rank 1 raises while the others wait in an all_reduce (with a long timeout): the job must
end at once, with rank 1's traceback."""
from datetime import timedelta

import ember
import ember.distributed as dist

dist.init_process_group("mpi", timeout=timedelta(minutes=10))
if dist.get_rank() == 1:
    raise ValueError("rank 1 fails on purpose")
dist.all_reduce(ember.ones(3))
