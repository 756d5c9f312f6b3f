"""DistributedDataParallel (torch.nn.parallel.DistributedDataParallel) on ember.distributed's
MPI engine.

At construction the parameters and buffers of rank 0 are broadcast to every rank. Gradients
are averaged across ranks in buckets of about ``bucket_cap_mb``: parameters are grouped in
reverse registration order (roughly the order backward produces their gradients), and a
bucket's all-reduce starts, as a non-blocking MPI request, from the post-accumulate hook of
the last of its parameters to get a gradient, so communication overlaps the rest of
backward. The last hook of a backward waits for every bucket and writes the averages back
into ``.grad``, so the gradients are final when ``backward()`` returns.

Source: https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


def _bump(t):
    if type(t._vc) is list:
        t._vc[0] += 1


def _tensors_in(value, found):
    from ..._tensor import Tensor
    if isinstance(value, Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensors_in(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors_in(v, found)
    return found


class _Bucket:
    def __init__(self, params):
        self.params = params
        self.dtype = params[0]._data.dtype
        self.sizes = [p._data.size for p in params]
        self.waiting = set()
        self.work = None
        self.flat = None


class DistributedDataParallel(Module):
    """Data-parallel training: wraps ``module`` (``.module``; state_dict keys gain torch's
    ``module.`` prefix) and averages gradients across the ranks of ``process_group`` (the
    default group when None; ValueError, as torch, when no group was initialized).

    ``bucket_cap_mb`` (default 25) bounds a bucket's gradient bytes. ``broadcast_buffers``
    re-broadcasts rank 0's buffers before each forward. ``find_unused_parameters`` walks the
    output's graph after each forward and counts parameters it cannot reach as ready, so a
    backward that leaves some parameters without gradient still completes; a parameter no
    rank used keeps ``grad`` None. Without it, a forward after a backward whose reduction did
    not finish raises torch's RuntimeError. ``no_sync()`` skips the averaging for the
    backwards of forwards run inside it (gradients accumulate locally and are averaged at the
    next synchronised backward). ``static_graph``, ``gradient_as_bucket_view``,
    ``check_reduction``, ``device_ids`` and ``output_device`` are accepted and change
    nothing (CPU tensors; buckets are copies). ``register_comm_hook`` replaces the averaging
    (the hooks of ember.distributed.algorithms.ddp_comm_hooks); ``join()`` trains ranks with
    uneven numbers of batches.
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        from ... import distributed as dist
        if process_group is None and not dist.is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        self.module = module
        self.process_group = dist._group._resolve(process_group)
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self.require_backward_grad_sync = True
        self._sync_this_backward = False
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._sync_states([*module.parameters(), *module.buffers()])
        self._buckets = self._make_buckets(params)
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._hooks = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]
        self._unused = []
        self._comm_hook = None
        self._joining = False

    # ---- construction ---------------------------------------------------------------------
    def _rank0_root(self):
        return self.process_group._ranks[0]

    def _sync_states(self, tensors, src=None):
        """Broadcast the tensors of rank 0 (or ``src``) to the others, as one message of their bytes."""
        from ... import distributed as dist
        from ... import from_numpy
        tensors = [t for t in tensors if t._data.size]
        if not tensors or self.process_group.size() == 1:
            return
        flat = numpy.concatenate([numpy.ascontiguousarray(t._data).reshape(-1).view(numpy.uint8) for t in tensors])
        dist.broadcast(from_numpy(flat), src=self._rank0_root() if src is None else src, group=self.process_group)
        at = 0
        for t in tensors:
            n = t._data.nbytes
            t._data[...] = flat[at:at + n].view(t._data.dtype).reshape(t._data.shape)
            at += n
            _bump(t)

    def _make_buckets(self, params):
        buckets, current, size = [], [], 0
        for p in reversed(params):
            nbytes = p._data.nbytes
            if current and (size + nbytes > self.bucket_bytes_cap or p._data.dtype != current[0]._data.dtype):
                buckets.append(_Bucket(current))
                current, size = [], 0
            current.append(p)
            size += nbytes
        buckets.append(_Bucket(current))
        return buckets

    def register_comm_hook(self, state, hook) -> None:
        """Average gradients with ``hook(state, bucket)`` instead: it gets each bucket as a
        ``GradBucket`` and returns an ember.futures.Future of the bucket's new flat gradients
        (see ember.distributed.algorithms.ddp_comm_hooks.default_hooks). Once, before training."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not callable(hook):
            raise TypeError(f"Communication hook must be callable, got {type(hook).__name__}")
        self._comm_hook = (state, hook)

    # ---- forward --------------------------------------------------------------------------
    @contextmanager
    def no_sync(self):
        """Inside, forwards mark their backward as local: gradients accumulate without averaging."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def forward(self, *inputs, **kwargs):
        from ... import is_grad_enabled
        if self._sync_this_backward and any(b.waiting != set(id(p) for p in b.params) for b in self._buckets):
            if any(b.waiting for b in self._buckets):
                raise RuntimeError(
                    "Expected to have finished reduction in the prior iteration before starting a new one. "
                    "This error indicates that your module has parameters that were not used in producing loss. "
                    "You can enable unused parameter detection by passing the keyword argument "
                    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`; parameters "
                    "without a gradient: " + ", ".join(self._names_waiting()))
        sync = self.require_backward_grad_sync and is_grad_enabled()
        if self._joining:
            self._announce(1, sync)
            self._join_iterations += 1
        if self.broadcast_buffers:
            self._sync_states(list(self.module.buffers()))
        self._sync_this_backward = sync
        if self._sync_this_backward:
            self._reset()
        output = self.module(*inputs, **kwargs)
        if self._sync_this_backward and self.find_unused_parameters:
            self._mark_unreached(output)
        return output

    # ---- uneven inputs -----------------------------------------------------------------------
    @contextmanager
    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        """Train on ranks with different numbers of batches (torch's DDP ``join``). Inside, each
        forward first tells the group this rank is still training; a rank whose loop ended
        stays at the end of the block and takes part in the other ranks' collectives with
        zero gradients until every rank is done. Averages divide by the whole world size
        (``divide_by_initial_world_size=False`` is not supported). NotImplementedError for
        ``throw_on_early_termination=True``."""
        if throw_on_early_termination:
            raise NotImplementedError("join(throw_on_early_termination=True) is not supported by ember yet")
        if not divide_by_initial_world_size:
            raise NotImplementedError("join(divide_by_initial_world_size=False) is not supported by ember yet")
        if not enable:
            yield
            return
        self._joining, self._join_iterations = True, 0
        try:
            yield
            self._shadow()
            # the rank that trained longest has the final model: everyone takes its state
            from ... import distributed as dist
            from ... import tensor
            counts = [tensor([0]) for _ in range(self.process_group.size())]
            dist.all_gather(counts, tensor([self._join_iterations]), group=self.process_group)
            counts = [c.item() for c in counts]
            last = self.process_group._ranks[counts.index(max(counts))]
            self._sync_states([*self.module.parameters(), *self.module.buffers()], src=last)
        finally:
            self._joining = False

    def _announce(self, active, sync):
        """One all-reduce per iteration: how many ranks still train, and whether they average."""
        from ... import distributed as dist
        from ... import tensor
        flag = tensor([active, int(bool(sync))])
        dist.all_reduce(flag, group=self.process_group)
        return flag.tolist()

    def _shadow(self):
        """The joined rank's side of each iteration the others still run: the buffer broadcast,
        every bucket with zero gradients, the unused-parameter mask."""
        from ... import distributed as dist
        from ... import from_numpy
        while True:
            active, sync = self._announce(0, False)
            if active == 0:
                return
            if self.broadcast_buffers:
                self._sync_states(list(self.module.buffers()))
            if not sync:
                continue
            works = []
            for b in self._buckets:
                zeros = from_numpy(numpy.zeros(sum(b.sizes), b.dtype))
                if self._comm_hook is not None:
                    state, hook = self._comm_hook
                    works.append(hook(state, dist.GradBucket(self._buckets.index(b), zeros, b.params,
                                                             b is self._buckets[-1])))
                else:
                    works.append(dist.all_reduce(zeros, op=dist.ReduceOp.AVG, group=self.process_group,
                                                 async_op=True))
            if self.find_unused_parameters:
                mask = numpy.zeros(sum(len(b.params) for b in self._buckets), numpy.uint8)
                dist.all_reduce(from_numpy(mask), op=dist.ReduceOp.MAX, group=self.process_group)
            for w in works:
                w.wait()

    def _names_waiting(self):
        names = {id(p): n for n, p in self.module.named_parameters()}
        return [names.get(pid, "?") for b in self._buckets for pid in b.waiting]

    def _reset(self):
        for b in self._buckets:
            b.waiting = set(id(p) for p in b.params)
            b.work = None
            b.flat = None
        self._unused = []

    def _mark_unreached(self, output):
        """Parameters the output's graph does not reach get no gradient this backward: count
        them as ready now, so that their buckets still go out."""
        reached, stack, seen = set(), [t.grad_fn for t in _tensors_in(output, []) if t.grad_fn is not None], set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            leaf = getattr(node, "variable", None)
            if leaf is not None:
                reached.add(id(leaf))
            stack.extend(n for n, _ in node.next_functions)
        for b in self._buckets:
            for p in b.params:
                if id(p) not in reached:
                    self._unused.append(p)
                    self._grad_ready(p)

    # ---- backward -------------------------------------------------------------------------
    def _grad_ready(self, param):
        if not self._sync_this_backward:
            return
        self._bucket_of[id(param)].waiting.discard(id(param))
        # buckets go out in index order on every rank (MPI matches collectives by their order)
        for b in self._buckets:
            if b.work is None:
                if b.waiting:
                    return
                self._launch(b)
        self._finish()

    def _launch(self, bucket):
        from ... import distributed as dist
        from ... import from_numpy
        parts = [p.grad._data.reshape(-1) if p.grad is not None else numpy.zeros(p._data.size, bucket.dtype)
                 for p in bucket.params]
        bucket.flat = numpy.concatenate(parts) if len(parts) > 1 else parts[0].copy()
        if self._comm_hook is not None:
            state, hook = self._comm_hook
            index = self._buckets.index(bucket)
            grad_bucket = dist.GradBucket(index, from_numpy(bucket.flat), bucket.params,
                                          index == len(self._buckets) - 1)
            bucket.work = hook(state, grad_bucket)
            return
        bucket.work = dist.all_reduce(from_numpy(bucket.flat), op=dist.ReduceOp.AVG, group=self.process_group,
                                      async_op=True)

    def _finish(self):
        from ... import distributed as dist
        from ... import from_numpy, zeros_like
        used = None
        if self.find_unused_parameters:
            # which parameters some rank used: a globally unused one keeps grad None, as in torch
            unused = {id(p) for p in self._unused}
            mask = numpy.array([id(p) not in unused for b in self._buckets for p in b.params], numpy.uint8)
            dist.all_reduce(from_numpy(mask), op=dist.ReduceOp.MAX, group=self.process_group)
            used = iter(mask.tolist())
        for b in self._buckets:
            result = b.work.wait()
            if self._comm_hook is not None:  # the hook's future holds the new flat gradients
                b.flat = numpy.asarray(result._data).reshape(-1).astype(b.dtype, copy=False)
            at = 0
            for p, n in zip(b.params, b.sizes):
                keep = True if used is None else bool(next(used))
                if keep:
                    if p.grad is None:
                        p.grad = zeros_like(p)
                    # in place (reshape(-1) of a strided gradient would be a copy: write through its shape)
                    p.grad._data[...] = b.flat[at:at + n].reshape(p.grad._data.shape)
                    _bump(p.grad)
                at += n
        self._sync_this_backward = False
