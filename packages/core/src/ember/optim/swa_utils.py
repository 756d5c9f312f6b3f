"""Stochastic Weight Averaging and exponential moving averages of a model's weights
(torch.optim.swa_utils): AveragedModel, SWALR, update_bn and the averaging functions.

Sources: Izmailov et al., "Averaging Weights Leads to Wider Optima and Better
Generalization" (2018); https://pytorch.org/docs/stable/optim.html#weight-averaging-swa-and-ema
"""

from __future__ import annotations

import itertools
import math
from copy import deepcopy

from .._dtype import int64
from ..autograd.grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..ops import creation
from ._lr_cycles import _per_group
from .lr_scheduler import LRScheduler

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _lerp_all(averaged, current, weight) -> None:
    """averaged += weight * (current - averaged), in place, for every pair."""
    for avg, cur in zip(averaged, current):
        if avg.is_floating_point() or avg.is_complex():
            avg.lerp_(cur, weight)
        else:
            avg.copy_(avg + (cur - avg) * weight)


def get_ema_multi_avg_fn(decay: float = 0.999):
    """An in-place exponential moving average over lists of tensors:
    ``ema = decay * ema + (1 - decay) * current``.

    Raises:
        ValueError: ``decay`` outside [0, 1].
    """
    _check_decay(decay)

    def ema_update(ema_params, current_params, _num_averaged) -> None:
        with no_grad():
            _lerp_all(ema_params, current_params, 1 - decay)
    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean over lists of tensors: ``avg += (current - avg) / (n + 1)``."""

    def swa_update(averaged_params, current_params, num_averaged) -> None:
        with no_grad():
            _lerp_all(averaged_params, current_params, 1 / (float(num_averaged) + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """The exponential moving average of one tensor, returned (not in place).

    Raises:
        ValueError: ``decay`` outside [0, 1].
    """
    _check_decay(decay)

    def ema_update(ema_param, current_param, _num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """The running mean of one tensor after ``num_averaged`` models, returned (not in place)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are the average (SWA, by default) or an EMA
    of the weights passed to ``update_parameters``; ``forward`` runs the copy.

    Args:
        model: the model to average (deep-copied).
        device: where the copy lives (default: where ``model`` is).
        avg_fn: ``(averaged, current, num_averaged) -> new averaged`` for one tensor.
        multi_avg_fn: the same over lists of tensors, in place (``get_ema_multi_avg_fn``).
        use_buffers: average the buffers too (else they are copied from ``model``).

    The buffer ``n_averaged`` (int64) counts the models averaged; its key is in the
    state_dict as torch's.

    Raises:
        AssertionError: both ``avg_fn`` and ``multi_avg_fn`` given (as torch).
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers: bool = False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", creation.tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        first = int(self.n_averaged) == 0
        for p_avg, p_model in zip(mine, theirs):
            p_model = p_model.detach().to(p_avg.device)
            averaged.append(p_avg.detach())
            current.append(p_model)
            if first:
                p_avg.detach().copy_(p_model)
        if not first:
            n = int(self.n_averaged)
            if self.avg_fn is not None:
                for p_avg, p_model in zip(averaged, current):
                    p_avg.copy_(self.avg_fn(p_avg, p_model, self.n_averaged.to(p_avg.device)))
            else:
                (self.multi_avg_fn or get_swa_multi_avg_fn())(averaged, current, n)
        if not self.use_buffers:
            with no_grad():
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.copy_(b_model.detach().to(b_avg.device))
        self.n_averaged += 1


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute every BatchNorm's running mean and variance of ``model`` as the
    cumulative average over one pass of ``loader`` (each item an input, or a list/tuple
    whose first element is the input). The model's training mode is restored.

    ``device``, when given, is where each input is moved before the forward pass
    (torch.optim.swa_utils.update_bn)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # cumulative average over the batches
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` over ``anneal_epochs`` epochs ('cos' or
    'linear'), then hold it: the schedule used while averaging weights.

    Raises:
        ValueError: an unknown ``anneal_strategy``, ``anneal_epochs`` not an int >= 0, a
            per-group ``swa_lr`` list of the wrong length.

    ``optimizer`` is the Optimizer whose groups' lrs are set; ``last_epoch`` the index of
    the last epoch when resuming (-1: start afresh) (torch.optim.swa_utils.SWALR)."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1):
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        """The share of ``swa_lr`` in the lr at annealing progress ``t`` in [0, 1]."""
        return (1 - math.cos(math.pi * t)) / 2 if self._anneal_strategy == "cos" else t

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        # undo the last mix: lr = alpha * swa_lr + (1 - alpha) * initial
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        starts = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha) for group in groups]
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(groups, starts)]
