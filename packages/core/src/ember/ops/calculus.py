"""Numerical integration and differentiation of sampled functions: trapezoid (and its
older name trapz), cumulative_trapezoid and gradient.

All are written with ember ops (slices, differences, sums, cat), so their gradients and
double backward follow from those ops'.  Formulas: torch's ``ReduceOps.cpp`` and
``Integration.cpp``, which follow numpy.trapezoid and numpy.gradient (second-order
central differences inside, first- or second-order one-sided ones at the edges).
"""

from __future__ import annotations

import builtins
import numbers

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim

__all__ = ["trapezoid", "trapz", "cumulative_trapezoid", "gradient"]


def _part(t, d, start, stop=None):
    """``t[start:stop]`` along dim ``d`` (negative bounds count from the end)."""
    from .shape import narrow
    n = t.shape[d]
    lo = start + n if start < 0 else start
    hi = n if stop is None else (stop + n if stop < 0 else stop)
    lo, hi = builtins.min(builtins.max(lo, 0), n), builtins.min(builtins.max(hi, 0), n)
    return narrow(t, d, lo, builtins.max(hi - lo, 0))


def _spacing_along(y, x, d, name):
    """The differences of sample points ``x`` placed along dim ``d`` of ``y``: a 1-d ``x``
    lies along ``d``; one of fewer dims gets leading 1s; otherwise it is used as it is."""
    from .elementwise import sub
    from .shape import reshape
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = x.shape[0]
        x = reshape(x, shape)
    elif x.ndim < y.ndim:
        x = reshape(x, (1,) * (y.ndim - x.ndim) + tuple(x.shape))
    return sub(_part(x, d, 1), _part(x, d, 0, -1))


def _check_y(y, x, dx, name):
    if x is not None and dx is not None:
        raise TypeError(f"{name}(): takes either x or dx, not both")
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'x' must be Tensor, not {type(x).__name__}")
    if y.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions" if name == "trapezoid"
                         else "slice() cannot be applied to a 0-dim tensor.")
    if y.dtype is D.bool_ or (x is not None and x.dtype is D.bool_):
        raise RuntimeError(f"{name}: received a bool input for `{'x' if y.dtype is not D.bool_ else 'y'}`, "
                           "but bool is not supported")
    if dx is not None and (isinstance(dx, (builtins.bool, builtins.complex)) or not isinstance(dx, numbers.Real)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``: the integral of samples ``y`` at points ``x``
    (a tensor: 1-d along ``dim``, or broadcasting with ``y``), or at spacing ``dx``
    (default 1); ``y``'s shape without ``dim``.  Integer samples give the default float.
    No samples give zeros.  IndexError for a 0-d ``y``, RuntimeError for bool inputs and
    a 1-d ``x`` of the wrong length (torch.trapezoid, numpy.trapezoid)."""
    from .reduction import sum as _sum
    from .shape import select
    _check_y(y, x, dx, "trapezoid")
    d = _wrap_dim(dim, y.ndim)
    if y.shape[d] == 0:
        from .creation import zeros
        return zeros(y.shape[:d] + y.shape[d + 1:], dtype=y.dtype, device=y.device)
    if x is not None:
        spacing = _spacing_along(y, x, d, "trapezoid")
        return _sum(spacing * (_part(y, d, 0, -1) + _part(y, d, 1)), d) / 2.0
    step = 1 if dx is None else dx
    return (_sum(y, d) - (select(y, d, 0) + select(y, d, -1)) * 0.5) * step


def trapz(y, x=None, *, dx=None, dim=-1):
    """``trapezoid`` under its older name (torch.trapz): the trapezoidal integral of ``y``
    along ``dim``, at the sample points ``x`` (a tensor) or with the spacing ``dx`` (1 by
    default)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim``: one value per interval, so ``dim``
    has one element fewer than in ``y``; ``x`` and ``dx`` as in trapezoid
    (torch.cumulative_trapezoid, scipy.integrate.cumulative_trapezoid without
    ``initial``)."""
    from .reduction import cumsum
    _check_y(y, x, dx, "cumulative_trapezoid")
    d = _wrap_dim(dim, y.ndim)
    pairs = _part(y, d, 0, -1) + _part(y, d, 1)
    if x is not None:
        return cumsum(_spacing_along(y, x, d, "cumulative_trapezoid") * pairs, d) / 2.0
    step = 1 if dx is None else dx
    return cumsum((step / 2.0) * pairs, d)


# ---- gradient -------------------------------------------------------------------------

def _dims_of(input, dim):
    if dim is None:
        return list(builtins.range(input.ndim))
    dims = [dim] if isinstance(dim, builtins.int) else list(dim)
    wrapped = [_wrap_dim(v, input.ndim) for v in dims]
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"dim {wrapped[0]} appears multiple times in the list of dims")
    return wrapped


def _scalar_spacing(s):
    if isinstance(s, Tensor):
        if s.ndim != 0:
            raise TypeError("gradient(): spacing must be a number, a sequence of numbers or a sequence of 1-d "
                            "tensors, not a tensor")
        return s.item()
    return s


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative estimated from samples, along each dim in ``dim`` (all when None):
    a tuple of tensors of ``input``'s shape, one per dim.

    Inside, central differences of second order; at the two ends, one-sided differences
    of order ``edge_order`` (1 or 2).  ``spacing`` is one number (the step of every dim),
    a sequence of numbers (one per dim), or a sequence of 1-d coordinate tensors (the
    sample points of each dim, unevenly spaced allowed).  Integer inputs give the default
    float.  RuntimeError for an ``edge_order`` other than 1 or 2, a dim shorter than
    edge_order + 1, uint8 input, or a spacing list whose length does not match
    (torch.gradient, numpy.gradient).
    """
    if input.dtype is D.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    dims = _dims_of(input, dim)
    if isinstance(spacing, Tensor) and spacing.ndim > 0:
        raise TypeError("gradient(): spacing must be a number, a sequence of numbers or a sequence of 1-d tensors, "
                        "not a tensor")
    if isinstance(spacing, (list, tuple)):
        spacings = list(spacing)
        if dim is None and len(spacings) != input.ndim:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to 'self.dim() = {input.ndim}', since dim argument was not given, but got a "
                               f"list of length {len(spacings)}")
        if dim is not None and len(spacings) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacings)} and a dim argument of length {len(dims)}.")
    else:
        spacings = [spacing] * len(dims)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    out = []
    for d, s in zip(dims, spacings):
        if isinstance(s, Tensor) and s.ndim > 0:
            if s.ndim != 1:
                raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got "
                                   f"an element with {s.ndim} dimensions!")
            out.append(_gradient_coordinates(input, s, d, edge_order))
        else:
            out.append(_gradient_uniform(input, _scalar_spacing(s), d, edge_order))
    return tuple(out)


def _gradient_uniform(y, h, d, edge_order):
    from .shape import cat
    center = (_part(y, d, 2) - _part(y, d, 0, -2)) / h
    if edge_order == 1:
        first = (_part(y, d, 1, 2) - _part(y, d, 0, 1)) / h
        last = (_part(y, d, -1) - _part(y, d, -2, -1)) / h
    else:
        first = (_part(y, d, 0, 1) * -1.5 + _part(y, d, 1, 2) * 2 - _part(y, d, 2, 3) * 0.5) / h
        last = (_part(y, d, -3, -2) * 0.5 + _part(y, d, -2, -1) * -2 + _part(y, d, -1) * 1.5) / h
    return cat([first, center / 2, last], d)


def _gradient_coordinates(y, coords, d, edge_order):
    """numpy.gradient's weights for uneven sample points: each interior value from its
    two neighbours' distances, the ends from the first (last) one or two intervals."""
    from .shape import cat, reshape
    shape = [1] * y.ndim
    shape[d] = -1
    h = coords[1:] - coords[:-1]
    h1, h2 = h[:-1], h[1:]
    a = reshape(-h2 / (h1 * (h1 + h2)), shape)
    b = reshape((h2 - h1) / (h1 * h2), shape)
    c = reshape(h1 / (h2 * (h1 + h2)), shape)
    center = a * _part(y, d, 0, -2) + b * _part(y, d, 1, -1) + c * _part(y, d, 2)
    if edge_order == 1:
        first = (_part(y, d, 1, 2) - _part(y, d, 0, 1)) / h[0]
        last = (_part(y, d, -1) - _part(y, d, -2, -1)) / h[-1]
    else:
        h0, h1_ = h[0], h[1]
        first = (-(2.0 * h0 + h1_) / (h0 * (h0 + h1_)) * _part(y, d, 0, 1)
                 + (h0 + h1_) / (h0 * h1_) * _part(y, d, 1, 2)
                 + (-h0) / (h1_ * (h0 + h1_)) * _part(y, d, 2, 3))
        hl, hl2 = h[-1], h[-2]
        last = (hl / (hl2 * (hl + hl2)) * _part(y, d, -3, -2)
                - (hl + hl2) / (hl * hl2) * _part(y, d, -2, -1)
                + (2 * hl + hl2) / (hl * (hl + hl2)) * _part(y, d, -1))
    return cat([first, center, last], d)
