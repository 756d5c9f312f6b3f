"""Learning-rate schedulers (torch.optim.lr_scheduler): StepLR, MultiStepLR, ConstantLR, LinearLR,
ExponentialLR, PolynomialLR, CosineAnnealingLR, LambdaLR, MultiplicativeLR, ReduceLROnPlateau here;
the cyclic schedules (CyclicLR, OneCycleLR, CosineAnnealingWarmRestarts) and the compositions
(SequentialLR, ChainedScheduler) in files of their own, exported from here.

A scheduler sets ``group['lr']`` of its optimizer's groups each ``step()``; it counts
epochs in ``last_epoch`` (-1 before the first step, which the constructor takes).
Source: https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR", "LambdaLR", "MultiplicativeLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "PolynomialLR", "ReduceLROnPlateau", "CosineAnnealingWarmRestarts", "CyclicLR",
           "OneCycleLR", "SequentialLR", "ChainedScheduler"]


class LRScheduler:
    """Base class: subclasses define ``get_lr()`` (the lrs of the epoch ``last_epoch``).

    Args:
        optimizer: the Optimizer whose groups' ``'lr'`` are set.
        last_epoch (int): the index of the last epoch when resuming, default -1; with
            a value >= 0 every group must hold ``'initial_lr'``.

    Raises:
        TypeError: ``optimizer`` is not an Optimizer.
        KeyError: resuming (``last_epoch >= 0``) with a group lacking ``'initial_lr'``.
    """

    _get_lr_called_within_step = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0.")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def state_dict(self) -> dict:
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The lrs the last ``step()`` set, one per group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The lrs of epoch ``last_epoch`` (computed from the groups' current lrs)."""
        raise NotImplementedError

    def step(self, epoch=None) -> None:
        """Advance one epoch (or jump to ``epoch``, deprecated in torch) and set the lrs."""
        self._step_count += 1
        if epoch is not None:
            warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
                          "where possible.", UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None) -> None:
        """Set the lrs of the next epoch, or of ``epoch`` (closed form where there is one)."""
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler


class StepLR(LRScheduler):
    """Multiply each group's lr by ``gamma`` every ``step_size`` epochs.

    Args: ``optimizer``, ``step_size`` (int), ``gamma`` (float, default 0.1), ``last_epoch`` (-1).
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal each lr from its initial value to ``eta_min`` along a half cosine of
    ``T_max`` epochs (SGDR without restarts), computed recursively as torch does.

    Args: ``optimizer``, ``T_max`` (int), ``eta_min`` (float, default 0.0), ``last_epoch`` (-1).
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max))
                    / 2 for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self) -> list:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class LambdaLR(LRScheduler):
    """Set each lr to its initial value times ``lr_lambda(epoch)``.

    Args: ``optimizer``, ``lr_lambda`` (a function of the epoch, or one per group), ``last_epoch`` (-1).

    Raises:
        ValueError: a list of lambdas whose length is not the number of groups.
    """

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        """As the base, with each lambda's ``__dict__`` when it is a callable object (None
        for plain functions and lambdas, which cannot be saved)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None] * len(self.lr_lambdas)
        for i, fn in enumerate(self.lr_lambdas):
            if not isinstance(fn, types.FunctionType):
                state["lr_lambdas"][i] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lr_lambdas
        for i, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[i].__dict__.update(fn)

    def get_lr(self) -> list:
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(LambdaLR):
    """Multiply each lr by ``lr_lambda(epoch)`` every epoch (one function, or one per group).

    Args: ``optimizer``, ``lr_lambda``, ``last_epoch`` (-1).
    """

    def get_lr(self) -> list:
        if self._is_initial:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * lmbda(self.last_epoch) for lmbda, group in zip(self.lr_lambdas,
                                                                             self.optimizer.param_groups)]


class MultiStepLR(LRScheduler):
    """Multiply each lr by ``gamma`` at every milestone epoch (a milestone listed twice
    counts twice).

    Args: ``optimizer``, ``milestones`` (epochs), ``gamma`` (0.1), ``last_epoch`` (-1).
    """

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        groups = self.optimizer.param_groups
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in groups]

    def _get_closed_form_lr(self) -> list:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base_lr * self.gamma ** passed for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale each lr by ``factor`` for the first ``total_iters`` epochs, then restore it.

    Args: ``optimizer``, ``factor`` (1/3), ``total_iters`` (5), ``last_epoch`` (-1).

    Raises:
        ValueError: ``factor`` outside [0, 1].
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return [group["lr"] for group in groups]
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _get_closed_form_lr(self) -> list:
        scale = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base_lr * scale for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale each lr by a factor going linearly from ``start_factor`` to ``end_factor``
    over ``total_iters`` epochs (computed recursively, as torch).

    Args: ``optimizer``, ``start_factor`` (1/3), ``end_factor`` (1.0), ``total_iters`` (5), ``last_epoch`` (-1).

    Raises:
        ValueError: ``start_factor`` outside (0, 1] or ``end_factor`` outside [0, 1].
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [group["lr"] * ratio for group in groups]

    def _get_closed_form_lr(self) -> list:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply each lr by ``gamma`` every epoch.

    Args: ``optimizer``, ``gamma``, ``last_epoch`` (-1).
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self._is_initial:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay each lr as (1 - epoch / total_iters) ** power until ``total_iters``
    (computed recursively, as torch).

    Args: ``optimizer``, ``total_iters`` (5), ``power`` (1.0), ``last_epoch`` (-1).
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        groups = self.optimizer.param_groups
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        factor = ((1.0 - self.last_epoch / self.total_iters) / (1.0 - (self.last_epoch - 1) / self.total_iters)
                  ) ** self.power
        return [group["lr"] * factor for group in groups]

    def _get_closed_form_lr(self) -> list:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base_lr * left ** self.power for base_lr in self.base_lrs]


class ReduceLROnPlateau(LRScheduler):
    """Multiply each lr by ``factor`` once the ``metrics`` given to ``step(metrics)`` have not
    improved for ``patience`` epochs, then wait ``cooldown`` epochs; lrs never go below
    ``min_lr`` (a number or one per group), and a change under ``eps`` is skipped.
    Improvement is relative (``threshold_mode='rel'``: better than best * (1 -+ threshold))
    or absolute, for ``mode`` 'min' or 'max'. ``optimizer`` is the Optimizer whose groups'
    lrs are reduced; ``threshold`` the least improvement that counts.

    Raises:
        ValueError: ``factor >= 1``, a ``min_lr`` list of the wrong length, an unknown mode.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0, eps: float = 1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None) -> None:
        """Record one epoch's ``metrics`` and reduce the lrs when it is time."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
                          "where possible.", UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the `optimizer` ({len(groups)}) differs from when "
                                   f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)})")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new

    def _is_better(self, value) -> bool:
        if self.mode == "min":
            return value < (self.best * (1.0 - self.threshold) if self.threshold_mode == "rel"
                            else self.best - self.threshold)
        return value > (self.best * (self.threshold + 1.0) if self.threshold_mode == "rel"
                        else self.best + self.threshold)


# the cyclic schedules and the compositions build on the classes above
from ._lr_composition import ChainedScheduler, SequentialLR  # noqa: E402
from ._lr_cycles import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR  # noqa: E402
