"""Loss functions (torch.nn.functional.cross_entropy, nll_loss, mse_loss, l1_loss,
binary_cross_entropy, binary_cross_entropy_with_logits).

cross_entropy with class-index targets is one node (log_softmax and nll fused): the loss
is ``sum_c A[i, c] * log_softmax(x)[i, c]`` for a constant coefficient matrix ``A`` that
carries the class weights, label smoothing, ignored targets and the 'mean' divisor, so
its gradient is ``A*g - softmax(x) * sum_c(A*g)``.
"""

from __future__ import annotations

import warnings

from .. import _dtype as D
from .._tensor import Tensor, _make
from ._helpers import _STATE, be, needs_grad, record

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits"]


def _reduction(size_average, reduce, reduction):
    """The reduction named by torch's legacy ``size_average``/``reduce`` flags, else ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


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

def _index_coeffs(xp, target, n_classes, weight, ignore_index, smoothing, reduction, dtype):
    """The coefficient matrix ``A`` ``[N, C, *]`` (class dim 1) and the per-element mask."""
    t = target
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")
    safe = xp.where(valid, t, 0)
    w = weight if weight is not None else None
    wt = w[safe] if w is not None else xp.ones(t.shape, dtype=dtype)
    wt = xp.where(valid, wt, 0).astype(dtype, copy=False)        # w_{t_i} (0 where ignored)
    classes = xp.arange(n_classes).reshape((1, n_classes) + (1,) * (t.ndim - 1))
    onehot = (classes == safe[:, None]).astype(dtype)
    a = -(1 - smoothing) * onehot * wt[:, None]
    if smoothing:
        wc = (w if w is not None else xp.ones(n_classes, dtype=dtype)).astype(dtype, copy=False)
        wc = wc.reshape((1, n_classes) + (1,) * (t.ndim - 1))
        a = a - (smoothing / n_classes) * wc * valid[:, None].astype(dtype)
    if reduction == "mean":
        denom = wt.sum()
        with _ignore_fp(xp):
            a = a / denom
    return a.astype(dtype, copy=False)


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
    if not isinstance(target, Tensor):
        raise TypeError(f"{op}(): argument 'target' must be Tensor, not {type(target).__name__}")
    if target.dtype not in (D.int64, D.uint8, D.int32):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_long(target.dtype)}"
                           if op == "nll_loss" else
                           f"expected scalar type Long but found {_long(target.dtype)}")
    if input.ndim == 1:
        if target.ndim != 0:
            raise RuntimeError("1D target tensor expected, multi-target not supported" if target.ndim > 1 else
                               "0D or 1D target tensor expected, multi-target not supported")
        return
    if target.ndim != input.ndim - 1:
        raise RuntimeError(f"Expected target size {_expected(input)}, got {list(target.shape)}"
                           if input.ndim > 2 else "0D or 1D target tensor expected, multi-target not supported")
    if input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if tuple(input.shape[2:]) != tuple(target.shape[1:]):
        raise RuntimeError(f"Expected target size {_expected(input)}, got {list(target.shape)}")


def _expected(input):
    return "[" + ", ".join(str(s) for i, s in enumerate(input.shape) if i != 1) + "]"


def _long(d):
    from ._helpers import _type_name
    return _type_name(d)


def _check_weight(weight, n_classes, input):
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no classes but "
                           f"got weight tensor of shape: {list(weight.shape)}")


def _batched(input, target):
    """Unbatched ``[C]`` input with a 0-d target as a batch of one."""
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape(1), True
    return input, target, False


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits ``input`` ``[N, C]`` / ``[N, C, d1, ...]`` / ``[C]`` and
    ``target``: class indices (int64, ``[N]`` / ``[N, d1, ...]`` / ``[]``; ``ignore_index``
    contributes nothing) or class probabilities of the input's shape.  ``weight`` ``[C]``
    rescales classes ('mean' then divides by the summed weights of the targets);
    ``label_smoothing`` mixes the target with the uniform distribution
    (torch.nn.functional.cross_entropy)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.ndim == 0:
        raise RuntimeError("cross_entropy: input must have at least one dimension")
    c_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[c_dim]
    _check_weight(weight, n_classes, input)
    if isinstance(target, Tensor) and target.dtype.is_floating_point:
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing, c_dim, n_classes)
    _check_index_target(input, target, "cross_entropy")
    x, t, unbatched = _batched(input, target)
    xp = be(x).xp
    arr = x._data
    shifted = arr - arr.max(axis=1, keepdims=True)
    lse = xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
    lsm = shifted - lse
    a = _index_coeffs(xp, t._data, n_classes, None if weight is None else weight._data, ignore_index,
                      label_smoothing, reduction, arr.dtype)
    per = (a * lsm).sum(axis=1)
    out = per if reduction == "none" else per.sum()
    if unbatched and reduction == "none":
        out = out.reshape(())
    r = _make(xp.asarray(out, dtype=arr.dtype), input.dtype)
    if needs_grad(x):
        record("NllLossBackward0" if not label_smoothing else "CrossEntropyLossBackward0", _ce_rule, (x,), r,
               (x, _make(a, x.dtype), _make(lsm, x.dtype), reduction))
    return r


def _ce_rule(g, x, a, lsm, reduction):
    from .elementwise import exp
    from .reduction import softmax
    from .reduction import sum as _sum
    if reduction == "none":
        g = g.reshape((a.shape[0],) + tuple(a.shape[2:])).unsqueeze(1)
    ag = a * g
    p = softmax(x, 1) if _STATE.enabled and x._requires_grad else exp(lsm)
    return ag - p * _sum(ag, 1, keepdim=True)


def _cross_entropy_probs(input, target, weight, reduction, smoothing, c_dim, n_classes):
    from .reduction import log_softmax
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected target size {list(input.shape)}, got {list(target.shape)}")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_long(input.dtype)} but found {_long(target.dtype)}")
    lsm = log_softmax(input, c_dim)
    y = target if not smoothing else target * (1 - smoothing) + smoothing / n_classes
    prod = lsm * y
    if weight is not None:
        prod = prod * weight.reshape((n_classes,) + (1,) * (input.ndim - c_dim - 1))
    per = -prod.sum(c_dim)
    if reduction == "mean":
        return per.sum() / (input.numel() // n_classes if input.numel() else 1)
    return _reduce(per, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood of log-probabilities ``input`` ``[N, C]`` / ``[N, C, d1, ...]`` /
    ``[C]`` at class indices ``target`` (torch.nn.functional.nll_loss); ``weight`` and
    ``ignore_index`` as in cross_entropy."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.ndim == 0:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    n_classes = input.shape[0 if input.ndim == 1 else 1]
    _check_weight(weight, n_classes, input)
    _check_index_target(input, target, "nll_loss")
    x, t, unbatched = _batched(input, target)
    xp = be(x).xp
    a = _index_coeffs(xp, t._data, n_classes, None if weight is None else weight._data, ignore_index, 0.0,
                      reduction, x._data.dtype)
    per = (a * x._data).sum(axis=1)
    out = per if reduction == "none" else per.sum()
    if unbatched and reduction == "none":
        out = out.reshape(())
    r = _make(xp.asarray(out, dtype=x._data.dtype), input.dtype)
    if needs_grad(x):
        record("NllLossBackward0", _nll_rule, (x,), r, (_make(a, x.dtype), reduction))
    return r


def _nll_rule(g, a, reduction):
    if reduction == "none":
        g = g.reshape((a.shape[0],) + tuple(a.shape[2:])).unsqueeze(1)
    return a * g


# ---- regression and binary losses --------------------------------------------------

def _check_sizes(input, target, op):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input - target)**2``, reduced (torch.nn.functional.mse_loss)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_sizes(input, target, "mse_loss")
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|``, reduced (torch.nn.functional.l1_loss)."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_sizes(input, target, "l1_loss")
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-w * (y*log(x) + (1-y)*log(1-x))`` for probabilities ``input`` and ``target`` of the
    same shape; each log is clamped at -100 as torch does
    (torch.nn.functional.binary_cross_entropy)."""
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


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits:
    ``(1 - y) * x + (1 + (pos_weight - 1) * y) * log(1 + exp(-x))``, times ``weight``
    (torch.nn.functional.binary_cross_entropy_with_logits)."""
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
