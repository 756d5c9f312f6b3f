"""DDP's bucket all-reduces start during backward, as their gradients become ready: a model of
three layers with a bucket per parameter, a communication hook that records each call, and a
hook on the input, whose gradient is the last one backward computes. Prints the events in
order, one line per rank."""

import ember
import ember.distributed as dist
from ember import nn
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks

dist.init_process_group("gloo")
ember.manual_seed(0)
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2)), bucket_cap_mb=0.0001)
events = []


def recorded(state, bucket):
    events.append(f"bucket{bucket.index()}")
    return default_hooks.allreduce_hook(state, bucket)


model.register_comm_hook(None, recorded)
x = ember.randn(6, 4, requires_grad=True)
x.register_hook(lambda g: events.append("input"))
model(x).square().sum().backward()
print(f"rank {dist.get_rank()}: {' '.join(events)}", flush=True)
dist.destroy_process_group()
