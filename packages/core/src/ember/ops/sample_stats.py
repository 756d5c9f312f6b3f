"""Statistics of samples: covariance and correlation (cov, corrcoef), histograms
(histogram, histogramdd), distances (dist, pdist) and msort.

cov, corrcoef, dist, pdist and msort are written with ember ops, so their gradients (and
double backward) follow from those ops'; the histograms count on arrays and have no
derivative (their results record a node whose backward raises, as torch's do).  Formulas
and edge cases: torch's ``Correlation.cpp`` and ``Histogram.cpp``, numpy's cov/histogram.
"""

from __future__ import annotations

import builtins
import math
import warnings

from .. import _dtype as D
from .. import return_types
from .._tensor import Tensor, _make
from ..autograd.graph import record
from ._helpers import _type_name, be, needs_grad, write_out
from .numerics import _not_implemented_rule

__all__ = ["cov", "corrcoef", "histogram", "histogramdd", "dist", "pdist", "msort"]


# ---- covariance and correlation -------------------------------------------------------

def _check_weights(w, name, n, integral):
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{w.ndim} dimensions")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                           f"input but got {w.numel()} != {n}")
    if integral and w.dtype._category != 1:
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                           f"{_type_name(w.dtype)} dtype")
    if not integral and w.dtype._category != 2:
        raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                           f"{_type_name(w.dtype)} dtype")
    if bool((w._data < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` ([V, N]: V
    variables, N observations; a 1-d input is one variable, giving a 0-d result).

    ``correction`` (an int) is subtracted from the observation count (1: Bessel's
    correction); ``fweights`` (integers, [N]) repeat observations and ``aweights``
    (floats, [N]) weigh them, as numpy.cov's.  Integer inputs give the default float
    dtype.  RuntimeError for more than 2 dims, bool inputs and bad weights; a UserWarning
    when the degrees of freedom are <= 0 (the result is then inf or nan), as torch.cov.
    """
    from .complex_ops import conj
    from .linalg import mm
    from .reduction import sum as _sum
    from .shape import reshape, squeeze
    if isinstance(correction, builtins.bool) or not isinstance(correction, builtins.int):
        raise TypeError(f"cov(): argument 'correction' must be int, not {type(correction).__name__}")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input.dtype is D.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = reshape(input, (1, -1)) if input.ndim < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights(fweights, "fweights", n, True)
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", n, False)
        w = aweights if w is None else w * aweights
    w_sum = n if w is None else _sum(w)
    avg = _sum(x if w is None else x * w, 1) / w_sum
    if w is None:
        norm = w_sum - correction
    elif correction != 0 and aweights is not None:
        norm = w_sum - correction * _sum(w * aweights) / w_sum
    else:
        norm = w_sum - correction
    if bool((norm._data if isinstance(norm, Tensor) else norm) <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    centred = x - avg.unsqueeze(1)
    c = mm(centred, conj((centred if w is None else centred * w).t()))
    if not isinstance(norm, Tensor):
        norm = _make(be(c).xp.asarray(norm, dtype=c._data.dtype), c.dtype)
    return squeeze(c / norm)


def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of ``input`` ([V, N]
    or [N]): cov(input) normalized by the standard deviations, clamped into [-1, 1] (nan
    for a constant variable), as torch.corrcoef / numpy.corrcoef."""
    from .elementwise import clamp, sqrt
    from .layout import diagonal
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = sqrt(diagonal(c))
    if c.dtype.is_complex:
        from .complex_ops import real
        std = real(std)
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    return c if c.dtype.is_complex else clamp(c, -1, 1)


# ---- histograms -------------------------------------------------------------------------

def _linspace_edges(xp, lo, hi, steps, dtype):
    """torch's linspace in ``dtype``'s arithmetic (float32 for the half types): the first
    half counted up from ``lo``, the second down from ``hi``, so bin edges equal torch's."""
    work = "float64" if dtype is D.float64 else "float32"
    lo, hi = xp.asarray(lo, dtype=work), xp.asarray(hi, dtype=work)
    step = (hi - lo) / xp.asarray(steps - 1, dtype=work)
    i = xp.arange(steps, dtype=work)
    half = steps // 2
    vals = xp.where(i < half, lo + step * i, hi - step * (xp.asarray(steps - 1, dtype=work) - i))
    return vals.astype(dtype.np)


def _histogram_counts(points, edges, weight, density):
    """Counts (or summed weights) of the [M, N] ``points`` in the N-dimensional bins of
    the edge arrays; a point outside an edge range is left out, one on the last edge
    falls into the last bin."""
    xp = be(points).xp
    data = points._data
    sizes = tuple(int(e.shape[0]) - 1 for e in edges)
    inside = xp.ones(data.shape[0], dtype=bool)
    flat = xp.zeros(data.shape[0], dtype="int64")
    for d, e in enumerate(edges):
        col = data[:, d]
        inside &= (col >= e[0]) & (col <= e[-1])
        pos = xp.clip(xp.searchsorted(e, col, side="right") - 1, 0, sizes[d] - 1)
        flat = flat * sizes[d] + pos
    total = math.prod(sizes)
    w = weight._data.reshape(-1) if weight is not None else None
    hist = xp.bincount(flat[inside], weights=None if w is None else w[inside], minlength=total)
    hist = hist.astype(data.dtype).reshape(sizes)
    if density:
        volume = xp.ones(sizes, dtype=data.dtype)
        for d, e in enumerate(edges):
            shape = [1] * len(sizes)
            shape[d] = sizes[d]
            volume = volume * xp.diff(e).reshape(shape)
        hist = hist / (hist.sum() * volume)
    return hist.astype(data.dtype)


def _check_hist_input(input, weight, weight_shape):
    if input.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_type_name(input.dtype)}'")
    if weight is not None:
        if weight.dtype is not input.dtype:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({input.dtype.name[:-2] or 'float'}), "
                               f"and weight({weight.dtype.name})")
        if tuple(weight_shape) != tuple(weight.shape) if weight_shape is not None else False:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               "the input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(input.shape)} and weight with shape {list(weight.shape)}")


def _edges_for(points, bins, range, ndim):
    """The edge arrays of each of ``ndim`` dims: from bin counts (over ``range``, else the
    data's min and max, widened by 0.5 each side when they meet) or given tensors."""
    xp = be(points).xp
    if isinstance(bins, Tensor) or (isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor)):
        seqs = [bins] if isinstance(bins, Tensor) else list(bins)
        if len(seqs) != ndim:
            raise RuntimeError(f"torch.histogramdd: expected {ndim} sequences of bin edges for a {ndim}-dimensional "
                               f"histogram but got {len(seqs)}")
        for d, e in enumerate(seqs):
            if e.ndim != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {e.ndim} "
                                   f"dimensions in the bins tensor for dimension {d}")
            if e.dtype is not points.dtype:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                                   f"but got input with dtype {points.dtype.name} and bins for dimension {d} with "
                                   f"dtype {e.dtype.name}")
            if e.shape[0] < 2:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {e.shape[0] - 1} for dimension {d}")
        return [e._data for e in seqs], True
    counts = [bins] * ndim if isinstance(bins, builtins.int) else list(bins)
    if len(counts) != ndim:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    for d, b in enumerate(counts):
        if isinstance(b, builtins.bool) or not isinstance(b, builtins.int):
            raise TypeError(f"histogramdd(): bins must be ints or 1-d tensors, got {type(b).__name__}")
        if b <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for dimension {d}")
    if range is not None and len(range) != 2 * ndim:
        raise RuntimeError(f"torch.histogramdd: for a {ndim}-dimensional histogram range should have {2 * ndim} "
                           f"elements, but got {len(range)}")
    data = points._data
    edges = []
    for d in builtins.range(ndim):
        if range is not None:
            lo, hi = float(range[2 * d]), float(range[2 * d + 1])
        elif data.shape[0]:
            lo, hi = float(data[:, d].min()), float(data[:, d].max())
        else:
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} for "
                               f"dimension {d}")
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo:g}, {hi:g}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(_linspace_edges(xp, lo, hi, counts[d] + 1, points.dtype))
    return edges, False


def _no_derivative(input, weight, outputs):
    if needs_grad(input, weight):
        record("NotImplemented", _not_implemented_rule("histogramdd"), (input, weight), outputs)


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """(hist, bin_edges) of all the elements of ``input`` (float32/float64).

    ``bins`` is a count of equal-width bins over ``range`` (min, max) — the data's min and
    max when None — or a 1-d tensor of edges (no ``range`` then).  Every bin is half-open
    except the last, which holds its right edge; values outside are not counted.
    ``weight`` (same dtype and numel) sums weights instead of counting; ``density``
    divides by the total and the bin widths.  RuntimeError for bins <= 0, min > max, a
    non-finite range or mismatched dtypes; NotImplementedError for other dtypes
    (torch.histogram).

    ``out`` (a pair of tensors) receives the result when given."""
    from .shape import reshape
    if isinstance(bins, Tensor) and range is not None:
        raise TypeError("histogram(): the range argument is taken only with an int bins")
    _check_hist_input(input, weight, None)
    if weight is not None and weight.numel() != input.numel():
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"[{input.numel()}, 1] and weight with shape {list(weight.shape)}")
    points = reshape(input.detach(), (-1, 1))
    edges, _ = _edges_for(points, bins, range, 1)
    xp = be(input).xp
    hist = _make(xp.asarray(_histogram_counts(points, edges, weight, density)), input.dtype)
    edge_t = bins.detach().clone() if isinstance(bins, Tensor) else _make(xp.asarray(edges[0]), input.dtype)
    _no_derivative(input, weight, (hist, edge_t))
    result = return_types.histogram(hist, edge_t)
    return result if out is None else write_out(result, out, "histogram")


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of the points in the rows of ``input`` ([..., N]: every leading
    dim is flattened into the points, N coordinates each); ``hist`` is [B_1, ..., B_N] and
    ``bin_edges`` a tuple of N 1-d tensors.

    ``bins`` is an int (each dim), a sequence of N ints, or a sequence of N 1-d edge
    tensors; ``range`` is (min_1, max_1, ..., min_N, max_N); ``weight`` is [...] (the input's
    shape without its last dim).  The rules of ``histogram`` hold per dim
    (torch.histogramdd).

    ``density`` divides by the total and the bin volumes."""
    from .shape import reshape
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    _check_hist_input(input, weight, input.shape[:-1])
    ndim = input.shape[-1]
    points = reshape(input.detach(), (-1, ndim))
    edges, given = _edges_for(points, bins, range, ndim)
    xp = be(input).xp
    hist = _make(xp.asarray(_histogram_counts(points, edges, weight, density)), input.dtype)
    edge_ts = tuple(b.detach().clone() for b in bins) if given else tuple(
        _make(xp.asarray(e), input.dtype) for e in edges)
    _no_derivative(input, weight, (hist, *edge_ts))
    return return_types.histogramdd(hist, edge_ts)


# ---- distances and sorting ----------------------------------------------------------------

def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast): any real p, inf and -inf (max and
    min of ``|difference|``), 0 (the count of nonzero differences); a 0-d tensor of the
    promoted float dtype.  RuntimeError for integer inputs (torch.dist).

    ``other`` broadcasts with ``input``."""
    from .decompositions import vector_norm
    diff = input - other
    if diff.dtype._category < 2:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_type_name(diff.dtype)} instead.")
    return vector_norm(diff, float(p.item() if isinstance(p, Tensor) else p))


def pdist(input, p=2):
    """The ``p``-norm distances between every pair of rows i < j of ``input`` [N, M], in
    the order (0, 1), (0, 2), ..., (N-2, N-1): [N (N - 1) / 2].  RuntimeError for other
    than 2 dims, non-float dtypes and p < 0 (torch.pdist, scipy's pdist)."""
    from .decompositions import vector_norm
    from .indexing import index_select
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    xp = be(input).xp
    n = input.shape[0]
    rows, cols = xp.triu_indices(n, 1)
    if rows.shape[0] == 0:
        return _make(xp.zeros((0,), dtype=input._data.dtype), input.dtype)
    a = index_select(input, 0, _make(xp.asarray(rows, dtype="int64"), D.int64))
    b = index_select(input, 0, _make(xp.asarray(cols, dtype="int64"), D.int64))
    return vector_norm(a - b, float(p), dim=1)


def msort(input, *, out=None):
    """``input`` sorted along its first dim (torch.msort: sort(input, 0).values).

    ``out`` receives the result when given."""
    from .indexing import sort
    result = sort(input, 0).values
    return result if out is None else write_out(result, out, "sort")
