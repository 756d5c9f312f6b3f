"""DDP training of a small model for a few steps; each rank saves its starting (after DDP's
broadcast) and final parameters to OUT/rank<r>.npz. argv: OUT, micro-batches per step (the
first ones run under no_sync), bucket_cap_mb, and "plain", "unused" (a layer the forward
skips, with find_unused_parameters) "missing" (that layer without it: the second forward
raises), "zero" (ZeroRedundancyOptimizer around the SGD), the name of a default
communication hook, "bucket_view" (gradient_as_bucket_view; "bucket_view_hook" with the
allreduce hook), "static" (static_graph with the skipped layer, without
find_unused_parameters), "static_reentrant" (static_graph, the body reached by two reentrant
backwards: the forward returns (body(x) + body(x.flip(0))) / 2, each call a checkpoint that
runs its own backward) or "reentrant" (that without static_graph: backward raises)."""

import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn

out, micro, cap, variant = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
ember.manual_seed(100 + rank)  # different on every rank: DDP's broadcast makes them equal


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
        if variant in ("unused", "missing", "static"):  # a layer the forward skips
            self.spare = nn.Linear(2, 2)
        self.register_buffer("seen", ember.full((3,), float(rank)))

    def forward(self, x):
        if variant.endswith("reentrant"):
            x = x.detach().requires_grad_()  # a reentrant checkpoint needs an input that requires grad
            return (Reentrant.apply(self.body, x) + Reentrant.apply(self.body, x.flip(0))) / 2
        return self.body(x)


class Reentrant(ember.autograd.Function):
    """A checkpoint of torch's reentrant kind: no graph in forward, a backward of its own."""

    @staticmethod
    def forward(ctx, fn, x):
        ctx.fn = fn
        ctx.save_for_backward(x)
        with ember.no_grad():
            return fn(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_(True)
        with ember.enable_grad():
            y = ctx.fn(x)
        ember.autograd.backward(y, grad)
        return None, x.grad


model = nn.parallel.DistributedDataParallel(Net(), bucket_cap_mb=cap, find_unused_parameters=variant == "unused",
                                            gradient_as_bucket_view=variant.startswith("bucket_view"),
                                            static_graph=variant.startswith("static"))
buffers = {}
if variant == "bucket_view_hook":
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks

    def keep(state, bucket):
        buffers[bucket.index()] = (bucket.buffer(), bucket.parameters())
        return default_hooks.allreduce_hook(state, bucket)
    model.register_comm_hook(None, keep)


def check_bucket_views():
    """Every gradient is a view into its bucket's flat buffer."""
    if variant == "bucket_view_hook":
        assert buffers
        for buffer, params in buffers.values():
            for p in params:
                assert np.shares_memory(p.grad.numpy(), buffer.numpy()), "p.grad is not a view of the bucket"
    else:  # one bucket: the gradients lie back to back, in the bucket's (reverse) order
        params = list(reversed(list(model.parameters())))
        for a, b in zip(params, params[1:]):
            assert b.grad.data_ptr() == a.grad.data_ptr() + a.numel() * a.element_size()


if variant in ("allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"):
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    hook_calls = []

    def counted(state, bucket, hook=getattr(default_hooks, variant)):
        hook_calls.append(bucket.index())
        assert [tuple(g.shape) for g in bucket.gradients()] == [tuple(p.shape) for p in bucket.parameters()]
        return hook(state, bucket)
    model.register_comm_hook(None, counted)
assert model.module.seen.tolist() == [0.0, 0.0, 0.0], "buffers come from rank 0"
start = {k: v.detach().numpy().copy() for k, v in model.module.state_dict().items()}
if variant == "zero":  # the momentum buffers sharded across the ranks
    from ember.distributed.optim import ZeroRedundancyOptimizer
    optimizer = ZeroRedundancyOptimizer(model.parameters(), ember.optim.SGD, lr=0.1, momentum=0.9)
else:
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
data = np.random.default_rng(0)
spare_grads = []
for _ in range(4):
    x = data.standard_normal((12, 4)).astype(np.float32)
    y = data.standard_normal((12, 2)).astype(np.float32)
    shard = slice(rank * 12 // world, (rank + 1) * 12 // world)
    xs, ys = np.array_split(x[shard], micro), np.array_split(y[shard], micro)
    optimizer.zero_grad()
    for m in range(micro):
        if m < micro - 1:
            with model.no_sync():
                loss = nn.functional.mse_loss(model(ember.from_numpy(xs[m])), ember.from_numpy(ys[m]))
                loss.backward()
        else:
            loss = nn.functional.mse_loss(model(ember.from_numpy(xs[m])), ember.from_numpy(ys[m]))
            loss.backward()
    if variant.startswith("bucket_view"):
        check_bucket_views()
    if variant == "static":
        spare = model.module.spare.weight.grad
        spare_grads.append(None if spare is None else float(spare.abs().sum()))
    optimizer.step()
if variant == "static":
    # no rank used the layer: the first iteration leaves its gradient None, later ones give zeros (torch's reducer)
    assert spare_grads == [None, 0.0, 0.0, 0.0], spare_grads
if variant == "unused":
    assert model.module.spare.weight.grad is None, "a parameter no rank used keeps grad None"
if variant in ("allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"):
    assert sorted(hook_calls) == sorted(list(range(len(model._buckets))) * 4), hook_calls
if variant == "zero":
    assert 0 < len(optimizer.optim.state) < 4, "each rank holds only its shard of the state"
    optimizer.consolidate_state_dict(to=0)
    if rank == 0:
        whole = optimizer.state_dict()
        assert sorted(whole["state"]) == [0, 1, 2, 3] and whole["param_groups"][0]["params"] == [0, 1, 2, 3]
        assert all("momentum_buffer" in s for s in whole["state"].values())
    else:
        try:
            optimizer.state_dict()
        except RuntimeError as e:
            assert "consolidate_state_dict" in str(e)
        else:
            raise AssertionError("state_dict() without consolidating on this rank")
    shared = [optimizer.state_dict() if rank == 0 else None]
    dist.broadcast_object_list(shared, src=0)
    again = ZeroRedundancyOptimizer(model.parameters(), ember.optim.SGD, lr=0.5, momentum=0.0)
    again.load_state_dict(shared[0])
    assert again.optim.param_groups[0]["lr"] == 0.1 and again.optim.param_groups[0]["momentum"] == 0.9
    for p, kept in optimizer.optim.state.items():
        assert np.array_equal(again.optim.state[p]["momentum_buffer"].numpy(), kept["momentum_buffer"].numpy())
final = {k: v.detach().numpy() for k, v in model.module.state_dict().items()}
np.savez(f"{out}/rank{rank}.npz", **{f"start.{k}": v for k, v in start.items()},
         **{f"final.{k}": v for k, v in final.items()})
dist.destroy_process_group()
