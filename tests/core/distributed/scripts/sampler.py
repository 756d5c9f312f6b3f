"""Each rank's DistributedSampler built without num_replicas and rank, after
init_process_group: prints the world size, the rank and the indices it yields."""
import ember.distributed as dist
from ember.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
sampler = DistributedSampler(range(11), shuffle=False)
print(f"{sampler.num_replicas}|{sampler.rank}|{list(sampler)}", flush=True)
dist.destroy_process_group()
