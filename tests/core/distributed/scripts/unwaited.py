"""Async collectives nobody waits on, under a 2 s group timeout. "late": rank 0 starts an
all_reduce rank 1 never joins, waits on it for 0.5 s (which raises on rank 0 only)
and sleeps in Python; the watchdog must end the job. "done":
both ranks start an all_reduce (SUM) and one with AVG, never wait, and sleep past the
timeout: the watchdog finishes them (no abort), and each rank prints the results. A first
all_reduce on both ranks plans float32 SUM, so that the later ones take all_reduce's fast path."""
import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=2))
dist.barrier()
dist.all_reduce(ember.ones(1))
rank = dist.get_rank()
if sys.argv[1] == "late":
    if rank == 0:
        work = dist.all_reduce(ember.ones(3), async_op=True)
        try:  # a bound on this one wait raises on this rank; the group's timeout still ends the job
            work.wait(timeout=timedelta(seconds=0.5))
        except dist.DistBackendError as e:
            print("wait:", e, flush=True)
    time.sleep(60)
else:
    total, mean = ember.full((3,), rank + 1.0), ember.full((2,), 2.0 * rank)
    works = [dist.all_reduce(total, async_op=True), dist.all_reduce(mean, op=dist.ReduceOp.AVG, async_op=True)]
    del works
    time.sleep(4)
    print("rank", rank, total.tolist(), mean.tolist(), flush=True)
