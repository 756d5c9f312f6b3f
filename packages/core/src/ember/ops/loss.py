"""Loss functions of torch.nn.functional (ctc_loss has its own module), with the distances
they use (pairwise_distance, cosine_similarity).

cross_entropy with class-index targets is ``nll_loss(log_softmax(x, 1))``, as in torch (the
same graph: NllLossBackward0 over LogSoftmaxBackward0; label smoothing adds torch's
smoothing term); each of the two ops has a compiled kernel for float32/float64 arrays.
On cupy float32/float64 ``[N, C]`` logits it runs as the fused CUDA kernels instead
(cuda/kernels/loss.py): one node, named as torch's top node (NllLossBackward0, or
AddBackward0 with smoothing), whose rule is the gradient of the whole composition.
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as D
from .._autocast import autocast_op
from .._tensor import Tensor, _make
from ..autograd.graph import on_arrays
from ..backends import backend_of_array
from ..cpu import kernels
from ..cuda.kernels import loss as cuda_loss
from ._helpers import be, needs_grad, record, wrap

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "huber_loss", "smooth_l1_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "margin_ranking_loss",
           "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss", "pairwise_distance",
           "cosine_similarity"]


def _reduction(size_average, reduce, reduction):
    """The reduction named by torch's legacy ``size_average``/``reduce`` flags (with torch's
    deprecation warning), else ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "none" if not reduce else "mean" if size_average else "sum"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{result}' instead.",
                  UserWarning, stacklevel=3)
    return result


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ---- class-index losses ------------------------------------------------------------

def _target_weights(xp, t, n_classes, weight, ignore_index, dtype):
    """``(safe, wt, valid)``: the targets with ignored entries sent to class 0, each
    target's class weight (1 without weights, 0 where ignored) and the mask of the counted
    ones.  IndexError for a target outside ``[0, C)`` that is not ``ignore_index``, as
    torch's CPU kernel."""
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")
    safe = xp.where(valid, t, 0).astype(xp.int64)
    wt = weight[safe] if weight is not None else xp.ones(t.shape, dtype=dtype)
    return safe, xp.where(valid, wt, 0).astype(dtype, copy=False), valid


class _ignore_fp:
    def __init__(self, xp):
        self.xp, self.old = xp, None

    def __enter__(self):
        if hasattr(self.xp, "seterr"):
            self.old = self.xp.seterr(invalid="ignore", divide="ignore")

    def __exit__(self, *exc):
        if self.old is not None:
            self.xp.seterr(**self.old)


def _check_index_target(input, target, op):
    """torch's checks of a class-index target, in torch's order: shapes, then the dtype
    (int64 or uint8; a float target of another shape than the input's lands here too)."""
    if not isinstance(target, Tensor):
        raise TypeError(f"{op}(): argument 'target' must be Tensor, not {type(target).__name__}")
    if input.ndim != 1 and target.ndim and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if input.ndim == 1:
        if target.ndim != 0:
            raise RuntimeError("1D target tensor expected, multi-target not supported" if target.ndim > 1 else
                               "0D or 1D target tensor expected, multi-target not supported")
    elif target.ndim != input.ndim - 1:
        raise RuntimeError(f"Expected target size {_expected(input)}, got {list(target.shape)}"
                           if input.ndim > 2 else "0D or 1D target tensor expected, multi-target not supported")
    elif tuple(input.shape[2:]) != tuple(target.shape[1:]):
        raise RuntimeError(f"Expected target size {_expected(input)}, got {list(target.shape)}")
    if target.dtype not in (D.int64, D.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_long(target.dtype)}")


def _expected(input):
    return "[" + ", ".join(str(s) for i, s in enumerate(input.shape) if i != 1) + "]"


def _long(d):
    from ._helpers import _type_name
    return _type_name(d)


def _check_weight(weight, n_classes, input):
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no classes but "
                           f"got weight tensor of shape: {list(weight.shape)}")


@autocast_op("fp32")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy between the logits ``input`` and ``target`` (torch.nn.functional.cross_entropy).

    ``input``: float logits ``[N, C]``, ``[N, C, d1, ...]`` or ``[C]`` (one sample).  ``target``:
    int64 class indices ``[N]`` / ``[N, d1, ...]`` / ``[]``, or float class probabilities of the
    input's shape.  ``weight``: a float ``[C]`` rescaling each class; with indices 'mean' then
    divides by the summed weights of the counted targets.  ``ignore_index``: a target index
    that adds no loss and no count (indices only).  ``label_smoothing`` in [0, 1]: the target
    mixed with the uniform distribution by that amount.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' gives ``[N]`` / ``[N, d1, ...]``.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.

    With class indices this is ``nll_loss(log_softmax(input, 1))`` plus, with smoothing,
    ``label_smoothing / C`` times the (weighted) sum of ``-log_softmax`` over the classes,
    reduced as the nll term (torch's formula and graph).  RuntimeError for a
    ``label_smoothing`` outside [0, 1], a 0-dim input, a ``weight`` that is not ``[C]`` or a
    target of the wrong shape or dtype; ValueError for mismatched batch sizes; IndexError
    for a class index out of range.  Float tensors (float32 under autocast).

    On CUDA, ``[N, C]`` float32/float64 logits run through one fused kernel whose single node
    (named as torch's top node) saves the logits rather than the log-probabilities: changing
    the logits in place before ``backward`` then raises torch's in-place error, where torch,
    which saves log_softmax's output, computes the gradient."""
    from .reduction import log_softmax
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.ndim == 0:
        raise RuntimeError("cross_entropy: input must have at least one dimension")
    c_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[c_dim]
    _check_weight(weight, n_classes, input)
    if isinstance(target, Tensor) and target.dtype.is_floating_point and target.shape == input.shape:
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing, c_dim, n_classes)
    _check_index_target(input, target, "cross_entropy")
    fused = _cross_entropy_fused(input, target, weight, ignore_index, reduction, label_smoothing)
    if fused is not None:
        return fused
    lsm = log_softmax(input, c_dim)
    nll = _nll(lsm, target, weight, ignore_index, reduction, n_classes)
    if not label_smoothing:
        return nll
    ignored = target == ignore_index
    if weight is None:
        smooth = -lsm.sum(c_dim)
    else:
        smooth = -(lsm * weight.reshape((n_classes,) + (1,) * (input.ndim - c_dim - 1))).sum(c_dim)
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        counted = target[~ignored].long()
        smooth = smooth.sum() / (weight[counted].sum() if weight is not None else counted.numel())
    elif reduction == "sum":
        smooth = smooth.sum()
    return _scaled(nll, 1 - label_smoothing) + _scaled(smooth, label_smoothing / n_classes)


def _cross_entropy_fused(input, target, weight, ignore_index, reduction, smoothing):
    """cross_entropy of checked ``[N, C]`` logits and class indices through the fused CUDA
    kernels, or None where they do not apply (other arrays or ranks, no classes, or a
    weight whose gradient the smoothing term would carry: the composed path has it)."""
    w = None if weight is None else weight._data
    if input.ndim != 2 or not input.shape[1] or not cuda_loss.accepts(input._data, target._data, w) or (
            w is not None and smoothing and needs_grad(weight)):
        return None
    t = target._data.astype("int64", copy=False)
    loss, lse, wt = cuda_loss.cross_entropy_forward(input._data, t, w, ignore_index, smoothing)
    total = None
    if reduction == "sum":
        loss = loss.sum()
    elif reduction == "mean":
        total = wt.sum()
        loss = loss.sum() / total  # 0 / 0 is NaN when every target is ignored, as torch
    # summed in the kernels' accumulation dtype, rounded once (torch's half-precision loss)
    r = _make(loss.astype(input._data.dtype, copy=False), input.dtype)
    if needs_grad(input):
        record("AddBackward0" if smoothing else "NllLossBackward0", _cross_entropy_fused_rule, (input,), r,
               (input, lse, t, w, total, ignore_index, float(smoothing)))
    return r


def _cross_entropy_fused_arrays(g, x, lse, t, w, total, ignore_index, smoothing):
    return cuda_loss.cross_entropy_backward(g, x, lse, t, w, total, ignore_index, smoothing)


@on_arrays(_cross_entropy_fused_arrays)
def _cross_entropy_fused_rule(g, x, lse, t, w, total, ignore_index, smoothing):
    # the kernel's formula (cuda/kernels/loss.py) with ember ops, for a graph of the gradient
    from .elementwise import where
    from .reduction import softmax
    xp = backend_of_array(lse).xp
    n, c = x.shape
    dt = x._data.dtype
    counted = (t != ignore_index).reshape(n, 1)
    safe = xp.where(counted[:, 0], t, 0).astype(xp.int64)
    w_t = (w[safe] if w is not None else xp.ones(n, dt)).reshape(n, 1)
    w_sum = w.sum(dtype=dt) if w is not None else c
    classes = xp.arange(c).reshape(1, c)
    shift = xp.where(classes == safe[:, None], (1 - smoothing) * w_t, 0).astype(dt)
    if smoothing:
        shift = shift + (smoothing / c * (w.reshape(1, c) if w is not None else xp.ones((1, c), dt))).astype(dt)
    slope = ((1 - smoothing) * w_t + smoothing * w_sum / c).astype(dt)
    share = g.reshape(n, 1) if g.ndim else (g if total is None else g / _make(xp.asarray(total, dtype=dt), g.dtype))
    d = (softmax(x, 1) * _make(slope, x.dtype) - _make(shift, x.dtype)) * share
    return where(_make(counted, D.bool_), d, 0.0)


def _scaled(t, s):
    """``t * s`` for a Python number ``s``, recorded as torch records it inside its own
    kernels (MulBackward1: the scalar overload; ``t * s`` in Python records MulBackward0)."""
    r = wrap(t._data * s, t.dtype)
    if needs_grad(t):
        record("MulBackward1", _scaled_rule, (t,), r, (s,))
    return r


@on_arrays()
def _scaled_rule(g, s):
    return g * s


def _cross_entropy_probs(input, target, weight, reduction, smoothing, c_dim, n_classes):
    from .reduction import log_softmax
    lsm = log_softmax(input, c_dim)
    y = target if not smoothing else target * (1 - smoothing) + smoothing / n_classes
    prod = lsm * y
    if weight is not None:
        prod = prod * weight.reshape((n_classes,) + (1,) * (input.ndim - c_dim - 1))
    per = -prod.sum(c_dim)
    if reduction == "mean":
        return per.sum() / (input.numel() // n_classes if input.numel() else 1)
    return _reduce(per, reduction)


@autocast_op("fp32")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood of the log-probabilities ``input`` at the class indices ``target``:
    ``-weight[t] * input[n, t]`` per element (torch.nn.functional.nll_loss).

    ``input``: float ``[N, C]``, ``[N, C, d1, ...]`` or ``[C]``.  ``target``: int64 or uint8
    class indices, the input's shape without the class dim.  ``weight``: a float ``[C]``
    rescaling each class; 'mean' divides by the summed weights of the counted targets.
    ``ignore_index``: a target index that adds no loss and no weight.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' gives the target's shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.

    IndexError for a target out of ``[0, C)`` that is not ``ignore_index``; ValueError for a
    0-dim input or mismatched batch sizes; RuntimeError for a ``weight`` that is not ``[C]``
    or a target of the wrong shape or dtype.  Float tensors (float32 under autocast)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.ndim == 0:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    n_classes = input.shape[0 if input.ndim == 1 else 1]
    _check_weight(weight, n_classes, input)
    _check_index_target(input, target, "nll_loss")
    return _nll(input, target, weight, ignore_index, reduction, n_classes)


def _nll(input, target, weight, ignore_index, reduction, n_classes):
    """nll_loss of checked arguments; inputs of 3 or more than 4 dims are seen as
    ``[N, C, 1, d1 * d2 * ...]``, as torch does (its graph has the two views)."""
    if input.ndim == 3 or input.ndim > 4:
        n, spatial = input.shape[0], tuple(input.shape[2:])
        rest = math.prod(spatial)
        out = _nll(input.reshape(n, n_classes, 1, rest), target.reshape(n, 1, rest), weight, ignore_index,
                   reduction, n_classes)
        return out.reshape((n,) + spatial) if reduction == "none" else out
    xp = be(input).xp
    arr, t = input._data, target._data
    unbatched = input.ndim == 1
    if unbatched:  # one example: a batch of one on the arrays (torch's graph has no view here)
        arr, t = arr.reshape(1, n_classes), t.reshape(1)
    safe, wt, valid = _target_weights(xp, t, n_classes, None if weight is None else weight._data, ignore_index,
                                      arr.dtype)
    # an ignored target adds 0, whatever its row holds (NaN or inf logits at padding)
    per = xp.where(valid, -(wt * xp.take_along_axis(arr, safe[:, None], axis=1)[:, 0]), 0)
    denom = None
    if reduction == "none":
        out = per.reshape(()) if unbatched else per
    elif reduction == "sum":
        out = per.sum()
    else:
        denom = wt.sum()
        with _ignore_fp(xp):
            out = per.sum() / denom
    r = _make(xp.asarray(out, dtype=arr.dtype), input.dtype)
    if needs_grad(input):
        record("NllLoss2DBackward0" if input.ndim == 4 else "NllLossBackward0", _nll_rule, (input,), r,
               (xp.where(valid, safe, -1), wt, denom, n_classes))
    return r


# The gradient is -w[t] * g (g / total weight for 'mean') at each counted target and 0
# elsewhere, ignored targets included (saved as -1: they match no class).


def _nll_arrays(g, t, wt, denom, n_classes):
    xp = backend_of_array(wt).xp
    with _ignore_fp(xp):
        per = g.reshape(wt.shape) if g.ndim else (g if denom is None else g / denom)
        coef = (-(per * wt)).astype(g.dtype, copy=False)
    if kernels.accepts(coef):
        return kernels.softmax.nll_grad(t, coef, n_classes, coef.dtype)
    if cuda_loss.accepts(coef, t):
        return cuda_loss.nll_grad(t, coef, n_classes)
    classes = xp.arange(n_classes).reshape((1, n_classes) + (1,) * (t.ndim - 1))
    return xp.where(classes == t[:, None], coef[:, None], xp.zeros((), dtype=coef.dtype))


@on_arrays(_nll_arrays)
def _nll_rule(g, t, wt, denom, n_classes):
    # linear in g: a constant matrix of coefficients times g
    xp = backend_of_array(wt).xp
    classes = xp.arange(n_classes).reshape((1, n_classes) + (1,) * (t.ndim - 1))
    with _ignore_fp(xp):
        scale = wt if denom is None else wt / denom
    coeffs = xp.where(classes == t[:, None], -scale[:, None], xp.zeros((), dtype=wt.dtype))
    per = g.reshape((t.shape[0], 1) + tuple(t.shape[1:])) if g.ndim else g
    return _make(coeffs, g.dtype) * per


# ---- regression and binary losses --------------------------------------------------

def _check_sizes(input, target, op):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=3)


def _reduce_weighted(loss, weight, input, reduction):
    """``loss * weight`` reduced; 'mean' divides by the summed weights, as torch's weighted
    mse_loss and l1_loss do."""
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


@autocast_op("fp32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Squared error ``(input - target)**2``, reduced (torch.nn.functional.mse_loss).

    ``input``, ``target``: float tensors of any shape that broadcast (a UserWarning when their
    shapes differ).  ``weight``: optional, the input's shape; the losses are multiplied by it
    and the weighted 'mean' is ``sum(weight * loss) / sum(weight)``.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the broadcast shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    ValueError also for a ``weight`` of another shape.  Float tensors (float32 under autocast)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_sizes(input, target, "mse_loss")
    d = input - target
    return _reduce_weighted(d * d, weight, input, reduction)


@autocast_op("fp32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Absolute error ``|input - target|``, reduced (torch.nn.functional.l1_loss).

    ``input``, ``target``: tensors of any shape that broadcast (a UserWarning when their shapes
    differ).  ``weight``: optional, the input's shape; the losses are multiplied by it and the
    weighted 'mean' is ``sum(weight * loss) / sum(weight)``.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the broadcast shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    ValueError also for a ``weight`` of another shape.  Float tensors (float32 under autocast)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_sizes(input, target, "l1_loss")
    return _reduce_weighted((input - target).abs(), weight, input, reduction)


@autocast_op("fp32")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross entropy ``-weight * (y * log(x) + (1 - y) * log(1 - x))`` of the probabilities
    ``x = input`` against ``y = target`` (torch.nn.functional.binary_cross_entropy); each log is
    clamped below at -100, as torch does, so that 0 and 1 give finite losses.

    ``input``: float probabilities in [0, 1], any shape.  ``target``: the input's shape and
    dtype, values in [0, 1].  ``weight``: optional, broadcast to the input's shape.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the input's shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    ValueError also for a target of another shape; RuntimeError for an input value outside
    [0, 1] or a target of another dtype.  Float tensors (float32 under autocast)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_tsize(target)}) that is different to the input size "
                         f"({_tsize(input)}) is deprecated. Please ensure they have the same size.")
    xp = be(input).xp
    x = input._data
    if ((x < 0) | (x > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {_long(target.dtype)} but expected {_long(input.dtype)}")
    y = target._data
    with _ignore_fp(xp):
        lx = xp.maximum(xp.log(x), -100)
        l1x = xp.maximum(xp.log1p(-x), -100)
    arr = -(y * lx + (1 - y) * l1x)
    if weight is not None:
        arr = arr * xp.broadcast_to(weight._data, arr.shape)
    r = _make(arr.astype(x.dtype, copy=False), input.dtype)
    if needs_grad(input, target, weight):
        record("BinaryCrossEntropyBackward0", _bce_rule, (input, target), r, (input, target, weight))
    return _reduce(r, reduction)


def _bce_rule(g, x, y, w):
    from .elementwise import clamp, log, log1p
    gw = g if w is None else g * w
    gx = gw * (x - y) / clamp((1 - x) * x, min=1e-12) if x._requires_grad else None
    gy = None
    if y._requires_grad:
        gy = gw * (clamp(log1p(-x), min=-100) - clamp(log(x), min=-100))
    return gx, gy


def _tsize(t):
    return "torch.Size([" + ", ".join(map(str, t.shape)) + "])"


@autocast_op("fp32")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Binary cross entropy of ``sigmoid(input)`` computed stably from the logits
    (torch.nn.functional.binary_cross_entropy_with_logits):
    ``weight * ((1 - y) * x + (1 + (pos_weight - 1) * y) * log(1 + exp(-x)))``.

    ``input``: float logits, any shape.  ``target``: the input's shape, values in [0, 1].
    ``weight``: optional, broadcast to the input's shape.  ``pos_weight``: optional weight of
    the positive term, broadcast against the target (a ``[C]`` for the last dim weights each
    class).  ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the input's shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    ValueError also for a target of another shape.  Float tensors (float32 under autocast)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_tsize(target)}) must be the same as input size ({_tsize(input)})")
    xp = be(input).xp
    x, y = input._data, target._data.astype(input._data.dtype, copy=False)
    sp = xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, 0)       # log(1 + exp(-x))
    lw = 1 if pos_weight is None else 1 + (pos_weight._data - 1) * y
    arr = (1 - y) * x + lw * sp
    if weight is not None:
        arr = arr * weight._data
    r = _make(xp.asarray(arr, dtype=x.dtype), input.dtype)
    if needs_grad(input, target, weight, pos_weight):
        record("BinaryCrossEntropyWithLogitsBackward0", _bcel_rule, (input, target), r,
               (input, target, weight, pos_weight))
    return _reduce(r, reduction)


def _bcel_rule(g, x, y, w, pw):
    from .elementwise import exp, log1p, relu, sigmoid
    gw = g if w is None else g * w
    gx = gy = None
    if x._requires_grad:
        s = sigmoid(x)
        if pw is None:
            gx = gw * (s - y)
        else:
            gx = gw * ((1 + (pw - 1) * y) * s - pw * y)
    if y._requires_grad:
        if pw is None:
            gy = -gw * x
        else:
            sp = log1p(exp(-x.abs())) + relu(-x)
            gy = gw * (-x + (pw - 1) * sp)
    return gx, gy


# ---- losses composed of differentiable ember ops -----------------------------------
# Their gradients (and higher-order gradients) follow from the ops they are made of.

def _value_clamped_min(t, low):
    """``t`` with values clamped below at ``low`` while its gradient passes unchanged, as
    torch's in-place clamp under no_grad does (gaussian_nll_loss, cosine_similarity)."""
    xp = be(t).xp
    r = _make(xp.maximum(t._data, t._data.dtype.type(low)), t.dtype)
    if needs_grad(t):
        record("CloneBackward0", _identity_rule, (t,), r, ())
    return r


def _identity_rule(g):
    return g


def _broadcast_pair(input, target):
    from .layout import broadcast_tensors
    if tuple(input.shape) == tuple(target.shape):
        return input, target
    return broadcast_tensors(input, target)


@autocast_op("fp32")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence, pointwise ``target * (log(target) - input)``
    (torch.nn.functional.kl_div); ``0 * log 0`` counts as 0.

    ``input``: log-probabilities, any shape.  ``target``: probabilities (log-probabilities when
    ``log_target``, then ``exp(target) * (target - input)``), broadcast with the input.
    ``reduction``: 'none' (the pointwise terms), 'sum', 'batchmean' (the sum divided by
    ``input.size(0)``, the divergence per sample) or 'mean' (divided by every element, with a
    UserWarning that 'batchmean' is the mathematical divergence); ValueError for another value.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.  'batchmean' cannot be reached through them.
    Differentiable in both arguments.  Float tensors (float32 under autocast)."""
    from .elementwise import exp
    from .elementwise_math import xlogy
    legacy = size_average is not None or reduce is not None
    if legacy:
        reduction = _reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if reduction != "batchmean" or legacy:
        _check_reduction(reduction)
    if log_target:
        loss = exp(target) * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim != 0 else total
    return _reduce(loss, reduction)


@autocast_op("fp32")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Huber loss of ``z = |input - target|``: ``0.5 * z**2`` where ``z < delta``, else
    ``delta * (z - 0.5 * delta)`` (torch.nn.functional.huber_loss; Huber, 1964).

    ``input``, ``target``: float tensors of any shape that broadcast (a UserWarning when their
    shapes differ).  ``delta``: the positive threshold between the quadratic and the linear
    part.  ``weight``: optional, the input's shape; the losses are multiplied by it and 'mean'
    is the plain mean of the weighted losses, as in torch.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the broadcast shape.
    RuntimeError for ``delta <= 0``; ValueError for a ``weight`` of another shape.
    Float tensors (float32 under autocast)."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_sizes(input, target, "huber_loss")
    x, y = _broadcast_pair(input, target)
    loss = _piecewise_quadratic(x - y, delta, 0.5, delta)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
    return _reduce(loss, reduction)


def _piecewise_quadratic(d, bound, quad, lin):
    """``quad * d**2`` where ``|d| < bound``, ``lin * (|d| - 0.5 * bound)`` elsewhere."""
    from .elementwise import where
    z = d.abs()
    return where(z < bound, d * d * quad, (z - 0.5 * bound) * lin)


@autocast_op("fp32")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1 loss of ``z = |input - target|``: ``0.5 * z**2 / beta`` where ``z < beta``, else
    ``z - 0.5 * beta`` (torch.nn.functional.smooth_l1_loss; Girshick, Fast R-CNN,
    arXiv:1504.08083); ``beta = 0`` is l1_loss, and it equals ``huber_loss / beta``.

    ``input``, ``target``: float tensors of any shape that broadcast (a UserWarning when their
    shapes differ).  ``beta``: the non-negative threshold.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the broadcast shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    RuntimeError for a negative ``beta``.  Float tensors (float32 under autocast)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_sizes(input, target, "smooth_l1_loss")
    x, y = _broadcast_pair(input, target)
    if beta == 0.0:
        return _reduce((x - y).abs(), reduction)
    return _reduce(_piecewise_quadratic(x - y, beta, 0.5 / beta, 1.0), reduction)


def _softplus(z):
    """``log(1 + exp(z))`` without overflow."""
    from .elementwise import exp, log1p, relu
    return log1p(exp(-z.abs())) + relu(z)


@autocast_op("fp32")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss ``log(1 + exp(-target * input))``, computed without overflow
    (torch.nn.functional.soft_margin_loss).

    ``input``: float scores, any shape.  ``target``: labels 1 or -1, broadcast with the input.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the broadcast shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.  Float tensors (float32 under autocast)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _reduce(_softplus(-(input * target)), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Multi-label one-versus-all logistic loss (torch.nn.functional.multilabel_soft_margin_loss):
    per sample ``-mean_c weight[c] * (y * log(sigmoid(x)) + (1 - y) * log(sigmoid(-x)))``.

    ``input``: float scores ``[N, C]`` (or ``[C]``).  ``target``: labels 0 or 1 of the input's
    shape.  ``weight``: optional per-class ``[C]`` (broadcast over the last dim).
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' gives ``[N]`` (``[]`` for a ``[C]`` input).
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = target * _softplus(-input) + (1 - target) * _softplus(input)
    if weight is not None:
        loss = loss * weight
    c_dim = input.ndim - 1
    loss = loss.sum(c_dim) / input.shape[c_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    return _reduce(loss, reduction)


def _class_scores(input, target):
    """``input`` as ``[N, C]`` and ``target`` as ``[N]`` int64 (a ``[C]`` input is one sample)."""
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0) or (input.ndim < 2 and input.numel() == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    n = input.shape[0] if input.ndim == 2 else 1
    if target.ndim > 1 or target.numel() != n:
        raise RuntimeError(f"inconsistent target size, expected {n} but got {list(target.shape)}")
    if target.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {_long(target.dtype)}")
    return input.reshape(n, -1), target.reshape(n)


@autocast_op("fp32")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge loss (torch.nn.functional.multi_margin_loss): per sample
    ``sum_{j != y} weight[y] * max(0, margin - x[y] + x[j])**p / C``.

    ``input``: float scores ``[N, C]`` or ``[C]`` (one sample).  ``target``: int64 class indices
    ``[N]`` (``[]`` or ``[1]`` for one sample).  ``p``: 1 or 2.  ``margin``: the margin (default 1).
    ``weight``: optional 1-D ``[C]`` weight of the target class.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' gives ``[N]`` (``[]`` for a ``[C]`` input).
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    ValueError for another ``p`` or a ``weight`` that is not 1-D; RuntimeError for an empty
    input, a target of another size or dtype, or a class index out of range.  Float tensors (float32 under autocast)."""
    from .elementwise import where
    from .indexing import gather
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x, t = _class_scores(input, target)
    n_classes = x.shape[1]
    ta = t._data
    if ta.size and (ta.min() < 0 or ta.max() >= n_classes):
        raise RuntimeError("target out of range")
    z = (margin - gather(x, 1, t.reshape(-1, 1)) + x).clamp_min(0)
    h = z if p == 1 else z * z
    xp = be(x).xp
    is_target = _make(xp.arange(n_classes)[None, :] == ta[:, None], D.bool_)
    h = where(is_target, 0.0, h)
    if weight is not None:
        h = h * weight[t].reshape(-1, 1)
    loss = h.sum(1) / n_classes
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@autocast_op("fp32")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss (torch.nn.functional.multilabel_margin_loss): per sample
    ``sum_{j in labels} sum_{k not in labels} max(0, 1 - (x[j] - x[k])) / C``.

    ``input``: float scores ``[N, C]`` or ``[C]``.  ``target``: int64 of the input's shape
    holding the sample's class indices, read up to the first -1 (the rest is ignored).
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' gives ``[N]`` (``[]`` for a ``[C]`` input).
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    RuntimeError for an empty input or one of more than 2 dims, a target of another shape or
    dtype, or a listed class index out of range.  Float tensors (float32 under autocast)."""
    from .elementwise import where
    from .indexing import gather
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.ndim > 2 or input.numel() == 0:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if target.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {_long(target.dtype)}")
    n_classes = input.shape[-1] if input.ndim else 1
    x = input.reshape(-1, n_classes)
    xp = be(x).xp
    ta = target._data.reshape(x.shape)
    listed = xp.cumprod(ta != -1, axis=1).astype(bool)          # the labels before the first -1
    if ((ta < 0) | (ta >= n_classes))[listed].any():
        raise RuntimeError("multilabel_margin_loss: target out of range")
    safe = xp.where(listed, ta, 0)
    is_target = (xp.arange(n_classes)[None, None, :] == safe[:, :, None]) & listed[:, :, None]
    is_target = is_target.any(axis=1)                          # [N, C]
    pairs = _make(listed[:, :, None] & ~is_target[:, None, :], D.bool_)    # [N, labels, C]
    xt = gather(x, 1, _make(safe, D.int64))                    # [N, labels]
    z = (1 - xt.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)
    loss = where(pairs, z, 0.0).sum((1, 2)) / n_classes
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@autocast_op("fp32")
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """Ranking hinge loss ``max(0, -target * (input1 - input2) + margin)``
    (torch.nn.functional.margin_ranking_loss): ``target`` 1 asks ``input1`` to rank above
    ``input2`` by ``margin``, -1 the reverse.

    ``input1``, ``input2``: float scores, e.g. ``[N]``; ``target``: 1 or -1; the three have the
    same number of dims and broadcast.  ``margin``: a Python number (default 0).
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the broadcast shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    RuntimeError for tensors of different numbers of dims.  Float tensors (float32 under autocast)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {_tsize(input1)}, input2: {_tsize(input2)}, target: {_tsize(target)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@autocast_op("fp32")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """Hinge embedding loss (torch.nn.functional.hinge_embedding_loss): ``input`` where
    ``target`` is 1 and ``max(0, margin - input)`` where it is -1, for ``input`` typically a
    distance between two embeddings.

    ``input``: float, any shape.  ``target``: 1 or -1, broadcast with the input.  ``margin``:
    the margin for the dissimilar pairs (default 1.0).
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the broadcast shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.  Float tensors (float32 under autocast)."""
    from .elementwise import where
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = where(target != 1, (margin - input).clamp_min(0), 0.0) + where(target != -1, input, 0.0)
    return _reduce(loss, reduction)


_COS_EMB_EPS = 1e-12


@autocast_op("fp32")
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """Cosine embedding loss (torch.nn.functional.cosine_embedding_loss): ``1 - cos(x1, x2)`` where
    ``target`` is 1 and ``max(0, cos(x1, x2) - margin)`` where it is -1; the cosine adds 1e-12
    to each squared norm, as torch does.

    ``input1``, ``input2``: float ``[N, D]`` with ``target`` ``[N]``, or ``[D]`` with a 0-dim
    ``target`` (values 1 or -1).  ``margin``: in [-1, 1], 0 to 0.5 suggested (default 0).
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' gives ``[N]``.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    RuntimeError for a target of more than 1 dim or inputs of another number of dims.
    Float tensors (float32 under autocast)."""
    from .elementwise import sqrt, where
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    dim = target.ndim
    if input1.ndim != dim + 1 or input2.ndim != dim + 1:
        raise RuntimeError(f"{dim}D target tensor expects {dim + 1}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + _COS_EMB_EPS
    mag2 = (input2 * input2).sum(dim) + _COS_EMB_EPS
    cos = prod / sqrt(mag1 * mag2)
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(loss, reduction)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm distance ``||x1 - x2 + eps||_p`` over the last dim
    (torch.nn.functional.pairwise_distance).

    ``x1``, ``x2``: ``[N, D]`` or ``[D]``, broadcast.  ``p``: the norm degree (default 2.0;
    ``inf`` the largest absolute difference).  ``eps``: added to the difference so that the
    norm's gradient stays finite at equal inputs (default 1e-6).  ``keepdim``: keep the last
    dim as size 1.  Returns ``[N]`` (``[N, 1]`` with ``keepdim``), ``[]`` for 1-D inputs; the
    inputs' floating dtype."""
    from .decompositions import vector_norm
    ndim = max(x1.ndim, x2.ndim)
    d = x1 - x2 + eps
    if ndim == 0:
        return vector_norm(d, p) if not keepdim else d.abs()
    return vector_norm(d, p, dim=ndim - 1, keepdim=keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine similarity ``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim``
    (torch.nn.functional.cosine_similarity); each input is divided by its clamped norm before
    the product, as torch does.

    ``x1``, ``x2``: tensors that broadcast, e.g. ``[N, D]``.  ``dim``: the dim reduced
    (default 1).  ``eps``: the smallest norm divided by (default 1e-8), so a zero vector gives
    0.  Returns the broadcast shape without ``dim`` (``[N]`` for ``[N, D]``).  RuntimeError,
    as torch, when the inputs' common dtype is not a floating type."""
    from .decompositions import vector_norm
    x1, x2 = _broadcast_pair(x1, x2)
    common = D.promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {_long(common)}")
    x1, x2 = (x if x.dtype is common else x.to(common) for x in (x1, x2))
    n1 = _value_clamped_min(vector_norm(x1, 2, dim=dim, keepdim=True), eps)
    n2 = _value_clamped_min(vector_norm(x2, 2, dim=dim, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _check_same_ndim(anchor, positive, negative):
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")


@autocast_op("fp32")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """Triplet loss ``max(0, margin + d(anchor, positive) - d(anchor, negative))``, ``d`` the
    pairwise p-norm distance with ``eps`` added to the difference
    (torch.nn.functional.triplet_margin_loss; Balntas et al., 2016; Schroff et al., FaceNet,
    arXiv:1503.03832).

    ``anchor``, ``positive``, ``negative``: float ``[N, D]`` or ``[D]``, the same number of dims
    (they broadcast).  ``margin``: positive (default 1.0).  ``p``: the norm degree (default 2).
    ``eps``: added to each difference before the norm (default 1e-6).  ``swap``: use
    ``min(d(anchor, negative), d(positive, negative))`` as the negative distance.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' gives ``[N]``.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.
    ValueError also for ``margin <= 0``; RuntimeError for inputs of different numbers of
    dims.  Float tensors (float32 under autocast)."""
    from .elementwise import minimum
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_same_ndim(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """Triplet loss ``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with a
    distance of the caller's choosing (torch.nn.functional.triplet_margin_with_distance_loss).

    ``anchor``, ``positive``, ``negative``: tensors of the same number of dims, e.g. ``[N, D]``.
    ``distance_function``: a callable ``(x, y) -> [N]`` non-negative distances;
    ``pairwise_distance`` when None.  ``margin``: positive (default 1.0).  ``swap``: use
    ``min(d(anchor, negative), d(positive, negative))`` as the negative distance (Balntas et
    al., 2016).  ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' gives the distances' shape.
    ValueError also for ``margin <= 0``; RuntimeError for inputs of different numbers of
    dims.  The three keyword-only arguments must be passed by name."""
    from .elementwise import minimum
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_same_ndim(anchor, positive, negative)
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


@autocast_op("fp32")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Negative log likelihood of ``target ~ Poisson(rate)`` (torch.nn.functional.poisson_nll_loss).

    ``input``: the log rate when ``log_input`` (the loss is ``exp(input) - target * input``),
    else the rate itself (``input - target * log(input + eps)``); any shape, broadcast with
    ``target`` (the counts).  ``eps``: keeps the log finite at a zero rate (used only when
    ``log_input`` is False; default 1e-8).  ``full``: add Stirling's approximation of
    ``log(target!)``, ``target * log(target) - target + 0.5 * log(2 pi target)``, where
    ``target > 1``.  ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the broadcast shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when either is given):
    either one set replaces ``reduction`` by 'none' when ``reduce`` is False, else 'sum' when
    ``size_average`` is False, else 'mean'.  Float tensors (float32 under autocast)."""
    from .elementwise import exp, log, where
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = exp(input) - target * input if log_input else input - target * log(input + eps)
    if full:
        stirling = target * log(target) - target + 0.5 * log(2 * math.pi * target)
        loss = loss + where(target <= 1, 0.0, stirling)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log likelihood of ``target ~ N(input, var)``:
    ``0.5 * (log(var) + (input - target)**2 / var)``, plus ``0.5 * log(2 pi)`` when ``full``
    (torch.nn.functional.gaussian_nll_loss; Nix and Weigend, 1994).

    ``input``: the predicted means, e.g. ``[N, D]``; ``target``: the input's shape (or
    broadcastable).  ``var``: the predicted variances, a non-negative Python number or a tensor
    of the input's shape, of the input's shape less the last dim, or of the input's shape with
    one dim of size 1 (homoscedastic along it).  ``eps``: the values of ``var`` are clamped
    below at it for stability (the gradient passes as if unclamped, as in torch; default
    1e-6).  ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    ValueError for another value. 'none' keeps the broadcast shape.
    ValueError also for a negative variance or a ``var`` of another shape."""
    from .elementwise import log
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        from .creation import ones_like
        var = var * ones_like(input)
    elif bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    var = _value_clamped_min(var, eps)
    d = input - target
    loss = 0.5 * (log(var) + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``
    (torch.nn.functional.linear_cross_entropy, its reference path).

    ``input``: float ``[in]`` or ``[N, in]``.  ``linear_weight``: ``[C, in]``, or
    ``[C, d1, ..., in]`` giving logits ``[N, C, d1, ...]`` (batched input only).
    ``linear_bias``: optional, the weight's shape without ``in``.  ``target``: int64 class
    indices ``[N]`` / ``[N, d1, ...]`` / ``[]``, or probabilities of the logits' shape.
    ``weight``: optional per-class ``[C]``.  ``reduction``: 'none', 'mean' or 'sum'.
    ``ignore_index``: the target index that adds nothing; None means -100.
    ``label_smoothing`` in [0, 1]: as cross_entropy.  ``options``: torch's chunking strategy,
    which saves memory, not results; it is accepted and the logits are made whole.
    RuntimeError for an input of other dims; otherwise cross_entropy's errors."""
    from .activation import linear
    if input.ndim not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    classes, *out_features, in_features = linear_weight.shape
    rows = math.prod(out_features) * classes
    w = linear_weight.reshape(rows, in_features) if out_features else linear_weight
    b = linear_bias.reshape(rows) if linear_bias is not None and out_features else linear_bias
    logits = linear(input, w, b)
    if out_features:
        logits = logits.reshape(tuple(input.shape[:-1]) + (classes, *out_features))
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index, label_smoothing=label_smoothing)
