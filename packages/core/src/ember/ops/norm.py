"""Normalisation layers (torch.nn.functional.batch_norm, layer_norm), each one graph node
with a hand-derived gradient.

Writing x_hat = (x - mean) * invstd over the n elements of each normalised group and
gy_hat = grad * weight, the input gradient in training mode is
``invstd / n * (n * gy_hat - sum(gy_hat) - x_hat * sum(gy_hat * x_hat))``; with fixed
(running) statistics it is ``gy_hat * invstd``.  The rules use ember ops; when a graph of
the gradient is wanted (create_graph=True) they recompute x_hat from x with ember ops, so
double backward is exact.
"""

from __future__ import annotations

from .._tensor import _make
from ._helpers import _STATE, be, needs_grad, record

__all__ = ["batch_norm", "layer_norm"]


def _req(t):
    return t is not None and t._requires_grad


def _stats(xp, x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axis=axes, keepdims=True)
    invstd = 1.0 / xp.sqrt(var + eps)
    return mean, var, xc, invstd.astype(x.dtype, copy=False)


def _bshape(ndim, c_axis, c):
    shape = [1] * ndim
    shape[c_axis] = c
    return tuple(shape)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-05):
    """Batch normalisation over all dims but the channel dim 1: input ``[N, C]``, ``[N, C, L]``
    or ``[N, C, H, W]``; ``running_mean``/``running_var``/``weight``/``bias`` ``[C]``.

    In training the batch statistics (biased variance) normalise, and the running
    statistics, when given, are updated in place: ``running = (1 - momentum) * running +
    momentum * batch`` with the unbiased variance. Otherwise the running statistics are
    used (torch.nn.functional.batch_norm)."""
    if input.ndim < 2:
        raise ValueError(f"Expected 2D or more input (got {input.ndim}D input)")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    axes = (0,) + tuple(range(2, input.ndim))
    n = input.numel() // max(c, 1)
    if training and n <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    xp = be(input).xp
    x = input._data
    bshape = _bshape(input.ndim, 1, c)
    if training:
        mean, var, xc, invstd = _stats(xp, x, axes, eps)
        if running_mean is not None:
            running_mean._data *= (1 - momentum)
            running_mean._data += (momentum * mean.reshape(c)).astype(running_mean._data.dtype, copy=False)
            running_mean._vc[0] += 1
        if running_var is not None:
            unbiased = var.reshape(c) * (n / (n - 1))
            running_var._data *= (1 - momentum)
            running_var._data += (momentum * unbiased).astype(running_var._data.dtype, copy=False)
            running_var._vc[0] += 1
    else:
        mean = running_mean._data.reshape(bshape).astype(x.dtype, copy=False)
        xc = x - mean
        invstd = (1.0 / xp.sqrt(running_var._data.reshape(bshape) + eps)).astype(x.dtype, copy=False)
    xhat = xc * invstd
    out = xhat
    if weight is not None:
        out = out * weight._data.reshape(bshape)
    if bias is not None:
        out = out + bias._data.reshape(bshape)
    r = _make(out.astype(x.dtype, copy=False), input.dtype)
    if needs_grad(input, weight, bias):
        record("NativeBatchNormBackward0", _norm_rule, (input, weight, bias), r,
               (input, weight, _make(xhat, input.dtype), _make(invstd, input.dtype), axes, axes, bshape,
                training, eps, None if training else running_mean, None if training else running_var, _req(bias)))
    return r


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalise over the last ``len(normalized_shape)`` dims: input ``[*, *normalized_shape]``,
    ``weight``/``bias`` of ``normalized_shape`` (torch.nn.functional.layer_norm)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    if k == 0 or tuple(input.shape[input.ndim - k:]) != normalized_shape or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(normalized_shape)}")
    xp = be(input).xp
    x = input._data
    axes = tuple(range(input.ndim - k, input.ndim))
    _, _, xc, invstd = _stats(xp, x, axes, eps)
    xhat = xc * invstd
    out = xhat
    if weight is not None:
        out = out * weight._data
    if bias is not None:
        out = out + bias._data
    r = _make(out.astype(x.dtype, copy=False), input.dtype)
    if needs_grad(input, weight, bias):
        record("NativeLayerNormBackward0", _norm_rule, (input, weight, bias), r,
               (input, weight, _make(xhat, input.dtype), _make(invstd, input.dtype), axes,
                tuple(range(input.ndim - k)), normalized_shape, True, eps, None, None, _req(bias)))
    return r


def _norm_rule(g, x, weight, xhat, invstd, stat_axes, w_axes, wshape, batch_stats, eps, running_mean,
               running_var, bias_req):
    from .elementwise import rsqrt
    from .reduction import mean as _mean
    from .reduction import sum as _sum
    if not _STATE.enabled and batch_stats:
        return _norm_rule_arrays(g, x, weight, xhat, invstd, stat_axes, w_axes, wshape, bias_req)
    if _STATE.enabled and x._requires_grad:
        # building the gradient's graph: x_hat and invstd as functions of x
        if batch_stats:
            xc = x - _mean(x, stat_axes, keepdim=True)
            invstd = rsqrt(_mean(xc * xc, stat_axes, keepdim=True) + eps)
        else:
            xc = x - running_mean.reshape(wshape)
            invstd = rsqrt(running_var.reshape(wshape) + eps)
        xhat = xc * invstd
    gw = gb = gx = None
    if weight is not None and weight._requires_grad:
        gw = _sum(g * xhat, w_axes).reshape(weight.shape) if w_axes else (g * xhat)
    if bias_req:
        gb = _sum(g, w_axes) if w_axes else g
    if x._requires_grad:
        gyh = g * weight.reshape(wshape) if weight is not None else g
        if batch_stats:
            n = 1
            for a in stat_axes:
                n *= x.shape[a]
            s1 = _sum(gyh, stat_axes, keepdim=True)
            s2 = _sum(gyh * xhat, stat_axes, keepdim=True)
            gx = (invstd / n) * (gyh * n - s1 - xhat * s2)
        else:
            gx = gyh * invstd
    return gx, gw, gb


def _norm_rule_arrays(g, x, weight, xhat, invstd, stat_axes, w_axes, wshape, bias_req):
    """The training-mode rule on arrays (no graph of the gradient wanted): fewer passes."""
    ga, xh, inv = g._data, xhat._data, invstd._data
    gxh = ga * xh
    gw = gb = gx = None
    if weight is not None and weight._requires_grad:
        gw = _make(gxh.sum(axis=w_axes).reshape(weight.shape) if w_axes else gxh, g.dtype)
    if bias_req:
        gb = _make(ga.sum(axis=w_axes) if w_axes else ga, g.dtype)
    if x._requires_grad:
        m1 = ga.mean(axis=stat_axes, keepdims=True)
        m2 = gxh.mean(axis=stat_axes, keepdims=True)
        scale = inv if weight is None else inv * weight._data.reshape(wshape)
        if weight is not None and stat_axes != w_axes:  # layer norm: the weight varies inside a group
            gyh = ga * weight._data.reshape(wshape)
            m1 = gyh.mean(axis=stat_axes, keepdims=True)
            m2 = (gyh * xh).mean(axis=stat_axes, keepdims=True)
            gx = _make((inv * (gyh - m1 - xh * m2)).astype(ga.dtype, copy=False), g.dtype)
        else:
            gx = _make((scale * (ga - m1 - xh * m2)).astype(ga.dtype, copy=False), g.dtype)
    return gx, gw, gb
