"""Grad mode, kept per thread (a server runs requests on threads)."""

from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled"]


class _GradState(threading.local):
    enabled = True
    inference = False


STATE = _GradState()


def is_grad_enabled() -> bool:
    """Whether operations on this thread record the graph for autograd (False inside
    ``no_grad`` and ``inference_mode``) (torch.is_grad_enabled)."""
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    """Whether ``inference_mode`` is on for this thread (torch.is_inference_mode_enabled)."""
    return STATE.inference


def _set_grad_mode(enabled: bool, inference: bool) -> None:
    """Set this thread's grad and inference modes at once: the step a compiled graph takes
    where the recorded program entered or left ``no_grad``/``inference_mode`` (torch's
    graphs hold ``_set_grad_enabled`` calls for the same purpose)."""
    if inference != STATE.inference:
        from .._tensor import inference_tensors
        inference_tensors(inference)
        STATE.inference = inference
    STATE.enabled = enabled


class _Mode:
    """Base of the grad-mode context managers; each also works as a decorator."""

    def _target(self) -> bool:
        raise NotImplementedError

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._target()
        return self

    def __exit__(self, *exc):
        STATE.enabled = self._prev

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class no_grad(_Mode):
    """Context manager / decorator that disables gradient recording."""

    def _target(self) -> bool:
        return False


class enable_grad(_Mode):
    """Context manager / decorator that enables gradient recording."""

    def _target(self) -> bool:
        return True


class set_grad_enabled(_Mode):
    """Sets grad mode to ``mode`` at once; also a context manager restoring the previous mode."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = STATE.enabled
        STATE.enabled = self.mode

    def _target(self) -> bool:
        return self.mode

    def clone(self):
        return set_grad_enabled(self.mode)

    def __enter__(self):
        return self


class inference_mode(_Mode):
    """no_grad whose tensors are *inference tensors* (``Tensor.is_inference()``), as torch's:
    outside inference mode they cannot be updated in place, require grad, or be saved for
    backward (clone one to get a normal tensor). ``mode=False`` leaves the mode for its
    block: tensors made there are normal."""

    def __init__(self, mode: bool = True):
        self.mode = mode

    def _target(self) -> bool:
        return STATE.enabled if not self.mode else False

    def clone(self):
        return inference_mode(self.mode)

    def __enter__(self):
        from .._tensor import inference_tensors
        self._prev_inf = STATE.inference
        STATE.inference = self.mode
        inference_tensors(True)
        return super().__enter__()

    def __exit__(self, *exc):
        from .._tensor import inference_tensors
        STATE.inference = self._prev_inf
        inference_tensors(False)
        super().__exit__(*exc)
