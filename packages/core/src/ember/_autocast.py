"""Autocast's per-thread state and the decorator through which an op takes part.

An op opts in with ``@autocast_op(policy)``: inside an enabled ``ember.autocast`` region,
its floating-point tensor arguments on the region's device type (float64 excepted) are
cast before it runs:

- ``"lower"``: to the region's dtype (bfloat16 or float16): matrix products, convolutions;
- ``"fp32"``: to float32: losses, reductions and decompositions that need the range;
- ``"promote"``: to the widest floating dtype among them (stack, index_copy).

Casts of leaf tensors that require grad (the weights) are cached until the outermost
region exits, so a weight used by many ops is cast once. The lists of ops follow torch's
CPU autocast op reference: https://pytorch.org/docs/stable/amp.html#cpu-op-specific-behavior
"""

from __future__ import annotations

import functools
import threading

from . import _dtype as D

__all__ = ["autocast_op", "cast_inputs"]

DEFAULT_DTYPES = {"cpu": D.bfloat16, "cuda": D.float16}


class _State(threading.local):
    """Per thread: enabled flag and dtype per device type, nesting depth, the cast cache."""

    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}
        self.any_enabled = False


state = _State()


def set_enabled(device_type: str, enabled: bool) -> None:
    state.enabled[device_type] = bool(enabled)
    state.any_enabled = any(state.enabled.values())


def _target(policy: str, device_type: str, tensors: list):
    if policy == "lower":
        return state.dtype[device_type]
    if policy == "fp32":
        return D.float32
    widest = tensors[0].dtype  # "promote": the dtype all eligible tensors promote to
    for t in tensors[1:]:
        widest = D.promote_types(widest, t.dtype)
    return widest


def _cast_one(t, dtype):
    if t.dtype is dtype:
        return t
    if state.cache_enabled and t.requires_grad and t.grad_fn is None:
        hit = state.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1].dtype is dtype:
            return hit[1]
        out = t.to(dtype)
        state.cache[id(t)] = (t, out)  # the leaf is held, so its id stays unique
        return out
    return t.to(dtype)


def _cast_args(policy: str, args: tuple, kwargs: dict):
    from ._tensor import Tensor

    device_type = None
    eligible = []

    def collect(value):
        nonlocal device_type
        if isinstance(value, Tensor):
            if device_type is None:
                device_type = value.device.type
            if value.dtype.is_floating_point and value.dtype is not D.float64 \
                    and value.device.type == device_type:
                eligible.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                collect(v)

    for a in args:
        collect(a)
    for a in kwargs.values():
        collect(a)
    if device_type is None or not state.enabled.get(device_type) or not eligible:
        return args, kwargs
    dtype = _target(policy, device_type, eligible)
    ids = {id(t) for t in eligible}

    def cast(value):
        if isinstance(value, Tensor):
            return _cast_one(value, dtype) if id(value) in ids else value
        if isinstance(value, (list, tuple)) and any(isinstance(v, (Tensor, list, tuple)) for v in value):
            return type(value)(cast(v) for v in value)
        return value

    return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}


def cast_inputs(policy: str, *tensors) -> tuple:
    """``tensors`` as an op under ``policy`` sees them: for ops whose policy depends on
    their arguments (torch casts F.pad's reflect and replicate kernels, not the others)."""
    if not state.any_enabled:
        return tensors
    return _cast_args(policy, tensors, {})[0]


def autocast_op(policy: str):
    """Decorate an op so that autocast regions cast its inputs by ``policy``
    ('lower', 'fp32' or 'promote'). Outside a region the cost is one flag test."""
    if policy not in ("lower", "fp32", "promote"):
        raise ValueError(f"unknown autocast policy {policy!r}")

    def decorate(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if state.any_enabled and kwargs.get("out") is None and kwargs.get("dtype") is None:
                # explicit out= or dtype= calls are not eligible (torch's rule)
                args, kwargs = _cast_args(policy, args, kwargs)
            return fn(*args, **kwargs)
        op.__wrapped_autocast_policy__ = policy
        return op
    return decorate
