"""torch's top-level, low-level forms of nn ops (ATen's names and positional signatures):
``native_layer_norm``, ``native_batch_norm``, ``native_group_norm`` (with the statistics
they save), ``native_dropout`` (with its mask), ``feature_dropout``, ``native_channel_shuffle``,
``norm_except_dim``, ``convolution``, ``conv_tbc``, ``affine_grid_generator``,
``grid_sampler`` and its 2-d/3-d forms, ``embedding_renorm_``.

Each is the nn op ember already has, reached through these signatures; the statistics are
computed beside it on arrays.
"""

from __future__ import annotations

from .. import _dtype as D
from .._tensor import _make, _wrap_dim
from ._helpers import be, inplace, needs_grad, record
from .activation import _dropout_rule, _mask_dropout
from .embedding import embedding_renorm_
from .grid_sample import affine_grid, grid_sample
from .norm import batch_norm, group_norm, layer_norm
from .upsample import channel_shuffle

__all__ = ["native_layer_norm", "native_batch_norm", "native_group_norm", "native_dropout", "feature_dropout",
           "feature_dropout_", "native_channel_shuffle", "norm_except_dim", "convolution", "conv_tbc",
           "affine_grid_generator", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "embedding_renorm_"]


def _stats(x, axes, eps):
    """(mean, 1/sqrt(biased var + eps)) of array ``x`` over ``axes``, kept dims, in its dtype."""
    xp = be(x).xp
    a = x._data
    mean = a.mean(axis=axes, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=axes, keepdims=True)
    return mean.astype(a.dtype), (1.0 / xp.sqrt(var + eps)).astype(a.dtype)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(layer_norm(input, normalized_shape, weight, bias, eps), mean, rstd)``
    (torch.native_layer_norm).

    ``input`` is normalized over its last ``k = len(normalized_shape)`` dims; ``weight`` and
    ``bias`` (of shape ``normalized_shape``, or None) scale and shift it; ``eps`` is added
    to the variance. ``mean`` and ``rstd = 1/sqrt(var + eps)`` (biased variance) have shape
    ``input.shape[:-k] + (1,) * k`` and no gradients."""
    out = layer_norm(input, tuple(normalized_shape), weight, bias, eps)
    k = len(tuple(normalized_shape))
    mean, rstd = _stats(input, tuple(range(input.ndim - k, input.ndim)), eps)
    return out, _make(mean, input.dtype), _make(rstd, input.dtype)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``(batch_norm(...), save_mean, save_invstd)`` of ``input`` ``[N, C, *]``
    (torch.native_batch_norm).

    ``weight`` and ``bias`` ([C] or None) scale and shift; with ``training`` the batch
    statistics are used, ``save_mean`` and ``save_invstd = 1/sqrt(biased var + eps)`` are
    those per channel [C], and ``running_mean`` and ``running_var`` ([C], when given) are
    updated with ``momentum``; in evaluation the running statistics normalize and the two
    saved tensors are empty. ``eps`` is added to the variance. RuntimeError in evaluation
    without running statistics."""
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("native_batch_norm: running_mean and running_var are needed when training=False")
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    xp = be(input).xp
    if not training:
        empty = xp.empty((0,), dtype=input._data.dtype)
        return out, _make(empty, input.dtype), _make(empty.copy(), input.dtype)
    axes = (0,) + tuple(range(2, input.ndim))
    mean, invstd = _stats(input, axes, eps)
    c = input.shape[1]
    return out, _make(mean.reshape(c), input.dtype), _make(invstd.reshape(c), input.dtype)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``(group_norm(input, group, weight, bias, eps), mean, rstd)`` with the statistics of
    each (sample, group), shape [N, group] (torch.native_group_norm; they are ember ops of
    ``input``, so differentiable).

    ``group`` is the number of groups; ``N``, ``C`` and ``HxW`` are the batch size, the
    channel count and the product of the spatial sizes: RuntimeError unless ``input`` has
    ``N * C * HxW`` elements. ``weight`` and ``bias`` are [C] or None; ``eps`` is added to
    the variance."""
    if input.numel() != N * C * HxW:
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.")
    out = group_norm(input, group, weight, bias, eps)
    grouped = input.reshape(N, group, -1)
    mean = grouped.mean(2)
    var = grouped.var(2, unbiased=False)
    return out, mean, (var + eps).rsqrt()


def native_dropout(input, p, train):
    """``(output, mask)`` of dropout on ``input`` (torch.native_dropout).

    With ``train`` (True or None) each element is kept with probability ``1 - p`` (the bool
    ``mask``) and scaled by ``1/(1-p)``; else the input's values and an all-True mask. The
    gradient is ``mask / (1 - p)``, the derivative of that output; torch 2.13's backward
    leaves out the ``1 / (1 - p)`` when ``train`` is None (while its forward applies it),
    which ember does not copy. RuntimeError for ``p`` outside [0, 1]."""
    if p < 0 or p > 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p}")
    xp = be(input).xp
    x = input._data
    if train is False:
        r = _make(x.copy(), input.dtype)
        keep = xp.ones(x.shape, dtype=bool)
        scaled = xp.ones(x.shape, dtype=x.dtype)
    else:
        from ..random import default_generator
        keep = default_generator(input.device).bit_generator.random(x.shape, dtype=xp.float32) >= p
        scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
        scaled = keep.astype(x.dtype) * x.dtype.type(scale)
        r = _make(x * scaled, input.dtype)
    if needs_grad(input):
        record("NativeDropoutBackward0", _dropout_rule, (input,), r, (_make(scaled, input.dtype),))
    return r, _make(keep, D.bool_)


def feature_dropout(input, p, train):
    """Zero whole features of ``input`` (the slices ``[n, c]``) with probability ``p``, scaling
    the rest by ``1/(1-p)`` (torch.feature_dropout: ``dropout2d``'s mask [N, C, 1, ...] for
    any input of 2 or more dims).

    ``input`` itself when not ``train`` or ``p`` is 0, zeros when ``p`` is 1. RuntimeError
    for ``p`` outside [0, 1], or fewer than 2 dims when a mask is drawn."""
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input * 0
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = input._data.shape
    return _mask_dropout(input, p, shape[:2] + (1,) * (input.ndim - 2), "MulBackward0")


def feature_dropout_(input, p, train):
    """``feature_dropout`` written into ``input`` in place (drop probability ``p``, a no-op
    when not ``train``), which is returned (``torch.feature_dropout_``)."""
    return inplace(input, feature_dropout, p, train)


def native_channel_shuffle(input, groups):
    """channel_shuffle under torch's native name (torch.native_channel_shuffle): the channels of
    ``input`` ``[N, C, *]``, seen as ``[groups, C/groups]``, transposed to ``[C/groups,
    groups]``. ``groups``: a positive divisor of ``C``; errors as channel_shuffle's."""
    return channel_shuffle(input, groups)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, those dims kept as size 1
    (weight normalisation's ``||v||``; torch.norm_except_dim); ``dim=-1`` gives the norm of
    all of ``v`` (0-d)."""
    from .reduction import norm
    if dim == -1:
        return norm(v, pow)
    d = _wrap_dim(dim, v.ndim)
    return norm(v, pow, tuple(k for k in range(v.ndim) if k != d), keepdim=True)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """``conv{1,2,3}d`` or, with ``transposed``, ``conv_transpose{1,2,3}d`` of ``input``, the
    dimension taken from ``weight`` ``[C_out, C_in/groups, *k]`` (transposed: ``[C_in,
    C_out/groups, *k]``) (torch.convolution).

    ``bias`` is [C_out] or None; ``stride``, ``padding``, ``dilation`` and
    ``output_padding`` are sequences of one int per spatial dim; ``groups`` splits the
    channels into that many independent convolutions. RuntimeError for a weight of fewer
    than 3 or more than 5 dims."""
    from . import conv
    nd = weight.ndim - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a weight of 3, 4 or 5 dims, got {list(weight.shape)}")
    if transposed:
        return getattr(conv, f"conv_transpose{nd}d")(input, weight, bias, tuple(stride), tuple(padding),
                                                     tuple(output_padding), groups, tuple(dilation))
    return getattr(conv, f"conv{nd}d")(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution of a time-major sequence (torch.conv_tbc): ``input`` ``[T, B, C_in]``,
    ``weight`` ``[K, C_in, C_out]``, ``bias`` ``[C_out]``, ``pad`` steps of zeros at both
    ends; returns ``[T + 2*pad - K + 1, B, C_out]``.  RuntimeError for other ranks or sizes
    that do not agree."""
    from .conv import conv1d
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, int(pad))
    return out.permute(2, 0, 1)


def affine_grid_generator(theta, size, align_corners):
    """``affine_grid(theta, size, align_corners)`` (torch.affine_grid_generator): the sampling
    grid [N, H, W, 2] (or [N, D, H, W, 3]) of the affine maps ``theta`` [N, 2, 3] (or [N, 3,
    4]) for an output of ``size`` [N, C, H, W] (or [N, C, D, H, W]); with ``align_corners``
    -1 and 1 are the centres of the corner pixels, else their outer edges."""
    return affine_grid(theta, list(size), align_corners)


_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sample(input, grid, ...)`` with its modes as ATen's numbers (torch.grid_sampler).

    ``input`` is [N, C, H, W] (or [N, C, D, H, W]), ``grid`` [N, H_out, W_out, 2] (or 3-d)
    of normalized coordinates in [-1, 1]. ``interpolation_mode``: 0 bilinear, 1 nearest, 2
    bicubic; ``padding_mode``: 0 zeros, 1 border, 2 reflection; ``align_corners`` as in
    ``affine_grid_generator``. RuntimeError for another number."""
    if interpolation_mode not in _MODES or padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler(): unknown interpolation mode {interpolation_mode} or padding mode "
                           f"{padding_mode}")
    return grid_sample(input, grid, _MODES[interpolation_mode], _PADDING[padding_mode], align_corners)


def _check_rank(input, grid, nd):
    if input.ndim != nd + 2 or grid.ndim != nd + 2:
        raise RuntimeError(f"grid_sampler(): expected {nd + 2}D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sampler`` for ``input`` [N, C, H, W] and ``grid`` [N, H_out, W_out, 2] only
    (torch.grid_sampler_2d), with ``interpolation_mode``, ``padding_mode`` and
    ``align_corners`` as there; RuntimeError for other ranks."""
    _check_rank(input, grid, 2)
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sampler`` for ``input`` [N, C, D, H, W] and ``grid`` [N, D_out, H_out, W_out, 3]
    only, with ``padding_mode`` and ``align_corners`` as there (torch.grid_sampler_3d); no
    bicubic mode (``interpolation_mode`` 2): RuntimeError."""
    _check_rank(input, grid, 3)
    if interpolation_mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)

