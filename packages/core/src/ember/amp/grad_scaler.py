"""GradScaler: loss scaling for float16 training (torch.amp.GradScaler).

``scaler.scale(loss).backward()`` multiplies the loss by the scale, so small float16
gradients do not underflow; ``scaler.step(optimizer)`` divides the gradients by the
scale (``unscale_``), and skips the step when any is inf or NaN; ``scaler.update()``
halves the scale after such a step, and doubles it after ``growth_interval`` clean ones.
Source: https://pytorch.org/docs/stable/amp.html#gradient-scaling
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

from .._dtype import float16, float32, int32
from ..autograd.grad_mode import no_grad
from ..ops import creation

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """GradScaler(device='cuda', init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True).

    The scale is a float32 0-d tensor and the count of clean steps an int32 one, made on
    the device of the first scaled output. A GradScaler for 'cuda' when CUDA is not
    available warns and disables itself (every method then passes through).

    ``device`` is the device type of the scaled gradients; ``init_scale`` the first scale;
    the scale is multiplied by ``growth_factor`` after ``growth_interval`` steps without
    inf or NaN gradients and by ``backoff_factor`` after a step with some (which is
    skipped); with ``enabled`` False every method passes through (torch.amp.GradScaler).

    Raises:
        AssertionError: ``growth_factor <= 1`` or ``backoff_factor >= 1`` (as torch).
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init(self, device) -> None:
        self._scale = creation.full((), self._init_scale, dtype=float32, device=device)
        self._growth_tracker = creation.full((), self._init_growth_tracker, dtype=int32, device=device)

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples/iterables of tensors) times the scale.

        Raises:
            ValueError: an element that is neither a tensor nor an iterable.
        """
        if not self._enabled:
            return outputs
        from .._tensor import Tensor

        def apply(value):
            if isinstance(value, Tensor):
                if self._scale is None:
                    self._lazy_init(value.device)
                return value * self._scale.to(device=value.device)
            if isinstance(value, (list, tuple)):
                return type(value)(apply(v) for v in value)
            if hasattr(value, "__iter__"):
                return map(apply, value)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16: bool) -> dict:
        """Multiply every gradient by ``inv_scale`` in place; {device: found_inf (1.0 or 0.0)}."""
        found = {}
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    grad = param.grad
                    if not allow_fp16 and grad.dtype is float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    device = grad.device
                    if device not in found:
                        found[device] = creation.zeros((), dtype=float32, device=device)
                    if not bool(grad.isfinite().all()):
                        found[device].fill_(1.0)
                    grad.mul_(inv_scale.to(device=device))
        return found

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale (once per ``update``), recording
        whether any is inf/NaN; call it before clipping gradients.

        Raises:
            RuntimeError: called twice before ``update()``, or after ``step()``.
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done) and run ``optimizer.step(*args, **kwargs)`` unless a
        gradient was inf/NaN; returns the step's return value, or None when skipped.

        Raises:
            RuntimeError: a ``closure`` keyword, or a second step before ``update()``.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            result = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration: ``new_scale`` if given, else backed off
        after an inf/NaN, grown after ``growth_interval`` clean steps (if still finite).

        Raises:
            AssertionError: no inf checks since the last update; a ``new_scale`` tensor
                with more than one element, on another device type, or requiring grad.
        """
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                          "with requires_grad=False.")
                if new_scale.device.type != self._device or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                scale.copy_(new_scale)
        else:
            found = [f for state in self._per_optimizer_states.values() for f in state["found_inf_per_device"].values()]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if sum(f.item() for f in found) > 0:
                scale.mul_(self._backoff_factor)
                tracker.fill_(0)
            elif int(tracker.item()) + 1 == self._growth_interval:
                grown = scale * self._growth_factor
                if bool(grown.isfinite()):
                    scale.copy_(grown)
                tracker.fill_(0)
            else:
                tracker.add_(1)
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else self._scale.item()
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """{'scale', 'growth_factor', 'backoff_factor', 'growth_interval', '_growth_tracker'};
        empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Raises RuntimeError for an empty state dict (saved from a disabled scaler)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
