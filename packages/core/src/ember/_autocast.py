"""Autocast's per-thread state, the marker through which an op takes part, and the mode
that casts on the dispatch seam.

An op opts in with ``@autocast_op(policy)``, which registers the policy with the op (and
leaves the function as it is). While autocast is enabled on a thread, a mode on the
dispatch seam (``ops._dispatch``) intercepts the marked ops, and their floating-point
tensor arguments on the region's device type (float64 excepted) are cast before they run:

- ``"lower"``: to the region's dtype (bfloat16 or float16): matrix products, convolutions;
- ``"fp32"``: to float32: losses, reductions and decompositions that need the range;
- ``"promote"``: to the widest floating dtype among them (stack, index_copy).

Casts of leaf tensors that require grad (the weights) are cached until the outermost
region exits, so a weight used by many ops is cast once. The lists of ops follow torch's
CPU autocast op reference: https://pytorch.org/docs/stable/amp.html#cpu-op-specific-behavior
"""

from __future__ import annotations

import threading

from . import _dtype as D
from .ops import _dispatch

__all__ = ["autocast_op", "cast_inputs"]

# ipu and xla hold state only (torch's deprecated spellings set and read it); ember has no
# tensors on them, so nothing is ever cast there
DEFAULT_DTYPES = {"cpu": D.bfloat16, "cuda": D.float16, "ipu": D.float16, "xla": D.bfloat16}


class _State(threading.local):
    """Per thread: enabled flag and dtype per device type, nesting depth, the cast cache."""

    def __init__(self):
        self.enabled = dict.fromkeys(DEFAULT_DTYPES, False)
        self.dtype = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}
        self.any_enabled = False
        self.mode = None  # the seam mode, entered while any device type is enabled


state = _State()


def set_enabled(device_type: str, enabled: bool) -> None:
    state.enabled[device_type] = bool(enabled)
    state.any_enabled = any(state.enabled.values())
    if state.any_enabled and state.mode is None:
        state.mode = _AutocastMode().__enter__()
    elif not state.any_enabled and state.mode is not None:
        state.mode.__exit__(None, None, None)
        state.mode = None


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
    """Mark an op for autocast: inside autocast regions its inputs are cast by ``policy``
    ('lower', 'fp32' or 'promote'). The op itself is returned unchanged: outside a region
    nothing stands between a caller and it."""
    if policy not in ("lower", "fp32", "promote"):
        raise ValueError(f"unknown autocast policy {policy!r}")

    def mark(fn):
        return _dispatch.register(fn, autocast=policy)
    return mark


class _AutocastMode(_dispatch.Mode):
    """Casts the arguments of the marked ops; calls with an explicit ``out=`` or ``dtype=``
    are not eligible (torch's rule)."""

    _cache = (-1, frozenset())

    def entries(self):
        version, entries = _AutocastMode._cache
        if version != _dispatch.version():
            entries = frozenset(e for e in _dispatch.registered() if "autocast" in e.meta)
            _AutocastMode._cache = (_dispatch.version(), entries)
        return entries

    def __ember_op__(self, op, args, kwargs, proceed):
        if kwargs.get("out") is None and kwargs.get("dtype") is None:
            args, kwargs = _cast_args(op.meta["autocast"], args, kwargs)
        return proceed(args, kwargs)
