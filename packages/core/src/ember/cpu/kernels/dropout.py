"""Dropout kernels: the mask, its scaling and the product in one pass, given the uniform
draws (drawn by the op from ember's generator, so that seeded results do not depend on
whether the kernels run).

``apply(x, u, p, scale)`` on a C-contiguous numpy float32/float64 ``x`` and float32 draws
``u`` of its shape gives ``(x * scaled, scaled)`` with ``scaled = scale`` where
``u >= p`` (p compared in float32, as numpy compares a float32 array with a Python
float) and 0 elsewhere; a float32 ``x`` gets ``scaled`` written over ``u``.
``apply_alpha(x, u, p, a, c1, c2)`` is alpha dropout's ``x * scaled + shift`` with
``scaled = keep * a``, ``shift = (keep - 1) * c1 + c2`` (keep 1 or 0), as the numpy path
computes them.  ``grad(g, scaled)`` is ``g * scaled`` (``g`` may be a broadcast scalar).
"""

from __future__ import annotations

import numpy

from ._runtime import jit, parallel_for

__all__ = ["apply", "apply_alpha", "grad"]


@jit
def _apply(start, stop, x, u, p, scale, out, scaled):
    x, u, out, scaled = x[start:stop], u[start:stop], out[start:stop], scaled[start:stop]
    zero = scale - scale
    for i in range(stop - start):
        s = scale if u[i] >= p else zero
        scaled[i] = s
        out[i] = x[i] * s  # a product, as numpy's path: an inf dropped gives nan


@jit
def _apply_alpha(start, stop, x, u, p, a, c1, c2, one, out, scaled):
    # ``one`` comes typed from the caller: a float literal here would make the loop float64
    x, u, out, scaled = x[start:stop], u[start:stop], out[start:stop], scaled[start:stop]
    for i in range(stop - start):
        k = one if u[i] >= p else one - one
        s = k * a
        scaled[i] = s
        out[i] = x[i] * s + ((k - one) * c1 + c2)


@jit
def _grad(start, stop, g, scalar, scaled, out):
    scaled, out = scaled[start:stop], out[start:stop]
    if scalar:
        g0 = g[0]
        for i in range(stop - start):
            out[i] = g0 * scaled[i]
    else:
        g = g[start:stop]
        for i in range(stop - start):
            out[i] = g[i] * scaled[i]


def apply(x, u, p, scale):
    dt = x.dtype
    xf = x.reshape(-1)
    uf = u.reshape(-1)
    out = numpy.empty(x.shape, dt)
    scaled = u if dt == u.dtype else numpy.empty(x.shape, dt)
    parallel_for(_apply, xf.size, xf, uf, numpy.float32(p), dt.type(scale), out.reshape(-1), scaled.reshape(-1))
    return out, scaled


def apply_alpha(x, u, p, a, c1, c2):
    dt = x.dtype
    out = numpy.empty(x.shape, dt)
    scaled = u if dt == u.dtype else numpy.empty(x.shape, dt)
    parallel_for(_apply_alpha, x.size, x.reshape(-1), u.reshape(-1), numpy.float32(p), dt.type(a), dt.type(c1),
                 dt.type(c2), dt.type(1.0), out.reshape(-1), scaled.reshape(-1))
    return out, scaled


def grad(g, scaled):
    out = numpy.empty(scaled.shape, scaled.dtype)
    scalar = g.size > 0 and not any(g.strides)
    if scalar:
        gf = numpy.empty(1, g.dtype)  # writable, so the kernel keeps one signature
        gf[0] = g.reshape(-1)[0]
    else:
        gf = numpy.ascontiguousarray(g).reshape(-1)
    parallel_for(_grad, out.size, gf, scalar, scaled.reshape(-1), out.reshape(-1))
    return out
