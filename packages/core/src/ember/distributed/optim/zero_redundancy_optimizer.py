"""ZeroRedundancyOptimizer (torch.distributed.optim.ZeroRedundancyOptimizer): the optimizer
state sharded across the ranks of a group. Each parameter has one owner rank (the largest
parameters first, each to the rank holding the fewest elements so far); a rank keeps the
state of its own parameters only, steps them with ``optimizer_class``, and then every owner
broadcasts its updated parameters to the others.

Source: https://pytorch.org/docs/stable/distributed.optim.html
"""

from __future__ import annotations

import numpy

from ...optim.optimizer import Optimizer
from ..algorithms.join import Join, Joinable, JoinHook

__all__ = ["ZeroRedundancyOptimizer"]


class _ZeROJoinHook(JoinHook):
    """A joined rank still owns its shard: each iteration it steps that shard (with the
    gradients it holds; under DDP's join hook, the average the others step with) and
    takes part in every owner's broadcast."""

    def __init__(self, zero):
        if not isinstance(zero, ZeroRedundancyOptimizer):
            raise AssertionError("ZeRO join hook requires passing in a ZeroRedundancyOptimizer instance as the state")
        self.zero = zero
        super().__init__()

    def main_hook(self) -> None:
        self.zero.step()


class ZeroRedundancyOptimizer(Optimizer, Joinable):
    """Wraps ``optimizer_class(params, **defaults)`` so that each rank holds about 1/world of
    its state. ``step`` returns the closure's loss; ``consolidate_state_dict(to)`` gathers the
    whole state on rank ``to``, whose ``state_dict()`` then has the layout of the wrapped
    optimizer's (other ranks, or before consolidating: RuntimeError, as torch).
    ``parameters_as_bucket_view`` and ``overlap_with_ddp`` are accepted and change nothing.
    A :class:`~ember.distributed.algorithms.Joinable`: inside ``Join([ddp_model, zero])`` a
    rank out of batches keeps stepping its shard until every rank is done.

    ``params`` are the parameters (or parameter groups) to optimize, shared out among the
    ranks; ``process_group`` is the group they are shared in (the default group when None)
    (torch.distributed.optim.ZeroRedundancyOptimizer)."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        from .. import _group
        super().__init__(params, defaults)
        Joinable.__init__(self)
        self.process_group = _group._resolve(process_group)
        self.optimizer_class = optimizer_class
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._all_params = [p for g in self.param_groups for p in g["params"]]
        self._owner = self._partition()
        me = self.process_group.rank()
        local_groups = [{**{k: v for k, v in g.items() if k != "params"},
                         "params": [p for p in g["params"] if self._owner[id(p)] == me]} for g in self.param_groups]
        local_groups = [g for g in local_groups if g["params"]]
        self.optim = optimizer_class(local_groups, **defaults) if local_groups else None
        self.state = self.optim.state if self.optim is not None else self.state
        self._consolidated = None

    def _partition(self) -> dict:
        size = self.process_group.size()
        load = [0] * size
        owner = {}
        for p in sorted(self._all_params, key=lambda t: -t.numel()):
            rank = min(range(size), key=lambda r: load[r])
            owner[id(p)] = rank
            load[rank] += p.numel()
        return owner

    def _sync_options(self):
        """Carry option changes (a scheduler's lr) from the wrapper's groups to the local ones."""
        if self.optim is None:
            return
        for local in self.optim.param_groups:
            mine = {id(p) for p in local["params"]}
            source = next(g for g in self.param_groups if any(id(p) in mine for p in g["params"]))
            local.update({k: v for k, v in source.items() if k != "params"})

    def step(self, closure=None):
        from ... import enable_grad, from_numpy, no_grad
        from .._collectives import broadcast
        Join.notify_join_context(self)
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._sync_options()
        if self.optim is not None:
            self.optim.step()
        pg = self.process_group
        with no_grad():
            for rank in range(pg.size()):
                owned = [p for p in self._all_params if self._owner[id(p)] == rank]
                if not owned:
                    continue
                flat = numpy.concatenate([p._data.reshape(-1) for p in owned]).astype(owned[0]._data.dtype) \
                    if len({p._data.dtype for p in owned}) == 1 else None
                if flat is None:  # mixed dtypes: one broadcast per parameter
                    for p in owned:
                        broadcast(p.data, group_src=rank, group=pg)
                    continue
                broadcast(from_numpy(flat), group_src=rank, group=pg)
                at = 0
                for p in owned:
                    n = p._data.size
                    p._data[...] = flat[at:at + n].reshape(p._data.shape)
                    at += n
                    if type(p._vc) is list:
                        p._vc[0] += 1
        return loss

    def join_hook(self, **kwargs) -> JoinHook:
        """The hook of a joined rank: one ``step()`` per iteration of the others (kwargs unused)."""
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        return self._all_params[0].device

    @property
    def join_process_group(self):
        return self.process_group

    def zero_grad(self, set_to_none: bool = True) -> None:
        super().zero_grad(set_to_none)

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's shard of the state on rank ``to`` (every rank must call it)."""
        from .._objects import gather_object
        index = {id(p): i for i, p in enumerate(self._all_params)}
        local = self.optim.state_dict() if self.optim is not None else {"state": {}, "param_groups": []}
        order = [index[id(p)] for g in (self.optim.param_groups if self.optim else []) for p in g["params"]]
        shard = {index_global: local["state"][i] for i, index_global in enumerate(order) if i in local["state"]}
        pg = self.process_group
        box = [None] * pg.size() if pg.rank() == pg._ranks.index(to) else None
        gather_object(shard, box, dst=to, group=pg)
        self._consolidated = None
        if box is not None:
            state = {}
            for part in box:
                state.update(part)
            self._consolidated = dict(sorted(state.items()))

    def state_dict(self) -> dict:
        """The whole state (after ``consolidate_state_dict`` on this rank), indexed as the
        wrapped optimizer's over all parameters."""
        if self._consolidated is None:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               "`consolidate_state_dict(to)` on all ranks beforehand if you meant to save the "
                               "global state.")
        groups, at = [], 0
        for g in self.param_groups:
            groups.append({**{k: v for k, v in g.items() if k != "params"},
                           "params": list(range(at, at + len(g["params"])))})
            at += len(g["params"])
        return {"state": dict(self._consolidated), "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a whole state (as ``state_dict`` gives it); each rank keeps its own shard."""
        for g, saved in zip(self.param_groups, state_dict["param_groups"]):
            g.update({k: v for k, v in saved.items() if k != "params"})
        if self.optim is None:
            return
        index = {id(p): i for i, p in enumerate(self._all_params)}
        order = [index[id(p)] for g in self.optim.param_groups for p in g["params"]]
        state = {i: state_dict["state"][gi] for i, gi in enumerate(order) if gi in state_dict["state"]}
        local_groups = [{**{k: v for k, v in g.items() if k != "params"}, "params": g["params"]}
                        for g in self.optim.state_dict()["param_groups"]]
        self.optim.load_state_dict({"state": state, "param_groups": local_groups})
        self._sync_options()
