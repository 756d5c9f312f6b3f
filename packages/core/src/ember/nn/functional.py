"""ember.nn.functional: the stateless forms of the layers (torch.nn.functional).

Shapes follow torch: images ``[N, C, H, W]``, sequences ``[N, C, L]``, class scores
``[N, C]`` or ``[N, C, d1, ...]``.
"""

from __future__ import annotations

import warnings

from .. import ops as _ops
from ..ops.activation import dropout, dropout2d, elu, gelu, leaky_relu, linear, silu, softplus
from ..ops.conv import conv1d, conv2d
from ..ops.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from ..ops.norm import batch_norm, layer_norm
from ..ops.pool import adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d

__all__ = ["linear", "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
           "adaptive_avg_pool2d", "batch_norm", "layer_norm", "dropout", "dropout2d", "relu", "relu_", "gelu",
           "tanh", "sigmoid", "silu", "leaky_relu", "elu", "softplus", "softmax", "log_softmax", "cross_entropy",
           "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "one_hot", "pad"]


def relu(input, inplace: bool = False):
    """``max(x, 0)`` elementwise (in place when ``inplace``)."""
    return _ops.relu_(input) if inplace else _ops.relu(input)


def relu_(input):
    return _ops.relu_(input)


def tanh(input):
    return _ops.tanh(input)


def sigmoid(input):
    return _ops.sigmoid(input)


def _softmax_dim(ndim, name):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` when given)."""
    if dim is None:
        dim = _softmax_dim(input.dim(), "softmax")
    return _ops.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim(input.dim(), "log_softmax")
    return _ops.log_softmax(input, dim, dtype=dtype)


def one_hot(tensor, num_classes: int = -1):
    """int64 one-hot encoding: ``[*]`` class indices to ``[*, num_classes]``."""
    from .. import _dtype as D
    from ..ops._helpers import be, wrap
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    arr = tensor._data
    if num_classes == -1:
        num_classes = int(arr.max()) + 1 if arr.size else 0
    if arr.size and (arr.min() < 0 or arr.max() >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if arr.min() >= 0
                           else "Class values must be non-negative.")
    xp = be(tensor).xp
    return wrap((arr[..., None] == xp.arange(num_classes)).astype(xp.int64), D.int64)


def pad(input, pad, mode: str = "constant", value=None):
    """Pad the last ``len(pad)//2`` dims: ``pad = (left, right, top, bottom, ...)`` from the last
    dim backwards.  'constant' fills with ``value`` (0; negative pads crop); 'reflect'
    mirrors without repeating the edge (pads smaller than the dim), 'replicate' repeats
    the edge, 'circular' wraps around (pads at most the dim).  The other modes need a
    leading (batch or channel) dim, as torch's."""
    if mode != "constant" and len(pad) // 2 > input.ndim - 1:
        raise NotImplementedError("Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now")
    from ..ops.layout import _pad_last_dims
    return _pad_last_dims(input, pad, mode, value)


