"""Schedulers made of schedulers: SequentialLR (one after another at milestones) and
ChainedScheduler (all of them every step, their factors multiplying).

Source: https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate
"""

from __future__ import annotations

from bisect import bisect_right

from .lr_scheduler import LRScheduler, ReduceLROnPlateau
from .optimizer import Optimizer


def _check_schedulers(owner: str, schedulers, optimizer) -> None:
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             f"kwargs to be specified when calling `step`, but got one at index {i} in the given "
                             "schedulers sequence.")
        if optimizer != scheduler.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(scheduler).__name__} at index {i} has {scheduler.optimizer}, which is different "
                             f"from {type(optimizer).__name__}.")


class _Composition(LRScheduler):
    """The wrapped schedulers' states are saved with the composition's own."""

    def state_dict(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        inner = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, state in zip(self._schedulers, inner):
            scheduler.load_state_dict(state)


class SequentialLR(_Composition):
    """Run ``schedulers[i]`` between ``milestones[i - 1]`` and ``milestones[i]``; each
    scheduler starts from the groups' initial lrs at its milestone.

    Args: ``optimizer``, ``schedulers`` (list), ``milestones`` (one fewer than schedulers),
    ``last_epoch`` (-1).

    Raises:
        ValueError: no scheduler, a ReduceLROnPlateau, a scheduler of another optimizer,
            or a number of milestones other than ``len(schedulers) - 1``.
        TypeError: an entry without an ``optimizer``.
    """

    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1):
        owner = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{owner} expects at least one scheduler, but got no scheduler.")
        _check_schedulers(owner, schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # undo the steps the wrapped schedulers' constructors took, then take the first one's
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo_initial_steps(self)
        first = self._schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    @classmethod
    def _undo_initial_steps(cls, scheduler) -> None:
        if hasattr(scheduler, "_schedulers"):
            for inner in scheduler._schedulers:
                cls._undo_initial_steps(inner)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def recursive_undo(self, sched=None) -> None:
        """Take back one epoch from every wrapped scheduler (torch's public name for it)."""
        self._undo_initial_steps(self if sched is None else sched)

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)  # a fresh start at the milestone
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composition):
    """Step every scheduler in ``schedulers`` at each step, in order, so their effects
    compose (e.g. a ConstantLR warm-up with an ExponentialLR decay).

    Args: schedulers (list), optimizer (default: the first scheduler's).

    Raises:
        ValueError: no scheduler, a ReduceLROnPlateau, or schedulers of different optimizers.
        TypeError: an entry without an ``optimizer``.
    """

    def __init__(self, schedulers, optimizer: Optimizer | None = None):
        owner = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{owner} expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(owner, schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = [group["lr"] for group in schedulers[-1].optimizer.param_groups]

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = [group["lr"] for group in self._schedulers[-1].optimizer.param_groups]
