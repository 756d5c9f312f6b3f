"""The generic join context (torch.distributed.algorithms.join): training on ranks with
uneven numbers of inputs. A rank whose loop ended waits at the end of the ``with Join(...)``
block and, while some rank still trains, runs every joinable's ``main_hook`` once per
iteration of the others, issuing the collectives they issue (with neutral contributions),
so that nobody hangs; once all ranks are done each ``post_hook`` runs (DDP: every rank
takes the model of the last rank to finish).

The protocol, per iteration of a rank still training: ``Join.notify_join_context`` runs an
all-reduce of 1 (a joined rank's loop answers it with 0, so the sum is the number of ranks
still training). With ``throw_on_early_termination=True`` a second all-reduce carries 1
from each joined rank, and every rank raises RuntimeError once one rank ran out of inputs.

Source: https://pytorch.org/docs/stable/distributed.algorithms.join.html
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import NamedTuple

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """What a joined rank runs for one :class:`Joinable`: ``main_hook()`` once per iteration
    that some other rank still runs, then ``post_hook(is_last_joiner)`` once every rank has
    joined. Both do nothing by default; subclasses override them."""

    def main_hook(self) -> None:
        """Shadow the collectives of one training iteration (forward, backward, step) of
        the ranks that have not joined."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run once all ranks joined; ``is_last_joiner`` is True on the ranks that were
        among the last to join."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(ABC):
    """A class taking part in :class:`Join`: it implements ``join_hook(**kwargs)`` (its
    :class:`JoinHook`), the properties ``join_device`` and ``join_process_group``, calls
    ``Joinable.__init__`` from its constructor, and ``Join.notify_join_context(self)``
    before the collectives of each iteration."""

    @abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The hook a joined rank runs for this object; ``kwargs`` are those given to Join
        (every joinable of one Join receives the same)."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join context's own collectives."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group of the join context's own collectives."""


class Join:
    """Context manager for uneven inputs over ``joinables`` (a non-empty list of
    :class:`Joinable`, whose hooks run in that order; all must share one process group,
    ValueError otherwise). ``enable=False`` turns it into a no-op (inputs known to be
    even). ``throw_on_early_termination=True`` makes every rank raise RuntimeError as soon
    as one rank runs out of inputs instead of shadowing. Further keyword arguments go to
    every ``join_hook`` (DDP: ``divide_by_initial_world_size``).

    Example: ``with Join([ddp_model, zero_optimizer]): for batch in my_batches: ...``
    """

    def __init__(self, joinables, enable: bool = True, throw_on_early_termination: bool = False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        for j in joinables:
            if not isinstance(j, Joinable):
                raise TypeError(f"Join expects Joinable objects, got {type(j).__name__}")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        for i, j in enumerate(self._joinables):
            j._join_config = _JoinConfig(enable, throw_on_early_termination, i == 0)
        group = None
        for j in self._joinables:
            if group is None:
                group = j.join_process_group
            elif group is not j.join_process_group:
                raise ValueError("Using join context manager with multiple process groups")
        from .. import _group
        self._process_group = group
        self._rank = _group.get_rank(group)
        self._device = self._joinables[0].join_device

    def __enter__(self):
        return None

    def __exit__(self, kind, value, traceback):
        """Shadow the other ranks' iterations until every rank joined, then run the post
        hooks. An exception leaving the block propagates at once (nothing is shadowed).
        Raises RuntimeError with ``throw_on_early_termination=True`` while ranks still train."""
        try:
            if not self._enable or kind is not None:
                return None
            is_last_joiner, shadowed = True, 0
            while True:
                remaining = self._count_nonjoined()
                if remaining == 0:
                    break
                if self._throw_on_early_termination:
                    self._tell_others_to_stop()
                if shadowed == 1000:
                    warnings.warn(f"Detected uneven input skew of greater than 1000. This means that rank "
                                  f"{self._rank} has at least 1000 fewer inputs than other currently-active "
                                  f"ranks. This level of skew could lead to performance degradation during "
                                  f"training.", stacklevel=2)
                # what the hooks call (ZeRO's step notifies) must not announce this rank again
                for j in self._joinables:
                    j._join_nonjoined = remaining
                    j._join_config = _JoinConfig(self._enable, self._throw_on_early_termination, False)
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                shadowed += 1
            for hook in self._join_hooks:
                hook.post_hook(is_last_joiner)
            return None
        finally:
            for j in self._joinables:
                j._join_config = _JoinConfig.construct_disabled_join_config()

    def _count_nonjoined(self) -> int:
        """This rank's 0 in the all-reduce whose sum counts the ranks still training. It is
        non-blocking, as the training ranks' in ``notify_join_context``: MPI never matches a
        blocking collective with a non-blocking one."""
        from ... import zeros
        from .._collectives import all_reduce
        count = zeros(1, device=self._device)
        all_reduce(count, group=self._process_group, async_op=True).wait()
        return int(count.item())

    def _tell_others_to_stop(self):
        from ... import ones
        from .._collectives import all_reduce
        all_reduce(ones(1, device=self._device), group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Tell the join context that this rank has not joined: call it before the
        collectives of each iteration. Only the first joinable of a Join communicates (an
        async all-reduce of 1, whose Work is returned; None for the others and outside a
        Join). With ``throw_on_early_termination=True`` it also raises RuntimeError on
        every rank once some rank ran out of inputs."""
        config = getattr(joinable, "_join_config", None)
        if config is None:
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the ``Joinable`` constructor")
        if not config.is_first_joinable or not config.enable:
            return None
        from ... import ones, zeros
        from .._collectives import all_reduce
        device, group = joinable.join_device, joinable.join_process_group
        work = all_reduce(ones(1, device=device), group=group, async_op=True)
        if config.throw_on_early_termination:
            stop = zeros(1, device=device)
            all_reduce(stop, group=group)
            if stop.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work
