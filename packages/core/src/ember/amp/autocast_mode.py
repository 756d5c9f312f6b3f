"""ember.autocast: regions where chosen ops run in a lower-precision dtype.

Inside ``with ember.autocast(device_type="cpu", dtype=ember.bfloat16):`` matrix products
and convolutions take bfloat16 (or float16) inputs, losses and decompositions float32,
and the other ops run in the dtypes their inputs have (see ``ember._autocast`` for the
op lists). Backward needs no region: the gradients of the casts bring each gradient back
to its parameter's dtype. Regions nest; ``enabled=False`` switches autocast off inside.
Source: https://pytorch.org/docs/stable/amp.html
"""

from __future__ import annotations

import functools
import warnings

from .. import _autocast
from .. import _dtype as D

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_DEVICE_TYPES = ("cpu", "cuda")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast runs on ``device_type`` ('cpu' and 'cuda')."""
    return device_type in _DEVICE_TYPES


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if not is_autocast_available(device_type):
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")


class autocast:
    """Context manager and decorator: autocast(device_type, dtype=None, enabled=True,
    cache_enabled=None).

    Args:
        device_type (str): 'cpu' or 'cuda'; only tensors on that device type are cast.
        dtype: the lower-precision dtype, bfloat16 or float16 (default: bfloat16 on the
            CPU, float16 on CUDA, or what ``set_autocast_dtype`` chose).
        enabled (bool): False switches autocast off inside the region.
        cache_enabled (bool): cache the casts of weights within the region (default:
            ``is_autocast_cache_enabled()``).

    Raises:
        ValueError: ``device_type`` is not a string.
        RuntimeError: an unsupported ``device_type``; bfloat16 on 'cuda' where
            ``ember.cuda.is_bf16_supported()`` is False.

    Warns (UserWarning, and disables itself): a dtype other than bfloat16/float16, or
    'cuda' when CUDA is not available.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        _check_device_type(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else D.to_dtype(dtype)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if device_type == "cuda":
                from .. import cuda
                if not cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                    enabled = False
                elif self.fast_dtype == D.bfloat16 and not cuda.is_bf16_supported():
                    raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype to float16.")
            elif self.fast_dtype not in (D.bfloat16, D.float16):
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of ember.bfloat16, ember.float16 currently.",
                              stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        state = _autocast.state
        self.prev_cache_enabled = state.cache_enabled
        self.prev = state.enabled[self.device]
        self.prev_fastdtype = state.dtype[self.device]
        _autocast.set_enabled(self.device, self._enabled)
        state.dtype[self.device] = self.fast_dtype
        state.nesting += 1
        state.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        state = _autocast.state
        state.nesting -= 1
        if state.nesting == 0:
            state.cache.clear()
        _autocast.set_enabled(self.device, self.prev)
        state.dtype[self.device] = self.prev_fastdtype
        state.cache_enabled = self.prev_cache_enabled
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to "
                            "use autocast as a context manager? For example:\n"
                            "    with ember.autocast(device_type=...):\n"
                            "        output = model(input)")

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorated


# ---- the state functions of torch's top level ------------------------------------------

def _check_bool(name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool (got {type(value).__name__})")


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (default 'cuda', as torch) in this thread.

    Raises:
        TypeError: ``device_type`` is not a str.
    """
    if device_type is not None and not isinstance(device_type, str):
        raise TypeError(f"is_autocast_enabled(): argument 'device_type' (position 1) must be str, not "
                        f"{type(device_type).__name__}")
    return _autocast.state.enabled.get(device_type or "cuda", False)


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Switch autocast on or off for ``device_type`` in this thread; torch's older
    one-argument form ``set_autocast_enabled(enabled)`` means 'cuda'.

    Raises:
        TypeError: ``enabled`` is not a bool.
        RuntimeError: an unsupported ``device_type``.
    """
    if enabled is None and isinstance(device_type, bool):
        device_type, enabled = "cuda", device_type
    _check_device_type(device_type)
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
                        f"{type(enabled).__name__}")
    _autocast.set_enabled(device_type, enabled)


def get_autocast_dtype(device_type: str):
    """The dtype autocast regions on ``device_type`` cast to (bfloat16 for 'cpu', float16 for 'cuda')."""
    _check_device_type(device_type)
    return _autocast.state.dtype[device_type]


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Choose the dtype autocast regions on ``device_type`` cast to.

    Raises:
        TypeError: ``dtype`` is not a dtype object.
        RuntimeError: an unsupported ``device_type``.
    """
    _check_device_type(device_type)
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be ember.dtype, not "
                        f"{type(dtype).__name__}")
    _autocast.state.dtype[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether autocast keeps the casts of leaf tensors for reuse inside a region (True by
    default) (torch.is_autocast_cache_enabled)."""
    return _autocast.state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn autocast's cast cache on or off with the bool ``enabled`` (TypeError otherwise)
    (torch.set_autocast_cache_enabled)."""
    _check_bool("enabled", enabled)
    _autocast.state.cache_enabled = enabled


def clear_autocast_cache() -> None:
    """Drop every cast autocast has cached (torch.clear_autocast_cache; ``autocast`` does it on
    leaving its outermost region)."""
    _autocast.state.cache.clear()


def autocast_increment_nesting() -> int:
    """Count one more autocast region entered and return the new depth
    (torch.autocast_increment_nesting)."""
    _autocast.state.nesting += 1
    return _autocast.state.nesting


def autocast_decrement_nesting() -> int:
    """Count one autocast region left and return the new depth
    (torch.autocast_decrement_nesting)."""
    _autocast.state.nesting -= 1
    return _autocast.state.nesting


# ---- custom autograd Functions -----------------------------------------------------------

def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate a custom Function's ``forward``. Without ``cast_inputs`` it runs under the
    surrounding autocast state, which ``custom_bwd`` then restores for backward. With
    ``cast_inputs`` (a dtype), inside an enabled region its floating inputs are cast to
    it and forward and backward both run with autocast off.

    Raises:
        ValueError: ``device_type`` is not a string.

    ``fwd`` is the forward decorated (None when called with keywords only, as
    ``@custom_fwd(device_type="cuda")``)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorated(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        target = D.to_dtype(cast_inputs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast_floating(args, device_type, target), **_cast_floating(kwargs, device_type, target))
    return decorated


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate a custom Function's ``backward`` to run under the autocast state its
    forward ran with (see ``custom_fwd``).

    ``bwd`` is the backward decorated (None when called with keywords only); ``device_type``
    (a string; ValueError otherwise) is the autocast device whose state is restored."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorated(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorated


def _cast_floating(value, device_type: str, dtype):
    from .._tensor import Tensor
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not D.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, dict):
        return {k: _cast_floating(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floating(v, device_type, dtype) for v in value)
    return value
