"""Normalisation layers (torch.nn.functional.batch_norm, layer_norm, group_norm,
instance_norm, rms_norm, local_response_norm, normalize).  batch_norm, layer_norm and the
standardisation inside group_norm and instance_norm are one graph node each with a
hand-derived gradient; the others are composed of differentiable ember ops.

Writing x_hat = (x - mean) * invstd over the n elements of each normalised group and
gy_hat = grad * weight, the input gradient in training mode is
``invstd / n * (n * gy_hat - sum(gy_hat) - x_hat * sum(gy_hat * x_hat))``; with fixed
(running) statistics it is ``gy_hat * invstd``.  The rules use ember ops; when a graph of
the gradient is wanted (create_graph=True) they recompute x_hat from x with ember ops, so
double backward is exact.

Compiled kernels (cpu/kernels/norm.py) take numpy float32/float64 arrays: batch_norm,
layer_norm and the standardisation then run as one pass forward and one backward, saving
the per-row or per-channel mean and rstd instead of x_hat; group_norm's kernel includes
its affine step (one node, as torch's), and rms_norm's replaces its chain of ops with one
node named as the chain's last (``MulBackward0``).  Other arrays take the numpy code here.
"""

from __future__ import annotations

import math

import numpy

from .._autocast import cast_inputs
from .._tensor import _make
from ..autograd.graph import on_arrays
from ..cpu import kernels
from ..cuda.kernels import norm as cuda_norm
from ._helpers import _STATE, be, needs_grad, record, wrap

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm",
           "normalize"]


def _req(t):
    return t is not None and t._requires_grad


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _einsum_sums(xp, a) -> bool:
    """Whether :func:`_sum_kept` can take ``a``: float32/float64 on an array module with
    einsum (half types keep numpy's reductions, which accumulate them in float32)."""
    return a.dtype.char in "fd" and hasattr(xp, "einsum") and a.ndim <= len(_LETTERS)


def _sum_kept(xp, a, axes, b=None):
    """The sum over ``axes`` of ``a`` (or of ``a * b``), reduced dims kept, in one ``einsum``
    pass with no temporary array: 2-8x faster than a product then ``sum``, and as accurate
    (float32/float64 only, see :func:`_einsum_sums`)."""
    axes = tuple(ax % a.ndim for ax in axes)
    dims = _LETTERS[:a.ndim]
    out = "".join(d for i, d in enumerate(dims) if i not in axes)
    r = xp.einsum(f"{dims}->{out}", a) if b is None else xp.einsum(f"{dims},{dims}->{out}", a, b)
    return r.reshape(tuple(1 if i in axes else n for i, n in enumerate(a.shape)))


def _low(x) -> bool:
    """float16 or bfloat16 storage: torch normalizes these in float32 (its accumulate type)
    and rounds the result once."""
    return x.dtype.itemsize == 2 and x.dtype.name in ("float16", "bfloat16")


def _stats(xp, x, axes, eps):
    """mean, biased variance, ``x - mean`` and ``1/sqrt(var + eps)`` over ``axes`` (keepdims),
    in float32 for float16/bfloat16 ``x``, else in its dtype."""
    if _low(x):
        x = x.astype(xp.float32)
    if _einsum_sums(xp, x):
        n = math.prod(x.shape[ax] for ax in axes)
        mean = _sum_kept(xp, x, axes) / n
        xc = x - mean
        var = _sum_kept(xp, xc, axes, xc) / n
    else:
        mean = x.mean(axis=axes, keepdims=True)
        xc = x - mean
        var = (xc * xc).mean(axis=axes, keepdims=True)
    invstd = 1.0 / xp.sqrt(var + eps)
    return mean, var, xc, invstd.astype(x.dtype, copy=False)


def _as(a, like):
    """``a`` as a tensor of ``like``'s dtype (a float32 statistic of a float16/bfloat16 input
    rounded to it)."""
    return _make(a.astype(like._data.dtype, copy=False), like.dtype)


def _bshape(ndim, c_axis, c):
    shape = [1] * ndim
    shape[c_axis] = c
    return tuple(shape)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-05):
    """Batch normalization (torch.nn.functional.batch_norm; Ioffe and Szegedy, arXiv:1502.03167):
    ``(x - mean) / sqrt(var + eps) * weight + bias`` per channel, the statistics taken over all
    dims but the channel dim 1.

    ``input``: float ``[N, C]``, ``[N, C, L]``, ``[N, C, H, W]`` or ``[N, C, D, H, W]``; the
    result has its shape and dtype (float16 and bfloat16 compute in float32, rounded once).
    ``running_mean``, ``running_var``: ``[C]`` buffers, or None
    (allowed only in training). ``weight``, ``bias``: optional ``[C]`` affine parameters.
    ``training``: normalize by the batch statistics (biased variance) and update the running
    ones in place, when given, as ``running = (1 - momentum) * running + momentum * batch`` with
    the unbiased variance; otherwise normalize by the running statistics. ``momentum``: the
    update factor (default 0.1). ``eps``: added to the variance (default 1e-5).

    ValueError for an input of fewer than 2 dims, or a single value per channel in training;
    RuntimeError for a vector of another size than ``C`` or missing running statistics in
    evaluation."""
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
    x = input._data
    bshape = _bshape(input.ndim, 1, c)
    needs = (_req(input), _req(weight))
    if _accepts(x, weight, bias):
        view, restore = _channel_view(x)
        if view is not None:
            return _batch_norm_kernel(input, view, restore, running_mean, running_var, weight, bias, training,
                                      momentum, eps, axes, bshape, n, needs)
    xp = be(input).xp
    if training:
        mean, var, xc, invstd = _stats(xp, x, axes, eps)
        _update_running(running_mean, running_var, mean, var, n, momentum)
    else:
        work = xp.float32 if _low(x) else x.dtype
        mean = running_mean._data.reshape(bshape).astype(work, copy=False)
        xc = x.astype(work, copy=False) - mean
        invstd = (1.0 / xp.sqrt(running_var._data.reshape(bshape).astype(work, copy=False) + eps)).astype(
            work, copy=False)
    xc *= invstd  # xc is a fresh array: x_hat in place, one allocation less
    xhat = xc
    if weight is not None:
        out = xhat * weight._data.reshape(bshape)
        if bias is not None:
            out += bias._data.reshape(bshape)
    else:
        out = xhat if bias is None else xhat + bias._data.reshape(bshape)
    r = _make(out.astype(x.dtype, copy=False), input.dtype)
    if needs_grad(input, weight, bias):
        record("NativeBatchNormBackward0", _norm_rule, (input, weight, bias), r,
               (input, weight, _as(xhat, input), _as(invstd, input), axes, axes, bshape,
                training, eps, None if training else running_mean, None if training else running_var, _req(bias),
                None, needs))
    return r


def _update_running(running_mean, running_var, mean, var, n, momentum):
    """``running = (1 - momentum) * running + momentum * batch`` in place (the variance
    unbiased), bumping each buffer's version."""
    if running_mean is not None:
        c = running_mean.numel()
        running_mean._data *= (1 - momentum)
        running_mean._data += (momentum * mean.reshape(c)).astype(running_mean._data.dtype, copy=False)
        running_mean._vc[0] += 1
    if running_var is not None:
        c = running_var.numel()
        unbiased = var.reshape(c) * (n / (n - 1))
        running_var._data *= (1 - momentum)
        running_var._data += (momentum * unbiased).astype(running_var._data.dtype, copy=False)
        running_var._vc[0] += 1


def _accepts(x, *tensors):
    """Whether the compiled kernels take ``x`` with these (optional) parameter tensors."""
    return kernels.accepts(x, *(t._data for t in tensors if t is not None))


def _row_kernels(x, *tensors):
    """The row-normalisation kernels (layer and rms norm) for array ``x`` with these
    (optional) parameter tensors: the CPU's, the GPU's, or None where neither takes them."""
    arrays = (x, *(t._data for t in tensors if t is not None))
    if kernels.accepts(*arrays):
        return kernels.norm
    if cuda_norm.accepts(*arrays):
        return cuda_norm
    return None


def _channel_view(x):
    """``x`` ``[N, C, *]`` as the kernels' ``[N, C, S]`` (contiguous) or ``[M, C]`` (channels
    last, or no spatial dims) view, and the function that gives a result of that view back
    in ``x``'s shape and layout; (None, None) for other layouts."""
    n, c = x.shape[:2]
    s = x.size // max(n * c, 1)
    if x.flags.c_contiguous:
        view = x.reshape(n * s, c) if s == 1 else x.reshape(n, c, s)
        return view, lambda r: r.reshape(x.shape)
    order = kernels.dense_order(x)
    if order != (0,) + tuple(range(2, x.ndim)) + (1,):
        return None, None
    t = x.transpose(order)
    inverse = tuple(int(i) for i in numpy.argsort(order))
    return t.reshape(-1, c), lambda r: r.reshape(t.shape).transpose(inverse)


def _batch_norm_kernel(input, view, restore, running_mean, running_var, weight, bias, training, momentum, eps,
                       axes, bshape, n, needs):
    """batch_norm's forward on the compiled kernels: statistics in one pass (training),
    then ``x * scale + shift`` with the folded per-channel scale and shift."""
    x = input._data
    dt = x.dtype
    if training:
        mean, var = kernels.norm.channel_stats(view)
        _update_running(running_mean, running_var, mean.astype(dt), var.astype(dt), n, momentum)
    else:
        mean = running_mean._data.astype(numpy.float64)
        var = running_var._data.astype(numpy.float64)
    rstd = 1.0 / numpy.sqrt(var + eps)
    scale = rstd if weight is None else rstd * weight._data.astype(numpy.float64)
    shift = -mean * scale
    if bias is not None:
        shift += bias._data
    r = _make(restore(kernels.norm.channel_apply(view, scale, shift)), input.dtype)
    if needs_grad(input, weight, bias):
        record("NativeBatchNormBackward0", _norm_rule, (input, weight, bias), r,
               (input, weight, None, None, axes, axes, bshape, training, eps, None if training else running_mean,
                None if training else running_var, _req(bias), ("channels", mean, rstd), needs))
    return r


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Layer normalization over the last ``len(normalized_shape)`` dims
    (torch.nn.functional.layer_norm; Ba et al., arXiv:1607.06450): ``(x - mean) / sqrt(var +
    eps) * weight + bias``, biased variance.

    ``input``: float ``[*, *normalized_shape]``; the result has its shape and dtype (float16 and
    bfloat16 compute in float32, rounded once).
    ``normalized_shape``: an int or a sequence, the trailing sizes normalized together.
    ``weight``, ``bias``: optional, of ``normalized_shape``. ``eps``: added to the variance
    (default 1e-5). RuntimeError when the trailing dims or the parameters' shapes differ from
    ``normalized_shape`` (or it is empty)."""
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
    x = input._data
    axes = tuple(range(input.ndim - k, input.ndim))
    width = math.prod(normalized_shape)
    needs = (_req(input), _req(weight))
    row_kernels = _row_kernels(x, weight, bias) if width else None
    if row_kernels is not None:
        out, mean, _, rstd = row_kernels.rows_forward(
            x.reshape(-1, width), None if weight is None else weight._data.reshape(-1),
            None if bias is None else bias._data.reshape(-1), eps)
        r = _make(out.reshape(x.shape), input.dtype)
        if needs_grad(input, weight, bias):
            record("NativeLayerNormBackward0", _norm_rule, (input, weight, bias), r,
                   (input, weight, None, None, axes, tuple(range(input.ndim - k)), normalized_shape, True, eps,
                    None, None, _req(bias), ("rows", mean, rstd), needs))
        return r
    xp = be(input).xp
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
               (input, weight, _as(xhat, input), _as(invstd, input), axes,
                tuple(range(input.ndim - k)), normalized_shape, True, eps, None, None, _req(bias), None, needs))
    return r


def _standardize(input, axes, eps, name):
    """``(x - mean) / sqrt(var + eps)`` over ``axes`` as one node (no affine); also returns
    the mean and biased variance arrays, keepdims, for running statistics."""
    x = input._data
    width = math.prod(x.shape[a] for a in axes)
    if width and axes == tuple(range(x.ndim - len(axes), x.ndim)) and _accepts(x):
        keep = x.shape[:x.ndim - len(axes)] + (1,) * len(axes)
        out, mean, var, invstd = kernels.norm.rows_forward(x.reshape(-1, width), None, None, eps)
        mean, var, invstd = mean.reshape(keep), var.reshape(keep), invstd.reshape(keep)
        r = _make(out.reshape(x.shape), input.dtype)
    else:
        mean, var, xc, invstd = _stats(be(input).xp, x, axes, eps)
        r = _make((xc * invstd).astype(x.dtype, copy=False), input.dtype)
    if needs_grad(input):
        record(name, _norm_rule, (input, None, None), r,
               (input, None, r, _as(invstd, input), axes, axes, None, True, eps, None, None, False, None,
                (True, False)))
    return r, mean, var


def _affine(out, weight, bias):
    """``out * weight + bias`` with the per-channel ``weight``/``bias`` ``[C]`` broadcast on dim 1."""
    shape = _bshape(out.ndim, 1, out.shape[1])
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _check_channel_vectors(input, weight, bias):
    c = input.shape[1]
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Group normalization (torch.nn.functional.group_norm; Wu and He, arXiv:1803.08494): the
    channels of each sample split into ``num_groups`` groups, each normalized over its channels
    and spatial dims (biased variance), then scaled and shifted per channel.

    ``input``: float ``[N, C, *]``; the result has its shape and dtype (float16 and
    bfloat16 compute in float32, rounded once). ``num_groups``: a
    positive divisor of ``C``. ``weight``, ``bias``: optional ``[C]``. ``eps``: added to the
    variance (default 1e-5).

    RuntimeError when the input has fewer than 2 dims, ``C`` is not divisible by ``num_groups``
    or ``weight``/``bias`` are not ``[C]``; ValueError when a group holds a single value."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    per_group = n * c // num_groups
    for s in input.shape[2:]:
        per_group *= s
    if per_group == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{[n * c // num_groups, num_groups] + list(input.shape[2:])}")
    _check_channel_vectors(input, weight, bias)
    if _low(input._data):  # in float32, rounded once (torch's accumulate type)
        return group_norm(input.float(), num_groups, None if weight is None else weight.float(),
                          None if bias is None else bias.float(), eps).to(input.dtype)
    if input.numel() and _accepts(input._data, weight, bias):
        out, mean, rstd = kernels.norm.group_forward(input._data, num_groups, None if weight is None else weight._data,
                                                     None if bias is None else bias._data, eps)
        r = _make(out, input.dtype)
        if needs_grad(input, weight, bias):
            record("NativeGroupNormBackward0", _group_rule, (input, weight, bias), r,
                   (input, weight, mean, rstd, num_groups, eps, _req(bias), (_req(input), _req(weight))))
        return r
    grouped = input.reshape(n, num_groups, (input.numel() // max(n * num_groups, 1)))
    xhat, _, _ = _standardize(grouped, (2,), eps, "NativeGroupNormBackward0")
    return _affine(xhat.reshape(input.shape), weight, bias)


def _group_rule(g, x, weight, mean, rstd, groups, eps, bias_req, needs):
    """Gradients of group norm with its affine step, one node as torch's (the compiled
    forward); ember ops, recomputing the statistics from ``x`` when a graph of the
    gradient is built, so double backward is exact."""
    from .elementwise import rsqrt
    from .reduction import mean as _mean
    from .reduction import sum as _sum
    need_x, need_w = needs
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    if _STATE.enabled and x._requires_grad:
        xc = xg - _mean(xg, (2,), keepdim=True)
        inv = rsqrt(_mean(xc * xc, (2,), keepdim=True) + eps)
    else:
        inv = wrap(rstd.reshape(n, groups, 1), x.dtype)
        xc = xg - wrap(mean.reshape(n, groups, 1), x.dtype)
    xhat = xc * inv
    red = (0,) + tuple(range(2, x.ndim))
    gw = gb = gx = None
    if weight is not None and need_w:
        gw = _sum(g * xhat.reshape(x.shape), red)
    if bias_req:
        gb = _sum(g, red)
    if need_x:
        gy = (g * weight.reshape(_bshape(x.ndim, 1, c)) if weight is not None else g).reshape(n, groups, -1)
        cnt = gy.shape[2]
        s1 = _sum(gy, (2,), keepdim=True)
        s2 = _sum(gy * xhat, (2,), keepdim=True)
        gx = ((inv / cnt) * (gy * cnt - s1 - xhat * s2)).reshape(x.shape)
    return gx, gw, gb


def _group_arrays(g, x, weight, mean, rstd, groups, eps, bias_req, needs):
    if x.size and kernels.accepts(g, x, *(() if weight is None else (weight,))):
        gx, gw, gb = kernels.norm.group_backward(g, x, groups, weight, mean, rstd, needs[0])
        return gx, (gw if weight is not None and needs[1] else None), (gb if bias_req else None)
    res = _group_rule(wrap(g), wrap(x), None if weight is None else wrap(weight), mean, rstd, groups, eps, bias_req,
                      needs)
    return tuple(None if v is None else v._data for v in res)


_group_rule = on_arrays(_group_arrays)(_group_rule)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-05):
    """Instance normalization (torch.nn.functional.instance_norm; Ulyanov et al.,
    arXiv:1607.08022): each channel of each sample normalized over its spatial dims (biased
    variance), then scaled and shifted per channel.

    ``input``: float ``[N, C, *]`` (e.g. ``[N, C, H, W]``); the result has its shape and dtype
    (float16 and bfloat16 compute in float32, rounded once).
    ``running_mean``, ``running_var``: optional ``[C]`` buffers. ``weight``, ``bias``: optional
    ``[C]``. ``use_input_stats``: normalize by each instance's statistics and update the running
    ones in place, when given, by ``momentum`` (default 0.1) with the batch average of the
    per-instance mean and unbiased variance; when False the running statistics normalize, as
    batch_norm in evaluation. ``eps``: added to the variance (default 1e-5).

    ValueError for a single spatial element with ``use_input_stats``; RuntimeError for missing
    running statistics without it, or vectors of another size than ``C``."""
    spatial = 1
    for s in input.shape[2:]:
        spatial *= s
    if use_input_stats and spatial == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    n, c = input.shape[0], input.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {n * c} elements not {n * t.numel()}")
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    xhat, mean, var = _standardize(input, tuple(range(2, input.ndim)), eps, "NativeBatchNormBackward0")
    for buf, stat in ((running_mean, mean), (running_var, var * (spatial / (spatial - 1)))):
        if buf is not None:
            batch_avg = stat.reshape(n, c).mean(axis=0)
            buf._data *= (1 - momentum)
            buf._data += (momentum * batch_avg).astype(buf._data.dtype, copy=False)
            buf._vc[0] += 1
    return _affine(xhat, weight, bias)


def _normalized_shape(input, normalized_shape):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}")
    return normalized_shape


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root mean square normalization ``x / sqrt(mean(x**2) + eps) * weight`` over the last dims
    (torch.nn.functional.rms_norm; Zhang and Sennrich, arXiv:1910.07467).

    ``input``: float ``[*, *normalized_shape]``; the result has its shape and dtype (float16 and
    bfloat16 compute in float32). ``normalized_shape``: an int or a sequence, the trailing sizes
    normalized together. ``weight``: optional, of ``normalized_shape``. ``eps``: added to the
    mean square; None is the machine epsilon of the computing dtype (float32's for float16 and
    bfloat16, as torch does). RuntimeError when the trailing dims or ``weight``'s shape differ
    from ``normalized_shape``."""
    from .. import _dtype as D
    from .elementwise import rsqrt
    from .reduction import mean as _mean
    normalized_shape = _normalized_shape(input, normalized_shape)
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(normalized_shape)}")
    low = input.dtype in (D.float16, D.bfloat16)
    x = input.float() if low else input
    if eps is None:
        import ml_dtypes
        eps = float(ml_dtypes.finfo(x.dtype.np).eps)
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    width = math.prod(normalized_shape)
    row_kernels = _row_kernels(x._data, weight) if not low and width else None
    if row_kernels is not None:
        out, rstd = row_kernels.rms_forward(x._data.reshape(-1, width),
                                             None if weight is None else weight._data.reshape(-1), eps)
        r = _make(out.reshape(x.shape), x.dtype)
        if needs_grad(x, weight):
            # one node for the whole chain, named as the chain's last node (a product)
            record("MulBackward0", _rms_rule, (x, weight), r, (x, weight, rstd, dims, eps, (_req(x), _req(weight))))
        return r
    out = x * rsqrt(_mean(x * x, dims, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out.to(input.dtype) if low else out


def _rms_rule(g, x, weight, rstd, dims, eps, needs):
    """Gradients of ``x * r * w`` with ``r = 1/sqrt(mean(x^2) + eps)`` over ``dims``:
    ``gx = r * (gy - x_hat * mean(gy * x_hat))`` with ``gy = g * w``, ``x_hat = x * r``, and
    ``gw = sum(g * x_hat)`` over the leading dims; ember ops, so differentiable again."""
    from .elementwise import rsqrt
    from .reduction import mean as _mean
    from .reduction import sum as _sum
    need_x, need_w = needs
    if _STATE.enabled and x._requires_grad:
        r = rsqrt(_mean(x * x, dims, keepdim=True) + eps)
    else:
        r = wrap(rstd.reshape(_keep_shape(x.shape, dims)), x.dtype)
    xhat = x * r
    gw = gx = None
    if weight is not None and need_w:
        lead = tuple(range(x.ndim - len(dims)))
        gw = _sum(g * xhat, lead) if lead else g * xhat
    if need_x:
        gy = g * weight if weight is not None else g
        gx = r * (gy - xhat * _mean(gy * xhat, dims, keepdim=True))
    return gx, gw


def _rms_arrays(g, x, weight, rstd, dims, eps, needs):
    if kernels.accepts(g, x, *(() if weight is None else (weight,))):
        width = math.prod(x.shape[d] for d in dims)
        # gx written into an array of x's shape, which becomes x.grad without a copy
        gx_full = numpy.empty(x.shape, x.dtype) if needs[0] else None
        _, gw = kernels.norm.rms_backward(g.reshape(-1, width), x.reshape(-1, width),
                                          None if weight is None else weight.reshape(-1), rstd, needs[0],
                                          needs[1] and weight is not None,
                                          None if gx_full is None else gx_full.reshape(-1, width))
        return gx_full, (None if gw is None else gw.reshape(weight.shape))
    if cuda_norm.accepts(g, x, weight):
        width = math.prod(x.shape[d] for d in dims)
        gx, gw = cuda_norm.rms_backward(g.reshape(-1, width), x.reshape(-1, width),
                                        None if weight is None else weight.reshape(-1), rstd, needs[0],
                                        needs[1] and weight is not None)
        return (None if gx is None else gx.reshape(x.shape)), (None if gw is None else gw.reshape(weight.shape))
    res = _rms_rule(wrap(g), wrap(x), None if weight is None else wrap(weight), rstd, dims, eps, needs)
    return tuple(None if v is None else v._data for v in res)


_rms_rule = on_arrays(_rms_arrays)(_rms_rule)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalization across channels (torch.nn.functional.local_response_norm;
    Krizhevsky et al., 2012): ``x / (k + alpha * mean(x**2 over size neighbouring channels)) **
    beta``.

    ``input``: float ``[N, C, *]``, at least 3 dims (ValueError otherwise); the result has its
    shape and dtype (float32 under autocast for more than 3 dims). ``size``: the number of
    channels in the window, zero-padded by ``size // 2`` before and ``(size - 1) // 2`` after.
    ``alpha``: the scale of the mean square (default 1e-4). ``beta``: the exponent (default
    0.75). ``k``: the additive constant (default 1.0)."""
    from .shape import cat
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    if input.ndim > 3:
        (input,) = cast_inputs("fp32", input)  # torch pools these through avg_pool3d: float32 under autocast
    c = input.shape[1]
    sq = input * input
    before, after = size // 2, (size - 1) // 2
    pad_shape = list(input.shape)
    parts = []
    if before:
        pad_shape[1] = before
        parts.append(sq.new_zeros(tuple(pad_shape)))
    parts.append(sq)
    if after:
        pad_shape[1] = after
        parts.append(sq.new_zeros(tuple(pad_shape)))
    padded = cat(parts, 1) if len(parts) > 1 else sq
    # the window is short (a few channels): one shifted slice per offset
    window = padded.narrow(1, 0, c)
    for j in range(1, size):
        window = window + padded.narrow(1, j, c)
    return input / (window * (alpha / size) + k) ** beta


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)``, the p-norm taken along ``dim``
    (torch.nn.functional.normalize): unit vectors along that dim.

    ``input``: a float tensor of any shape, e.g. ``[N, D]``; the result has its shape and dtype.
    ``p``: the norm degree (default 2.0). ``dim``: the dim normalized (default 1). ``eps``: the
    smallest norm divided by (default 1e-12), so a zero vector stays zero. ``out``: an optional
    tensor to write the result into (then returned)."""
    r = input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is not None:
        from ._helpers import write_out
        return write_out(r, out, "normalize")
    return r


def _keep_shape(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _norm_rule(g, x, weight, xhat, invstd, stat_axes, w_axes, wshape, batch_stats, eps, running_mean,
               running_var, bias_req, kstats, needs):
    """Gradients of batch/layer/group norm.  ``kstats`` is ``(kind, mean, rstd)`` when the
    compiled forward ran (then ``xhat``/``invstd`` are None and come from these statistics)."""
    from .elementwise import rsqrt
    from .reduction import mean as _mean
    from .reduction import sum as _sum
    need_x, need_w = needs
    if xhat is None:
        keep = _keep_shape(x.shape, stat_axes)
        invstd = wrap(kstats[2].reshape(keep).astype(x._data.dtype), x.dtype)
        xhat = (x - wrap(kstats[1].reshape(keep).astype(x._data.dtype), x.dtype)) * invstd
    if not _STATE.enabled and batch_stats:
        return _norm_rule_arrays(g, x, weight, xhat, invstd, stat_axes, w_axes, wshape, bias_req, needs)
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
    if weight is not None and need_w:
        gw = _sum(g * xhat, w_axes).reshape(weight.shape) if w_axes else (g * xhat)
    if bias_req:
        gb = _sum(g, w_axes) if w_axes else g
    if need_x:
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


def _norm_rule_arrays(g, x, weight, xhat, invstd, stat_axes, w_axes, wshape, bias_req, needs):
    """The training-mode rule on arrays (no graph of the gradient wanted): fewer passes."""
    ga, xh, inv = g._data, xhat._data, invstd._data
    xp = be(g).xp
    need_x, need_w = needs
    if stat_axes == w_axes and ga.dtype == xh.dtype and _einsum_sums(xp, ga):
        return _batch_norm_rule_arrays(xp, ga, weight, xh, inv, stat_axes, wshape, bias_req, g.dtype, needs)
    gxh = ga * xh
    gw = gb = gx = None
    if weight is not None and need_w:
        gw = _make(gxh.sum(axis=w_axes).reshape(weight.shape) if w_axes else gxh, g.dtype)
    if bias_req:
        gb = _make(ga.sum(axis=w_axes) if w_axes else ga, g.dtype)
    if need_x:
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


def _batch_norm_rule_arrays(xp, ga, weight, xh, inv, axes, wshape, bias_req, dtype, needs):
    """The training-mode rule when the statistics and the affine parameters share their
    axes (batch norm): both sums in einsum passes, the input gradient in one allocation."""
    need_x, need_w = needs
    s1 = _sum_kept(xp, ga, axes)
    s2 = _sum_kept(xp, ga, axes, xh)
    flat = tuple(n for i, n in enumerate(ga.shape) if i not in axes)
    gw = _make(s2.reshape(weight.shape), dtype) if weight is not None and need_w else None
    gb = _make(s1.reshape(flat), dtype) if bias_req else None
    gx = None
    if need_x:
        n = ga.size // max(s1.size, 1)
        scale = inv if weight is None else inv * weight._data.reshape(wshape)
        gx = xh * (s2 / n)
        gx += s1 / n
        xp.subtract(ga, gx, out=gx)
        gx *= scale
        gx = _make(gx.astype(ga.dtype, copy=False), dtype)
    return gx, gw, gb


def _norm_arrays(g, x, weight, xhat, invstd, stat_axes, w_axes, wshape, batch_stats, eps, running_mean,
                 running_var, bias_req, kstats, needs):
    """The array form of :func:`_norm_rule`: the compiled backward where the kernels take
    the arrays, else the tensor rule on wrapped arrays (grad mode is off here)."""
    if kernels.accepts(g, x, *(() if weight is None else (weight,))):
        r = _kernel_backward(g, x, weight, xhat, invstd, stat_axes, w_axes, batch_stats, bias_req, kstats, needs)
        if r is not None:
            return r
    if kstats is not None and kstats[0] == "rows" and cuda_norm.accepts(g, x, weight):
        return _cuda_layer_norm_backward(g, x, weight, stat_axes, bias_req, kstats, needs)
    t = [None if a is None else wrap(a) for a in (g, x, weight, xhat, invstd, running_mean, running_var)]
    res = _norm_rule(t[0], t[1], t[2], t[3], t[4], stat_axes, w_axes, wshape, batch_stats, eps, t[5], t[6],
                     bias_req, kstats, needs)
    return tuple(None if v is None else v._data for v in res)


_norm_rule = on_arrays(_norm_arrays)(_norm_rule)


def _cuda_layer_norm_backward(g, x, weight, stat_axes, bias_req, kstats, needs):
    """``(gx, gw, gb)`` of layer norm on cupy arrays, from the forward's row statistics."""
    need_x, need_w = needs
    width = math.prod(x.shape[a] for a in stat_axes)
    w = None if weight is None else weight.reshape(-1)
    gx, gw, gb = cuda_norm.rows_backward(g.reshape(-1, width), x.reshape(-1, width), w, kstats[1], kstats[2],
                                         kstats[2], need_x, (need_w and w is not None) or bias_req)
    wshape = tuple(x.shape[a] for a in stat_axes)
    return ((None if gx is None else gx.reshape(x.shape)),
            (gw.reshape(wshape) if need_w and w is not None else None),
            (gb.reshape(wshape) if bias_req else None))


def _kernel_backward(g, x, weight, xhat, invstd, stat_axes, w_axes, batch_stats, bias_req, kstats, needs):
    """``(gx, gw, gb)`` from the compiled kernels, or None when they do not cover the case."""
    need_x, need_w = needs
    w = None if weight is None else weight.reshape(-1)
    if kstats is not None and kstats[0] == "channels":
        if g.strides != x.strides:  # the kernels read g in x's layout
            g2 = numpy.empty_like(x)
            g2[...] = g
            g = g2
        xv, restore = _channel_view(x)
        gv, _ = _channel_view(g)
        if xv is None:
            return None
        gx, gw, gb = kernels.norm.channel_backward(gv, xv, kstats[1], kstats[2], w, batch_stats, need_x,
                                                   need_w and w is not None, bias_req)
        return (None if gx is None else restore(gx)), gw, gb
    ndim = x.ndim
    if not batch_stats or stat_axes != tuple(range(ndim - len(stat_axes), ndim)):
        return None
    width = math.prod(x.shape[a] for a in stat_axes)
    if not width:
        return None
    if kstats is not None:  # layer norm
        mean, rstd = kstats[1], kstats[2]
        # gx written into an array of x's shape (not reshaped after): one that owns its
        # memory becomes x.grad without a copy
        gx_full = numpy.empty(x.shape, x.dtype) if need_x else None
        gx, gw, gb = kernels.norm.rows_backward(g.reshape(-1, width), x.reshape(-1, width), w, mean, rstd, rstd,
                                                need_x, (need_w and w is not None) or bias_req,
                                                None if gx_full is None else gx_full.reshape(-1, width))
        wshape = tuple(x.shape[a] for a in stat_axes)
        return ((None if gx is None else gx_full),
                (gw.reshape(wshape) if need_w and w is not None else None),
                (gb.reshape(wshape) if bias_req else None))
    if weight is not None or w_axes != stat_axes or xhat is None:
        return None
    # the standardisation of group/instance norm: x_hat is its output
    one = numpy.ones(1, x.dtype)
    gx_full = numpy.empty(x.shape, x.dtype) if need_x else None
    kernels.norm.rows_backward(g.reshape(-1, width), xhat.reshape(-1, width), None, one * 0, one,
                               invstd.reshape(-1), need_x, False,
                               None if gx_full is None else gx_full.reshape(-1, width))
    return gx_full, None, None
