"""Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly).

While it is on, every recorded node keeps the stack of the forward call that made it
(``node.metadata["traceback_"]``), and backward checks each gradient a node returns: the
first one holding NaN raises RuntimeError naming the node, after a warning that shows the
forward call responsible.  It slows every op, as in torch: a debugging tool.
"""

from __future__ import annotations

import traceback
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "set_anomaly_enabled", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


class _Anomaly:
    enabled = False
    check_nan = True


STATE = _Anomaly()


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (torch.is_anomaly_enabled): then each graph node keeps
    the stack of the forward call that made it, named when its backward fails."""
    return STATE.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks every gradient for NaN
    (torch.is_anomaly_check_nan_enabled; True by default)."""
    return STATE.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off (torch.set_anomaly_enabled, a plain function).

    Raises:
        TypeError: ``enabled`` or ``check_nan`` is not a bool.
    """
    for name, value in (("enabled", enabled), ("check_nan", check_nan)):
        if not isinstance(value, bool):
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' must be bool, not {type(value).__name__}")
    STATE.enabled, STATE.check_nan = enabled, check_nan


class set_detect_anomaly:
    """Turn anomaly detection on or off, as a function call or a context manager that restores
    the previous state on exit (torch.autograd.set_detect_anomaly): ``mode`` turns it on or
    off, ``check_nan`` makes backward raise RuntimeError for a gradient holding NaN."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (STATE.enabled, STATE.check_nan)
        STATE.enabled, STATE.check_nan = bool(mode), bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        STATE.enabled, STATE.check_nan = self._prev


class detect_anomaly:
    """A context manager (and decorator) that turns anomaly detection on inside it, with a
    UserWarning that it slows the program down (torch.autograd.detect_anomaly);
    ``check_nan`` makes backward raise RuntimeError for a gradient holding NaN."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self._prev = (STATE.enabled, STATE.check_nan)
        STATE.enabled, STATE.check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        STATE.enabled, STATE.check_nan = self._prev

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


def remember_forward(node) -> None:
    """Keep the forward call's stack on ``node`` (called by ``record`` when enabled)."""
    node.metadata["traceback_"] = traceback.format_stack()[:-2]  # without record's frames


def check_gradients(node, results) -> None:
    """RuntimeError when a gradient ``node`` returned holds NaN (called by the engine)."""
    if not STATE.check_nan:
        return
    for i, g in enumerate(results):
        if g is None:
            continue
        data = getattr(g, "_data", g)
        if data.dtype.kind in "fc" and bool((data != data).any()):
            stack = node.metadata.get("traceback_") if node._hooks is not None else None
            if stack:
                warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                              + "".join(stack), UserWarning, stacklevel=2)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
