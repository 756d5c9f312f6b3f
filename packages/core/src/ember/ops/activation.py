"""Activations, dropout and the dense layer (torch.nn.functional.gelu, silu, leaky_relu,
elu, softplus, dropout, dropout2d, linear).  relu, tanh, sigmoid, softmax and log_softmax
live with the elementwise ops and reductions."""

from __future__ import annotations

import math

from .._tensor import Tensor, _make
from ._helpers import be, check_same_device, needs_grad, record

__all__ = ["gelu", "silu", "leaky_relu", "elu", "softplus", "dropout", "dropout2d", "linear"]

_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


def gelu(input, approximate="none"):
    """Gaussian error linear unit ``x * Phi(x)`` (``approximate='none'``, through erf) or
    its tanh approximation ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``
    (torch.nn.functional.gelu)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"GeluKernelImpl\" not implemented for '{_long(input.dtype)}'")
    xp = be(input).xp
    x = input._data
    if approximate == "tanh":
        arr = 0.5 * x * (1 + xp.tanh(_SQRT_2_PI * (x + 0.044715 * x * x * x)))
    else:
        arr = 0.5 * x * (1 + be(input).special.erf(x * _INV_SQRT2))
    r = _make(arr.astype(x.dtype, copy=False), input.dtype)
    if needs_grad(input):
        record("GeluBackward0", _gelu_rule, (input,), r, (input, approximate))
    return r


def _gelu_rule(g, x, approximate):
    from .elementwise import erf, exp, tanh
    if approximate == "tanh":
        inner = _SQRT_2_PI * (x + 0.044715 * x * x * x)
        t = tanh(inner)
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _SQRT_2_PI * (1 + 3 * 0.044715 * x * x))
    cdf = 0.5 * (1 + erf(x * _INV_SQRT2))
    pdf = exp(x * x * -0.5) * (1.0 / math.sqrt(2 * math.pi))
    return g * (cdf + x * pdf)


def silu(input, inplace=False):
    """``x * sigmoid(x)`` (torch.nn.functional.silu)."""
    from .elementwise import sigmoid
    return input * sigmoid(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""
    from .elementwise import where
    return where(input > 0, input, input * negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    from .elementwise import expm1, where
    return where(input > 0, input, expm1(input.clamp(max=0)) * alpha)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta x)) / beta``, linear where ``beta x > threshold``."""
    from .elementwise import exp, log1p, relu, where
    bx = input * beta
    soft = (log1p(exp(-bx.abs())) + relu(bx)) / beta
    return where(bx > threshold, input, soft)


# ---- dropout -----------------------------------------------------------------------

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _mask_dropout(input, p, mask_shape, name):
    from ..random import default_generator
    xp = be(input).xp
    x = input._data
    if p == 1.0:
        scaled = xp.zeros(mask_shape, dtype=x.dtype)
    else:
        gen = default_generator(input.device).bit_generator
        keep = gen.random(mask_shape, dtype=xp.float32) >= p
        scaled = keep.astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p))
    r = _make(x * scaled, input.dtype)
    if needs_grad(input):
        record(name, _dropout_rule, (input,), r, (_make(scaled, input.dtype),))
    return r


def _dropout_rule(g, scaled):
    return g * scaled


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` (drawn from the default generator) and
    scale the rest by ``1/(1-p)``; the identity when not ``training``
    (torch.nn.functional.dropout)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_long(input.dtype)}")
    r = _mask_dropout(input, p, input._data.shape, "MulBackward0")
    return _write_back(input, r) if inplace else r


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels: input ``[N, C, H, W]`` (or ``[C, H, W]``), each channel kept with
    probability ``1-p`` and scaled by ``1/(1-p)`` (torch.nn.functional.dropout2d)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    shape = input._data.shape
    if input.ndim == 4:
        mshape = shape[:2] + (1, 1)
    elif input.ndim == 3:
        mshape = shape[:1] + (1, 1)
    else:
        mshape = shape[:2] + (1,) * max(0, input.ndim - 2)
    r = _mask_dropout(input, p, mshape, "MulBackward0")
    return _write_back(input, r) if inplace else r


def _write_back(input, r):
    from ._helpers import check_inplace, commit
    check_inplace(input)
    return commit(input, r)


# ---- dense layer -------------------------------------------------------------------

def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` as one node: input ``[*, in]``, weight ``[out, in]``,
    bias ``[out]``; returns ``[*, out]`` (torch.nn.functional.linear)."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"linear(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim == 0 or weight.ndim not in (1, 2):
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {input.ndim}D and "
                           f"{weight.ndim}D")
    x, w = input._data, weight._data
    if weight.ndim == 1 or input.ndim == 1:
        from .linalg import matmul
        out = matmul(input, weight.t() if weight.ndim == 2 else weight)
        return out + bias if bias is not None else out
    if x.shape[-1] != w.shape[1]:
        rows = 1
        for s in x.shape[:-1]:
            rows *= s
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} and "
                           f"{w.shape[1]}x{w.shape[0]})")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_long(input.dtype)} and "
                           f"{_long(weight.dtype)}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_long(input.dtype)} != "
                           f"{_long(bias.dtype)}")
    check_same_device(input, weight, "linear")
    xp = be(input).xp
    arr = xp.matmul(x, w.T)
    if bias is not None:
        arr += bias._data
    r = _make(arr, input.dtype)
    if needs_grad(input, weight, bias):
        record("AddmmBackward0" if input.ndim == 2 else "LinearBackward0", _linear_rule, (input, weight, bias), r,
               (input, weight, bias is not None and bias._requires_grad))
    return r


def _linear_rule(g, x, w, bias_req):
    from .linalg import matmul
    from .reduction import sum as _sum
    gx = matmul(g, w) if x._requires_grad else None
    gw = gb = None
    if w._requires_grad:
        g2 = g.reshape(-1, g.shape[-1]) if g.ndim != 2 else g
        x2 = x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x
        gw = matmul(g2.t(), x2)
    if bias_req:
        gb = _sum(g, tuple(range(g.ndim - 1))) if g.ndim > 1 else g
    return gx, gw, gb


def _long(d):
    from ._helpers import _type_name
    return _type_name(d)



