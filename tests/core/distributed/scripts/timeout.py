"""Rank 0 enters an all_reduce that rank 1 never joins: the group's 2 s timeout ends it with
an error naming the rank, the collective and its sequence number. A first all_reduce on
both ranks plans float32 SUM, so that the one that hangs takes all_reduce's fast path."""
import time
from datetime import timedelta

import ember
import ember.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=2))
dist.barrier()
dist.all_reduce(ember.ones(1))
if dist.get_rank() == 0:
    dist.all_reduce(ember.ones(3))
else:
    time.sleep(60)
