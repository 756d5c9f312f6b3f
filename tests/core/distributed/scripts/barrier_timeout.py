"""A barrier with its own 1 s timeout that rank 1 never enters (the group's timeout is 60 s):
the watchdog ends the job, naming the barrier and the 1 s."""
import time
from datetime import timedelta

import ember.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=60))
dist.barrier(timeout=timedelta(seconds=10))
if dist.get_rank() == 0:
    dist.barrier(timeout=timedelta(seconds=1))
else:
    time.sleep(60)
