"""Cyclic learning-rate schedules: CyclicLR, OneCycleLR, CosineAnnealingWarmRestarts.

CyclicLR and OneCycleLR are stepped once per batch, and by default also cycle the
momentum (``momentum``, or ``betas[0]`` for Adam-like optimizers) opposite to the lr.
Source: https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate
"""

from __future__ import annotations

import math
import types

from .lr_scheduler import LRScheduler
from .optimizer import Optimizer


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    """``value`` repeated for each param group, or checked to hold one entry per group."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has {len(value)} "
                             f"values, param_groups has {len(optimizer.param_groups)}.")
        return list(value)
    return [value] * len(optimizer.param_groups)


def _check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class _MomentumCycle:
    """Mixin: writes a momentum into each group's ``momentum`` or ``betas[0]``."""

    def _init_momentum(self, optimizer: Optimizer, base_momentum, max_momentum, last_epoch: int) -> tuple:
        """The per-group (base, max) momenta; a fresh start also writes them into the groups."""
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
        self.use_beta1 = "betas" in optimizer.defaults
        bottoms = _per_group("base_momentum", optimizer, base_momentum)
        tops = _per_group("max_momentum", optimizer, max_momentum)
        if last_epoch == -1:
            for top, bottom, group in zip(tops, bottoms, optimizer.param_groups):
                self._set_momentum(group, top)
                group["max_momentum"] = top
                group["base_momentum"] = bottom
        return bottoms, tops

    def _set_momentum(self, group: dict, momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum


class CyclicLR(_MomentumCycle, LRScheduler):
    """Cycle each lr between ``base_lr`` and ``max_lr`` (Smith, "Cyclical Learning Rates
    for Training Neural Networks", 2017), one step per batch.

    A cycle rises for ``step_size_up`` steps and falls for ``step_size_down`` (default:
    the same). The amplitude is scaled by ``mode``: 'triangular' (constant),
    'triangular2' (halved each cycle), 'exp_range' (``gamma ** step``), or by a custom
    ``scale_fn`` of the cycle number (``scale_mode='cycle'``) or the step ('iterations').
    With ``cycle_momentum`` the momentum moves between ``max_momentum`` and
    ``base_momentum`` in the opposite direction.

    Raises:
        TypeError: ``optimizer`` is not an Optimizer.
        ValueError: an unknown ``mode`` without ``scale_fn``; ``cycle_momentum`` with an
            optimizer that has neither ``momentum`` nor ``betas``; a per-group list of the
            wrong length.

    ``last_epoch`` is the index of the last batch when resuming (-1: start afresh), as in
    ``LRScheduler`` (torch.optim.lr_scheduler.CyclicLR)."""

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000, step_size_down=None,
                 mode: str = "triangular", gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = self._init_momentum(optimizer, base_momentum, max_momentum,
                                                                          last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        # the built-in modes fix the scale mode; a custom function keeps the one given
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x) -> float:
        """The amplitude factor at cycle (or step) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self) -> list:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle  # position in the cycle, [0, 1)
        if x <= self.step_ratio:
            rise = x / self.step_ratio
        else:
            rise = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * rise * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, bottom, top in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                self._set_momentum(group, top - (top - bottom) * rise * scale)
        return lrs

    def state_dict(self) -> dict:
        """As the base; a custom ``scale_fn`` is saved as its ``__dict__`` when it is a
        callable object, and as None when it is a plain function."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        custom = self._scale_fn_custom
        super().load_state_dict(state_dict)
        self._scale_fn_custom = custom
        if fn is not None:
            custom.__dict__.update(fn)
        self._init_scale_fn()


class OneCycleLR(_MomentumCycle, LRScheduler):
    """The 1cycle policy (Smith & Topin, "Super-Convergence", 2018), one step per batch.

    The lr rises from ``max_lr / div_factor`` to ``max_lr`` over the first ``pct_start``
    of ``total_steps`` (or ``epochs * steps_per_epoch``), then anneals ('cos' or
    'linear') to ``initial_lr / final_div_factor``; with ``three_phase`` it first returns
    to the initial lr, then anneals. The momentum moves opposite to the lr between
    ``max_momentum`` and ``base_momentum``. Stepping past ``total_steps`` raises.

    Raises:
        TypeError: ``optimizer`` is not an Optimizer.
        ValueError: neither ``total_steps`` nor ``epochs`` and ``steps_per_epoch``; a
            non-positive count; ``pct_start`` not a float in [0, 1]; an unknown
            ``anneal_strategy``; a step past ``total_steps``.

    ``div_factor`` sets the starting lr ``max_lr / div_factor`` (default 25) and
    ``final_div_factor`` the last one, ``initial_lr / final_div_factor`` (default 1e4);
    ``cycle_momentum`` (default True) cycles the momentum (or beta1) at all; ``last_epoch``
    is the index of the last batch when resuming (-1: start afresh)
    (torch.optim.lr_scheduler.OneCycleLR)."""

    def __init__(self, optimizer: Optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        warmup_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                {"end_step": warmup_end, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * self.total_steps) - 2, "start_lr": "max_lr",
                 "end_lr": "initial_lr", "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": warmup_end, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for top, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(optimizer, base_momentum, max_momentum, last_epoch)  # read back from the groups
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                if step <= phase["end_step"] or i == len(self._schedule_phases) - 1:
                    pct = (step - start_step) / (phase["end_step"] - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[phase["start_momentum"]],
                                                               group[phase["end_momentum"]], pct))
                    break
                start_step = phase["end_step"]
        return lrs


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter, 2017): each lr follows a half cosine from its initial
    value down to ``eta_min`` over ``T_i`` epochs, then restarts; the first period is
    ``T_0`` and each next one is ``T_mult`` times longer. ``step(epoch)`` takes a
    fractional epoch too (e.g. ``epoch + batch / batches``), and sets ``last_epoch`` to
    its floor.

    Raises:
        ValueError: ``T_0`` not a positive int, ``T_mult`` not an int >= 1, ``eta_min``
            not a number, a negative ``epoch``.

    ``optimizer`` is the Optimizer whose groups' lrs are set
    (torch.optim.lr_scheduler.CosineAnnealingWarmRestarts)."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance one epoch, or move to ``epoch`` (may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                # index of the period holding `epoch`: T_0 (T_mult^n - 1) / (T_mult - 1) <= epoch
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i = self.T_0
            self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]
