"""DDP's reducer: the gradient buckets and the averaging started from the autograd hooks.

A bucket goes out once every parameter in it is ready: its gradient arrived (its
post-accumulate hook ran, as many times as the first iteration counted under
``static_graph``), or it is known to get none this backward (found unused). Buckets go out
in index order on every rank, since MPI matches collectives by their order. The last one
out waits for all and writes the averages back.

The buckets are arrays of the parameters' backend (numpy, or cupy for cuda parameters,
whose all-reduce runs on NCCL in a group that has it)."""

from __future__ import annotations

import numpy

__all__ = ["Reducer"]

_MARKED_TWICE = (
    "Expected to mark a variable ready only once. This error is caused by one of the following reasons: "
    "1) Use of a module parameter outside the `forward` function. Please make sure model parameters are not "
    "shared across multiple concurrent forward-backward passes. or try to use _set_static_graph() as a "
    "workaround if this module graph does not change during training loop.2) Reused parameters in multiple "
    "reentrant backward passes. For example, if you use multiple `checkpoint` functions to wrap the same part "
    "of your model, it would result in the same set of parameters been used by different reentrant backward "
    "passes multiple times, and hence marking a variable ready multiple times. DDP does not support such use "
    "cases in default. You can try to use _set_static_graph() as a workaround if your module graph does not "
    "change over iterations.\nParameter {name} has been marked as ready twice. This means that multiple "
    "autograd engine hooks have fired for this particular parameter during this iteration.")


def _bump(t):
    if type(t._vc) is list:
        t._vc[0] += 1


def _xp(arr):
    """The array module of ``arr``: numpy, or cupy for a cuda parameter's array."""
    if type(arr) is numpy.ndarray:
        return numpy
    import cupy
    return cupy


def _wrap(arr, dtype):
    """A tensor around ``arr`` (ember dtype ``dtype``)."""
    if type(arr) is numpy.ndarray:
        from ... import from_numpy
        return from_numpy(arr)
    from ..._tensor import _make
    return _make(arr, dtype)


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
    """Parameters reduced together. With gradient_as_bucket_view, ``buffer`` is the flat
    tensor kept for the whole training and ``views`` its slices shaped as the parameters."""

    def __init__(self, index, params, as_view):
        self.index = index
        self.params = params
        self.xp = _xp(params[0]._data)
        self.dtype = params[0]._data.dtype
        self.sizes = [p._data.size for p in params]
        self.offsets = [sum(self.sizes[:i]) for i in range(len(params))]
        self.waiting = set()
        self.work = None
        self.flat = None
        self.buffer = self.views = None
        if as_view:
            self.buffer = _wrap(self.xp.zeros(sum(self.sizes), self.dtype), params[0].dtype)
            self.views = [self.buffer[at:at + n].view(p.shape) for p, at, n in zip(params, self.offsets, self.sizes)]
            for p, v in zip(params, self.views):
                if p.grad is not None:  # an existing gradient moves into the bucket
                    v._data[...] = p.grad._data
                    p.grad = v


class Reducer:
    def __init__(self, ddp, params):
        self.ddp = ddp
        self.params = params
        self.comm_hook = None
        self.buckets = self._make_buckets(params, ddp.bucket_bytes_cap, ddp.gradient_as_bucket_view)
        self.bucket_of = {id(p): b for b in self.buckets for p in b.params}
        self.sync = False          # this backward averages
        self.finished = False      # its averages are written
        self.unused = []           # parameters known to get no gradient this backward
        self.divisor_work = None   # the Join's count of ranks still training (divide_by_initial_world_size=False)
        self.divisor = None
        # static_graph: how many times each parameter's hook ran in the first iteration
        self.static_counts = None
        self.remaining = {}
        self.fired = {}
        self.queued = False
        self.marked_unused = False

    @staticmethod
    def _make_buckets(params, cap, as_view):
        groups, current, size = [], [], 0
        for p in reversed(params):
            nbytes = p._data.nbytes
            if current and (size + nbytes > cap or p._data.dtype != current[0]._data.dtype):
                groups.append(current)
                current, size = [], 0
            current.append(p)
            size += nbytes
        groups.append(current)
        return [_Bucket(i, g, as_view) for i, g in enumerate(groups)]

    @property
    def _group(self):
        return self.ddp.process_group

    def _name(self, param) -> str:
        return next((n for n, p in self.ddp.module.named_parameters() if p is param), "?")

    def _names_waiting(self):
        names = {id(p): n for n, p in self.ddp.module.named_parameters()}
        return [names.get(pid, "?") for b in self.buckets for pid in b.waiting]

    # ---- iteration bookkeeping --------------------------------------------------------------
    def check_previous_reduction(self):
        started = any(b.waiting != {id(p) for p in b.params} for b in self.buckets)
        if self.sync and not self.finished and started and any(b.waiting for b in self.buckets):
            if self.static_counts is not None:
                raise RuntimeError(
                    "Expected to have finished reduction in the prior iteration before starting a new one. This "
                    "error indicates that your training graph has changed in this iteration, e.g., one parameter "
                    "is used in first iteration, but then got unused in the second iteration. this is not "
                    "compatible with static_graph set to True. Parameters without a gradient: "
                    + ", ".join(self._names_waiting()))
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. "
                "This error indicates that your module has parameters that were not used in producing loss. "
                "You can enable unused parameter detection by passing the keyword argument "
                "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`; parameters "
                "without a gradient: " + ", ".join(self._names_waiting()))

    def prepare_for_forward(self, sync: bool):
        self.sync = sync
        if not sync:
            return
        self.finished = False
        for b in self.buckets:
            b.waiting = {id(p) for p in b.params}
            b.work = b.flat = None
        self.unused = []
        self.divisor = None
        self.queued = self.marked_unused = False
        if self.ddp.static_graph:
            if self.static_counts is None:
                self.fired = dict.fromkeys(self.bucket_of, 0)
            else:
                self.remaining = dict(self.static_counts)
                self.unused = [p for p in self.params if self.static_counts[id(p)] == 0]

    def prepare_for_backward(self, output):
        """find_unused_parameters (without static_graph): parameters the output's graph
        does not reach get no gradient this backward; count them as ready now."""
        if not self.ddp.find_unused_parameters or self.ddp.static_graph:
            return
        reached, seen = set(), set()
        stack = [t.grad_fn for t in _tensors_in(output, []) if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            leaf = getattr(node, "variable", None)
            if leaf is not None:
                reached.add(id(leaf))
            stack.extend(n for n, _ in node.next_functions)
        self.unused = [p for b in self.buckets for p in b.params if id(p) not in reached]
        for p in self.unused:
            self._mark_ready(p)

    # ---- backward ---------------------------------------------------------------------------
    def grad_ready(self, param):
        """The post-accumulate hook of every parameter."""
        if not self.sync:
            return
        if self.finished:
            raise RuntimeError(_MARKED_TWICE.format(name=self._name(param)))
        if self.ddp.static_graph:
            if self.static_counts is None:  # first iteration: count, reduce once backward is over
                if not self.queued:
                    from ...autograd.engine import queue_callback
                    queue_callback(self._reduce_after_first_backward, outermost=True)
                    self.queued = True
                self.fired[id(param)] += 1
                return
            if not self.marked_unused:
                self.marked_unused = True
                for p in self.unused:
                    self._mark_ready(p)
            left = self.remaining[id(param)] - 1
            if left < 0:
                raise RuntimeError(_MARKED_TWICE.format(name=self._name(param)))
            self.remaining[id(param)] = left
            if left:
                return
        self._mark_ready(param)

    def _mark_ready(self, param):
        bucket = self.bucket_of[id(param)]
        if id(param) not in bucket.waiting:
            raise RuntimeError(_MARKED_TWICE.format(name=self._name(param)))
        bucket.waiting.discard(id(param))
        for b in self.buckets:
            if b.work is None:
                if b.waiting:
                    return
                self._launch(b)
        self._finish()

    def _reduce_after_first_backward(self):
        """static_graph's first iteration: every bucket at once, then the counts are kept."""
        if self.finished or not self.sync:
            return
        self.unused = [p for b in self.buckets for p in b.params if self.fired[id(p)] == 0]
        for b in self.buckets:
            b.waiting.clear()
            self._launch(b)
        self._finish()
        self.static_counts = dict(self.fired)

    def _divisor(self) -> int:
        if self.divisor is None:
            self.divisor = self._group.size()
            if self.divisor_work is not None:  # how many ranks still train (the Join's all-reduce of ones)
                self.divisor_work.wait()
                self.divisor = int(self.divisor_work._outputs[0].item())
        return self.divisor

    def _launch(self, bucket, zeros=False):
        """Start the bucket's reduction (``zeros``: a joined rank's contribution)."""
        from ... import distributed as dist
        xp = bucket.xp
        if bucket.buffer is not None:
            flat = bucket.buffer._data
            for p, view, at, n in zip(bucket.params, bucket.views, bucket.offsets, bucket.sizes):
                if zeros or p.grad is None:
                    flat[at:at + n] = 0
                elif p.grad is not view:  # a gradient made anew (after zero_grad(set_to_none=True))
                    view._data[...] = p.grad._data
                    p.grad = view
            tensor = bucket.buffer
        else:
            if zeros:
                flat = xp.zeros(sum(bucket.sizes), bucket.dtype)
            else:
                parts = [p.grad._data.reshape(-1) if p.grad is not None else xp.zeros(p._data.size, bucket.dtype)
                         for p in bucket.params]
                flat = xp.concatenate(parts) if len(parts) > 1 else parts[0].copy()
            tensor = _wrap(flat, bucket.params[0].dtype)
        bucket.flat = flat
        if self.comm_hook is not None:
            state, hook = self.comm_hook
            grad_bucket = dist.GradBucket(bucket.index, tensor, bucket.params, bucket.index == len(self.buckets) - 1)
            bucket.work = hook(state, grad_bucket)
            return
        whole = self._divisor() == self._group.size()
        bucket.work = dist.all_reduce(tensor, op=dist.ReduceOp.AVG if whole else dist.ReduceOp.SUM,
                                      group=self._group, async_op=True)

    def _used_mask(self, need):
        """Which parameters some rank used (one all-reduce), or None when not exchanged."""
        if not need:
            return None
        from ... import distributed as dist
        from ... import from_numpy
        unused = {id(p) for p in self.unused}
        mask = numpy.array([id(p) not in unused for b in self.buckets for p in b.params], numpy.uint8)
        flags = from_numpy(mask)
        if self.buckets[0].xp is not numpy:  # on the parameters' device: a "nccl" group reduces cuda tensors
            flags = flags.to(self.params[0].device)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self._group)
        return flags.tolist()

    def _exchanges_used(self) -> bool:
        if self.ddp.static_graph:
            return self.static_counts is None
        return self.ddp.find_unused_parameters

    def _finish(self, used=None):
        from ... import zeros_like
        if used is None:
            used = self._used_mask(self._exchanges_used())
        flags = iter(used) if used is not None else None
        whole = self.comm_hook is not None or self._divisor() == self._group.size()
        for b in self.buckets:
            result = b.work.wait()
            if self.comm_hook is not None:  # the hook's future holds the new flat gradients
                got = b.xp.asarray(result._data).reshape(-1)
                if not b.xp.may_share_memory(got, b.flat):
                    b.flat[...] = got
            elif not whole:
                b.flat /= self._divisor()
            for i, (p, at, n) in enumerate(zip(b.params, b.offsets, b.sizes)):
                if flags is not None and not next(flags):
                    continue  # no rank used it: its gradient stays as it was
                if b.views is not None:
                    if p.grad is not b.views[i]:
                        p.grad = b.views[i]
                    continue
                if p.grad is None:
                    p.grad = zeros_like(p)
                # in place (reshape(-1) of a strided gradient would be a copy: write through its shape)
                p.grad._data[...] = b.flat[at:at + n].reshape(p.grad._data.shape)
                _bump(p.grad)
        self.finished = True
        # a hook of this same backward from now on is a parameter marked ready twice; the
        # hooks of a later backward without a forward of DDP's only accumulate (torch's reducer)
        from ...autograd.engine import queue_callback
        try:
            queue_callback(self._end_of_backward, outermost=True)
        except RuntimeError:  # not inside a backward
            self.sync = False

    def _end_of_backward(self):
        self.sync = False

    # ---- a joined rank's side of one iteration ------------------------------------------------
    def shadow_backward(self, nonjoined: int):
        """Issue the collectives of the other ranks' backward with zero gradients: every
        bucket, then the used-parameter exchange where they run it. The averages land in
        this rank's gradients too, so that an optimizer stepping here (ZeRO's join hook)
        steps with what the others step with."""
        self.sync, self.finished = True, False
        self.divisor = self._group.size() if self.ddp._divide_by_initial_world_size else nonjoined
        for b in self.buckets:
            b.waiting = set()
            self._launch(b, zeros=True)
        first_static = self.ddp.static_graph and self.static_counts is None
        self.unused = list(self.params)
        used = self._used_mask(self._exchanges_used())
        self._finish(used if used is not None else [True] * len(self.params))
        if first_static:  # what the others now know; this rank never counted its own
            order = [p for b in self.buckets for p in b.params]
            self.static_counts = {id(p): int(u) for p, u in zip(order, used)}
        self.sync = False
