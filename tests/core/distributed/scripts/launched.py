"""Started by ember-run: prints torchrun's variables and an all_reduce of the ranks."""
import os
import sys

import ember
import ember.distributed as dist

dist.init_process_group("gloo")
t = ember.tensor([float(dist.get_rank())])
dist.all_reduce(t)
names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS",
         "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
print("|".join([*(os.environ.get(n, "-") for n in names), str(dist.is_torchelastic_launched()), str(t.item()),
                *sys.argv[1:]]))
dist.destroy_process_group()
