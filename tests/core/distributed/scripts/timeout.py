"""Rank 0 enters an all_reduce that rank 1 never joins: the group's 2 s timeout ends it with
an error naming the rank, the collective and its sequence number."""
import time
from datetime import timedelta

import ember
import ember.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=2))
dist.barrier()
if dist.get_rank() == 0:
    dist.all_reduce(ember.ones(3))
else:
    time.sleep(60)
