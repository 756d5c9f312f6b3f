"""DistributedDataParallel (torch.nn.parallel.DistributedDataParallel) on ember.distributed's
MPI engine.

At construction the parameters and buffers of rank 0 are broadcast to every rank. Gradients
are averaged across ranks in buckets of about ``bucket_cap_mb``: parameters are grouped in
reverse registration order (roughly the order backward produces their gradients), and a
bucket's all-reduce starts, as a non-blocking MPI request, from the post-accumulate hook of
the last of its parameters to get a gradient, so communication overlaps the rest of
backward. The last hook of a backward waits for every bucket and writes the averages back
into ``.grad`` (or, with ``gradient_as_bucket_view``, leaves ``.grad`` as views of the
buckets the averages landed in), so the gradients are final when ``backward()`` returns.

Source: https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy

from ...distributed.algorithms.join import Join, Joinable
from ..modules.module import Module
from ._ddp_join import DDPJoinHook
from ._ddp_reducer import Reducer

__all__ = ["DistributedDataParallel"]


def _bump(t):
    if type(t._vc) is list:
        t._vc[0] += 1


class DistributedDataParallel(Module, Joinable):
    """Data-parallel training: wraps ``module`` (``.module``; state_dict keys gain torch's
    ``module.`` prefix) and averages gradients across the ranks of ``process_group`` (the
    default group when None; ValueError, as torch, when no group was initialized).

    ``bucket_cap_mb`` (default 25) bounds a bucket's gradient bytes. ``broadcast_buffers``
    re-broadcasts rank 0's buffers before each forward that follows a synchronised one.
    ``find_unused_parameters`` walks the output's graph after each forward and counts
    parameters it cannot reach as ready, so a backward that leaves some parameters without
    gradient still completes; a parameter no rank used keeps ``grad`` None. Without it, a
    forward after a backward whose reduction did not finish raises torch's RuntimeError.

    ``static_graph=True`` promises that the used parameters, and how many times backward
    reaches each (reentrant backwards reach a parameter once each), stay as in the first
    iteration: that iteration reduces every bucket once its backward has finished and
    records the counts, later ones mark the recorded unused parameters ready without any
    graph walk. A parameter no rank used in the first iteration keeps ``grad`` None then and
    gets zeros afterwards, as torch's reducer gives.

    ``gradient_as_bucket_view=True`` makes each ``p.grad`` a view into its bucket's flat
    buffer (the memory that is all-reduced): no copy in or out, and ``p.grad`` shares memory
    with ``GradBucket.buffer()``. ``no_sync()`` skips the averaging for the backwards of
    forwards run inside it (gradients accumulate locally and are averaged at the next
    synchronised backward). ``register_comm_hook`` replaces the averaging (the hooks of
    ember.distributed.algorithms.ddp_comm_hooks). ``join()`` (or
    ``ember.distributed.algorithms.Join([ddp, ...])``) trains ranks with uneven numbers of
    batches. ``check_reduction``, ``device_ids`` and ``output_device`` are accepted and
    change nothing, nor does ``dim`` (the dim inputs would be scattered along: each rank runs
    its own inputs).

    Cuda parameters keep their buckets on the device, and in a group with NCCL ("nccl" or
    "cpu:gloo,cuda:nccl") every collective of DDP (the broadcasts, the buckets' all-reduces,
    the small control all-reduces) runs on NCCL, on the current stream.
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        Joinable.__init__(self)
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
        self.require_forward_param_sync = True
        self._divide_by_initial_world_size = True
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._sync_states([*module.parameters(), *module.buffers()])
        self.reducer = Reducer(self, params)
        self._hooks = [p.register_post_accumulate_grad_hook(self.reducer.grad_ready) for p in params]

    @property
    def device(self):
        return next(self.module.parameters()).device

    # ---- construction ---------------------------------------------------------------------
    def _sync_states(self, tensors, src=None):
        """Broadcast the tensors of rank 0 (or global rank ``src``) to the others, as one message."""
        from ... import distributed as dist
        from ... import uint8
        from ._ddp_reducer import _wrap, _xp
        tensors = [t for t in tensors if t._data.size]
        if not tensors or self.process_group.size() == 1:
            return
        xp = _xp(tensors[0]._data)
        flat = xp.concatenate([xp.ascontiguousarray(t._data).reshape(-1).view(numpy.uint8) for t in tensors])
        dist.broadcast(_wrap(flat, uint8), src=self.process_group._ranks[0] if src is None else src,
                       group=self.process_group)
        at = 0
        for t in tensors:
            n = t._data.nbytes
            t._data[...] = flat[at:at + n].view(t._data.dtype).reshape(t._data.shape)
            at += n
            _bump(t)

    def register_comm_hook(self, state, hook) -> None:
        """Average gradients with ``hook(state, bucket)`` instead: it gets each bucket as a
        ``GradBucket`` and returns an ember.futures.Future of the bucket's new flat gradients
        (see ember.distributed.algorithms.ddp_comm_hooks.default_hooks). Once, before training."""
        if self.reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not callable(hook):
            raise TypeError(f"Communication hook must be callable, got {type(hook).__name__}")
        self.reducer.comm_hook = (state, hook)

    @property
    def _buckets(self):
        return self.reducer.buckets

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

    def _will_sync_buffers(self) -> bool:
        return self.require_forward_param_sync and self.broadcast_buffers and any(
            b._data.size for b in self.module.buffers())

    def _find_common_rank(self, candidate: bool) -> int:
        """The largest global rank among those with ``candidate`` True (one all-reduce)."""
        from ... import distributed as dist
        from ... import tensor
        me = self.process_group._ranks[self.process_group.rank()]
        pick = tensor([me if candidate else -1], device=self.device)
        dist.all_reduce(pick, op=dist.ReduceOp.MAX, group=self.process_group)
        if pick.item() == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process.")
        return pick.item()

    def _global_requires_sync(self, joined: bool):
        """In a Join: the all-reduce that tells joined ranks whether this iteration averages
        gradients; on a joined rank, its answer."""
        from ... import distributed as dist
        from ... import tensor
        flag = tensor([0 if joined or not self.require_backward_grad_sync else 1], device=self.device)
        work = dist.all_reduce(flag, group=self.process_group, async_op=True)
        if joined:
            work.wait()
            return flag.item() != 0
        return None

    def forward(self, *inputs, **kwargs):
        from ... import is_grad_enabled
        reducer = self.reducer
        reducer.check_previous_reduction()
        sync = self.require_backward_grad_sync and is_grad_enabled()
        joining = self._join_config.enable
        if joining:
            work = Join.notify_join_context(self)
            reducer.divisor_work = None if self._divide_by_initial_world_size else work
        if self._will_sync_buffers():
            # in a Join rank 0 may have stopped: the buffers come from a rank still training
            src = self._find_common_rank(True) if joining else None
            self._sync_states(list(self.module.buffers()), src=src)
        if joining:
            self._global_requires_sync(joined=False)
        reducer.prepare_for_forward(sync)
        output = self.module(*inputs, **kwargs)
        if sync:
            reducer.prepare_for_backward(output)
        self.require_forward_param_sync = sync
        return output

    # ---- uneven inputs -----------------------------------------------------------------------
    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        """Train on ranks with different numbers of batches (torch's DDP ``join``): the
        same as ``Join([self], enable, throw_on_early_termination,
        divide_by_initial_world_size=...)``. A rank whose loop ended stays at the end of the
        block and takes part in the other ranks' collectives with zero gradients until every
        rank is done; then every rank takes the model of the last rank to finish. Averages
        divide by the whole world size, or, with ``divide_by_initial_world_size=False``, by
        the number of ranks still training. ``throw_on_early_termination=True``: every rank
        raises RuntimeError once one rank runs out of batches."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        """The hook of a joined rank (``divide_by_initial_world_size``, default True): it
        shadows each iteration's buffer broadcast, bucket all-reduces (zero gradients) and
        unused-parameter exchange, and at the end gives every rank the last joiner's model."""
        return DDPJoinHook(self, divide_by_initial_world_size=kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def _sync_final_model(self, is_last_joiner: bool) -> None:
        src = self._find_common_rank(is_last_joiner)
        self._sync_states([*self.module.parameters(), *(self.module.buffers() if self.broadcast_buffers else ())],
                          src=src)
