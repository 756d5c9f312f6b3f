"""Activation kernels: one pass forward, one pass backward, split over ember's threads.

Each activation has a forward ``f(x, *params)`` and a backward ``f_grad(g, saved,
*params)`` on numpy float32/float64 arrays (the caller checked ``kernels.accepts``);
results keep the input's shape, dtype and memory layout.  ``saved`` is the input, or the
result where the op's gradient is written in it (sigmoid, tanh, relu).  A gradient
that is a broadcast scalar (the gradient of ``y.sum()``) is read once, not expanded.

The formulas are torch's (aten's activation kernels); where torch composes tanh, log1p
and exp (mish), an algebraic form of the same function is used:
``tanh(log1p(e)) = n / (n + 2)`` with ``n = e (e + 2)``, ``e = exp(x)``.

Each kernel first slices its arrays to ``[start, stop)`` and loops from 0: an index that
cannot be negative needs no wrap-around, and the loop becomes SIMD loads and stores
(indexing ``x[i]`` for ``i`` in ``range(start, stop)`` gathers element by element, at half
the speed).  ``contract`` lets LLVM fuse multiply-adds.
"""

from __future__ import annotations

import math

import numpy
from numba import types
from numba.extending import overload, register_jitable

from . import _math as M
from ._runtime import PARALLEL_MIN_WORK, dense_order, jit, parallel_for

__all__ = ["gelu", "gelu_grad", "silu", "silu_grad", "mish", "mish_grad", "elu", "elu_grad", "softplus",
           "softplus_grad", "sigmoid", "sigmoid_grad", "tanh", "tanh_grad", "hardswish", "hardswish_grad",
           "hardsigmoid", "hardsigmoid_grad", "leaky_relu", "leaky_relu_grad", "relu", "relu_grad"]


def _c(v, like):
    """The constant ``v`` in ``like``'s float type (a float64 literal would promote a
    float32 loop to float64)."""
    return v


@overload(_c)
def _c_impl(v, like):
    if like == types.float32:
        return lambda v, like: numpy.float32(v)
    return lambda v, like: numpy.float64(v)


_SQRT_HALF = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715
_SIXTH_F32 = float(numpy.float32(1 / 6))  # torch's hardsigmoid gradient, in every dtype


# ---- derivatives (dy/dx at one element) ---------------------------------------------

# erfcx(z) / t = erfc(z) exp(z^2) / t with t = 1 / (1 + z/2), z >= 0, as a polynomial in t
# on [0.17, 1] (z up to 9.8: past 9.3 exp(-z^2) is 0 in float32): a reweighted least-squares
# fit to scipy.special.erfcx, relative error 4.3e-8, below float32's rounding of its Horner
# sum (2e-7; degree 10 was no more accurate in float32).
# erfc(z) = t Q(t) exp(-z^2) then costs one exp, and GELU's backward reuses that exp for
# the Gaussian density (Numerical Recipes' erfcc needs a second one).
_Q = (0.2820870905462564, 0.2823633029774607, 0.2431927927909857, 0.20232743875806403, -0.025758533649233733,
      0.2767823062559626, -0.48605389014330685, 0.28401048744429314, -0.05895103667459869)
# exp(r) on |r| <= ln2 / 2 as a degree-5 polynomial fitted the same way: relative error 7.5e-8
_E = (1.0000000721373017, 0.9999996910552544, 0.4999889069260355, 0.16667574556707274, 0.04191578583172156,
      0.008297821398546219)
_f = numpy.float32


_LOG2E = _f(1.4426950408889634)
_LN2_HI = _f(0.693145751953125)  # n * _LN2_HI is exact for the n that occur
_LN2_LO = _f(1.4286068203094172e-06)


@register_jitable(inline="always")
def _exp_nonpositive_f32(x):
    # _math.exp's float32 form for x <= 0 only (here -z^2): without its overflow and NaN
    # selects (a NaN z makes t NaN anyway) and with 2^n as one factor, 14% off GELU's time
    v = max(x, _f(-87.33654))
    n = numpy.floor(v * _LOG2E + _f(0.5))
    r = v - n * _LN2_HI - n * _LN2_LO
    r2 = r * r
    p = (_f(_E[0]) + r * _f(_E[1])) + r2 * ((_f(_E[2]) + r * _f(_E[3])) + r2 * (_f(_E[4]) + r * _f(_E[5])))
    i32 = numpy.int32
    y = p * i32((i32(n) + i32(127)) << i32(23)).view(numpy.float32)
    return _f(0.0) if x < _f(-87.33654) else y


@register_jitable(inline="always")
def _erfc_gauss_f32(z):
    a = abs(z)
    t = _f(1.0) / (_f(1.0) + _f(0.5) * a)
    t2 = t * t
    t4 = t2 * t2
    t8 = t4 * t4
    # Estrin's scheme: a shorter dependency chain than Horner's
    q = ((_f(_Q[0]) + t * _f(_Q[1])) + t2 * (_f(_Q[2]) + t * _f(_Q[3]))
         + t4 * ((_f(_Q[4]) + t * _f(_Q[5])) + t2 * (_f(_Q[6]) + t * _f(_Q[7])))
         + t8 * _f(_Q[8]))
    gauss = _exp_nonpositive_f32(-a * a)
    r = t * q * gauss
    return (r if z >= _f(0.0) else _f(2.0) - r), gauss


def _erfc_gauss(z):
    """(erfc(z), exp(-z^2))."""
    return math.erfc(z), math.exp(-z * z)


@overload(_erfc_gauss)
def _erfc_gauss_impl(z):
    if z == types.float32:
        return lambda z: _erfc_gauss_f32(z)
    return lambda z: (math.erfc(z), math.exp(-z * z))


@register_jitable(inline="always")
def _gelu(v):
    e, gauss = _erfc_gauss(v * _c(-_SQRT_HALF, v))
    return _c(0.5, v) * v * e


@register_jitable(inline="always")
def _gelu_d(v):
    e, gauss = _erfc_gauss(v * _c(-_SQRT_HALF, v))
    return _c(0.5, v) * e + v * _c(_INV_SQRT_2PI, v) * gauss


@register_jitable(inline="always")
def _gelu_tanh_d(v):
    t = M.tanh(_c(_SQRT_2_PI, v) * (v + _c(_KAPPA, v) * v * v * v))
    inner_d = _c(_SQRT_2_PI, v) * (_c(1.0, v) + _c(3 * _KAPPA, v) * v * v)
    return _c(0.5, v) * (_c(1.0, v) + t) + _c(0.5, v) * v * (_c(1.0, v) - t * t) * inner_d


@register_jitable(inline="always")
def _silu_d(v):
    s = M.sigmoid(v)
    return s * (_c(1.0, v) + v * (_c(1.0, v) - s))


@register_jitable(inline="always")
def _mish_parts(v):
    # e^40 squared stays finite in float32; past 40 both t and s are 1 in either precision
    e = M.exp(min(v, _c(40.0, v)))
    n = e * (e + _c(2.0, v))
    return e, n, n / (n + _c(2.0, v))


@register_jitable(inline="always")
def _mish_d(v):
    e, n, t = _mish_parts(v)
    s = e / (e + _c(1.0, v))
    m = n + _c(2.0, v)
    return t + v * s * (_c(4.0, v) * (n + _c(1.0, v)) / (m * m))  # 1 - t^2 without cancellation


# ---- forwards ----------------------------------------------------------------------------

@jit(fastmath={"contract"})
def _gelu_f(start, stop, x, out):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        out[i] = _gelu(x[i])


@jit(fastmath={"contract"})
def _gelu_tanh_f(start, stop, x, out):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        v = x[i]
        t = M.tanh(_c(_SQRT_2_PI, v) * (v + _c(_KAPPA, v) * v * v * v))
        out[i] = _c(0.5, v) * v * (_c(1.0, v) + t)


@jit(fastmath={"contract"})
def _silu_f(start, stop, x, out):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        v = x[i]
        out[i] = v * M.sigmoid(v)


@jit(fastmath={"contract"})
def _mish_f(start, stop, x, out):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        v = x[i]
        e, n, t = _mish_parts(v)
        out[i] = v * t


@jit(fastmath={"contract"})
def _elu_f(start, stop, x, out, alpha, scale, input_scale):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        v = x[i]
        neg = scale * alpha * M.expm1(min(v, _c(0.0, v)) * input_scale)
        out[i] = scale * v if v > _c(0.0, v) else neg


@jit(fastmath={"contract"})
def _softplus_f(start, stop, x, out, beta, threshold):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        v = x[i]
        bv = v * beta
        soft = M.log1p(M.exp(bv)) / beta
        out[i] = v if bv > threshold else soft


@jit(fastmath={"contract"})
def _sigmoid_f(start, stop, x, out):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        out[i] = M.sigmoid(x[i])


@jit(fastmath={"contract"})
def _tanh_f(start, stop, x, out):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        out[i] = M.tanh(x[i])


@jit(fastmath={"contract"})
def _hardswish_f(start, stop, x, out):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        v = x[i]
        out[i] = v * min(max(v + _c(3.0, v), _c(0.0, v)), _c(6.0, v)) * _c(1 / 6, v)


@jit(fastmath={"contract"})
def _hardsigmoid_f(start, stop, x, out):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        v = x[i]
        out[i] = min(max(v + _c(3.0, v), _c(0.0, v)), _c(6.0, v)) * _c(1 / 6, v)


@jit(fastmath={"contract"})
def _leaky_relu_f(start, stop, x, out, slope):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        v = x[i]
        out[i] = v if v > _c(0.0, v) else v * slope


@jit(fastmath={"contract"})
def _relu_f(start, stop, x, out):
    x, out = x[start:stop], out[start:stop]
    for i in range(stop - start):
        v = x[i]
        out[i] = _c(0.0, v) if v < _c(0.0, v) else v  # NaN and -0.0 pass through, as torch's


# ---- backwards: ``g`` is the gradient, or its one value when ``scalar`` ----------------------

@jit(fastmath={"contract"})
def _gelu_b(start, stop, g, scalar, x, out):
    x, out = x[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            out[i] = g0 * _gelu_d(x[i])
    else:
        g = g[start:stop]
        for i in range(stop - start):
            out[i] = g[i] * _gelu_d(x[i])


@jit(fastmath={"contract"})
def _gelu_tanh_b(start, stop, g, scalar, x, out):
    x, out = x[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            out[i] = g0 * _gelu_tanh_d(x[i])
    else:
        g = g[start:stop]
        for i in range(stop - start):
            out[i] = g[i] * _gelu_tanh_d(x[i])


@jit(fastmath={"contract"})
def _silu_b(start, stop, g, scalar, x, out):
    x, out = x[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            out[i] = g0 * _silu_d(x[i])
    else:
        g = g[start:stop]
        for i in range(stop - start):
            out[i] = g[i] * _silu_d(x[i])


@jit(fastmath={"contract"})
def _mish_b(start, stop, g, scalar, x, out):
    x, out = x[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            out[i] = g0 * _mish_d(x[i])
    else:
        g = g[start:stop]
        for i in range(stop - start):
            out[i] = g[i] * _mish_d(x[i])


@jit(fastmath={"contract"})
def _elu_b(start, stop, g, scalar, x, out, alpha, scale, input_scale):
    x, out = x[start:stop], out[start:stop]
    neg = scale * alpha * input_scale
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            v = x[i]
            d = neg * M.exp(min(v, _c(0.0, v)) * input_scale)
            out[i] = g0 * (scale if v > _c(0.0, v) else d)
    else:
        g = g[start:stop]
        for i in range(stop - start):
            v = x[i]
            d = neg * M.exp(min(v, _c(0.0, v)) * input_scale)
            out[i] = g[i] * (scale if v > _c(0.0, v) else d)


@jit(fastmath={"contract"})
def _softplus_b(start, stop, g, scalar, x, out, beta, threshold):
    x, out = x[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            bv = x[i] * beta
            out[i] = g0 * (_c(1.0, bv) if bv > threshold else M.sigmoid(bv))
    else:
        g = g[start:stop]
        for i in range(stop - start):
            bv = x[i] * beta
            out[i] = g[i] * (_c(1.0, bv) if bv > threshold else M.sigmoid(bv))


@jit(fastmath={"contract"})
def _sigmoid_b(start, stop, g, scalar, y, out):
    y, out = y[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            r = y[i]
            out[i] = g0 * r * (_c(1.0, r) - r)
    else:
        g = g[start:stop]
        for i in range(stop - start):
            r = y[i]
            out[i] = g[i] * r * (_c(1.0, r) - r)


@jit(fastmath={"contract"})
def _tanh_b(start, stop, g, scalar, y, out):
    y, out = y[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            r = y[i]
            out[i] = g0 * (_c(1.0, r) - r * r)
    else:
        g = g[start:stop]
        for i in range(stop - start):
            r = y[i]
            out[i] = g[i] * (_c(1.0, r) - r * r)


@jit(fastmath={"contract"})
def _hardswish_b(start, stop, g, scalar, x, out):
    x, out = x[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            v = x[i]
            mid = g0 * (v * _c(1 / 3, v) + _c(0.5, v))
            out[i] = _c(0.0, v) if v <= _c(-3.0, v) else (mid if v < _c(3.0, v) else g0)
    else:
        g = g[start:stop]
        for i in range(stop - start):
            v = x[i]
            # a select, not a product: a zero gradient region stays 0 where g is inf
            mid = g[i] * (v * _c(1 / 3, v) + _c(0.5, v))
            out[i] = _c(0.0, v) if v <= _c(-3.0, v) else (mid if v < _c(3.0, v) else g[i])


@jit(fastmath={"contract"})
def _hardsigmoid_b(start, stop, g, scalar, x, out):
    x, out = x[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            v = x[i]
            inside = (v > _c(-3.0, v)) & (v < _c(3.0, v))
            out[i] = g0 * _c(_SIXTH_F32, v) if inside else _c(0.0, v)
    else:
        g = g[start:stop]
        for i in range(stop - start):
            v = x[i]
            inside = (v > _c(-3.0, v)) & (v < _c(3.0, v))
            out[i] = g[i] * _c(_SIXTH_F32, v) if inside else _c(0.0, v)


@jit(fastmath={"contract"})
def _leaky_relu_b(start, stop, g, scalar, x, out, slope):
    x, out = x[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            v = x[i]
            out[i] = g0 if v > _c(0.0, v) else g0 * slope
    else:
        g = g[start:stop]
        for i in range(stop - start):
            gi = g[i]
            out[i] = gi if x[i] > _c(0.0, gi) else gi * slope


@jit(fastmath={"contract"})
def _relu_b(start, stop, g, scalar, y, out):
    y, out = y[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            out[i] = _c(0.0, g0) if y[i] <= _c(0.0, g0) else g0  # a NaN passes its gradient, as torch's
    else:
        g = g[start:stop]
        for i in range(stop - start):
            gi = g[i]
            out[i] = _c(0.0, gi) if y[i] <= _c(0.0, gi) else gi


# ---- drivers -----------------------------------------------------------------------------

def _order(x):
    order = dense_order(x)
    if order is None:  # a slice with gaps: worked on as a C-ordered copy
        x = numpy.ascontiguousarray(x)
        order = tuple(range(x.ndim))
    return x, order


def _alloc(x, order):
    """An array of ``x``'s shape, dtype and layout, and its elements as a 1-d view in
    ``x``'s memory order.  A C-ordered result is a fresh array (not a view), which
    AccumulateGrad may take as ``.grad`` without a copy."""
    if order == tuple(range(x.ndim)):
        out = numpy.empty(x.shape, x.dtype)
        return out, out.reshape(-1)
    t = numpy.empty(x.transpose(order).shape, x.dtype)
    return t.transpose(tuple(numpy.argsort(order))), t.reshape(-1)


def _run(kernel, n, *args):
    if n < PARALLEL_MIN_WORK:  # one thread: skip the pool's bookkeeping (microseconds a call)
        kernel(0, n, *args)
    else:
        parallel_for(kernel, n, *args)


def _forward(kernel, x, *params):
    t_ = x.dtype.type
    if x.flags.c_contiguous:
        out = numpy.empty(x.shape, x.dtype)
        _run(kernel, x.size, x.reshape(-1), out.reshape(-1), *[t_(p) for p in params])
        return out
    x, order = _order(x)
    out, of = _alloc(x, order)
    _run(kernel, of.size, x.transpose(order).reshape(-1), of, *[t_(p) for p in params])
    return out


def _backward(kernel, g, saved, *params):
    t_ = saved.dtype.type
    scalar = g.size > 0 and not any(g.strides)  # a broadcast scalar: the gradient of a sum
    if scalar:
        gf = numpy.empty(1, g.dtype)  # writable, so the kernel keeps one signature
        gf[0] = g.reshape(-1)[0]
    if saved.flags.c_contiguous and (scalar or g.flags.c_contiguous):
        out = numpy.empty(saved.shape, saved.dtype)
        _run(kernel, out.size, gf if scalar else g.reshape(-1), scalar, saved.reshape(-1), out.reshape(-1),
             *[t_(p) for p in params])
        return out
    saved, order = _order(saved)
    out, of = _alloc(saved, order)
    if not scalar:
        gt = g.transpose(order)
        gf = (gt if gt.flags.c_contiguous else numpy.ascontiguousarray(gt)).reshape(-1)
    _run(kernel, of.size, gf, scalar, saved.transpose(order).reshape(-1), of, *[t_(p) for p in params])
    return out


def gelu(x, approximate="none"):
    """GELU, exact (``'none'``) or its tanh form."""
    return _forward(_gelu_tanh_f if approximate == "tanh" else _gelu_f, x)


def gelu_grad(g, x, approximate="none"):
    return _backward(_gelu_tanh_b if approximate == "tanh" else _gelu_b, g, x)


def silu(x):
    return _forward(_silu_f, x)


def silu_grad(g, x):
    return _backward(_silu_b, g, x)


def mish(x):
    return _forward(_mish_f, x)


def mish_grad(g, x):
    return _backward(_mish_b, g, x)


def elu(x, alpha, scale, input_scale):
    """``scale * x`` where positive, ``scale * alpha * (exp(input_scale x) - 1)`` elsewhere
    (elu, selu and celu)."""
    return _forward(_elu_f, x, alpha, scale, input_scale)


def elu_grad(g, x, alpha, scale, input_scale):
    return _backward(_elu_b, g, x, alpha, scale, input_scale)


def softplus(x, beta, threshold):
    return _forward(_softplus_f, x, beta, threshold)


def softplus_grad(g, x, beta, threshold):
    return _backward(_softplus_b, g, x, beta, threshold)


def sigmoid(x):
    return _forward(_sigmoid_f, x)


def sigmoid_grad(g, y):
    """From the result ``y``."""
    return _backward(_sigmoid_b, g, y)


def tanh(x):
    return _forward(_tanh_f, x)


def tanh_grad(g, y):
    """From the result ``y``."""
    return _backward(_tanh_b, g, y)


def hardswish(x):
    return _forward(_hardswish_f, x)


def hardswish_grad(g, x):
    return _backward(_hardswish_b, g, x)


def hardsigmoid(x):
    return _forward(_hardsigmoid_f, x)


def hardsigmoid_grad(g, x):
    return _backward(_hardsigmoid_b, g, x)


def leaky_relu(x, negative_slope):
    return _forward(_leaky_relu_f, x, negative_slope)


def leaky_relu_grad(g, x, negative_slope):
    return _backward(_leaky_relu_b, g, x, negative_slope)


def relu(x):
    return _forward(_relu_f, x)


def relu_(x):
    """``max(x, 0)`` written into the C-contiguous ``x`` (the kernel reads each element
    before it writes it, so input and output may be one array)."""
    flat = x.reshape(-1)
    _run(_relu_f, flat.size, flat, flat)


def relu_grad(g, y):
    """``g`` where the result ``y`` is positive, else 0 (a select: an inf gradient where
    ``y`` is 0 gives 0, as torch's)."""
    return _backward(_relu_b, g, y)
