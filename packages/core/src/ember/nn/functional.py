"""ember.nn.functional: the stateless forms of the layers (torch.nn.functional).

Shapes follow torch: images ``[N, C, H, W]``, sequences ``[N, C, L]``, class scores
``[N, C]`` or ``[N, C, d1, ...]``.
"""

from __future__ import annotations

import warnings

from .. import ops as _ops
from .._autocast import autocast_op, cast_inputs
from ..ops._dispatch import register_namespace as _register_namespace
from ..ops._helpers import inplace as _inplace
from ..ops.activation import (
    alpha_dropout,
    bilinear,
    celu,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    elu,
    feature_alpha_dropout,
    gelu,
    gumbel_softmax,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    linear,
    mish,
    selu,
    silu,
    softplus,
)
from ..ops.attention import multi_head_attention_forward, scaled_dot_product_attention
from ..ops.conv import _fold as fold  # private in ops: the ops namespace's unfold is Tensor.unfold's
from ..ops.conv import _unfold as unfold
from ..ops.conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from ..ops.ctc import ctc_loss
from ..ops.embedding import embedding, embedding_bag
from ..ops.fractional_pool import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from ..ops.grid_sample import affine_grid, grid_sample
from ..ops.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cosine_similarity,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    linear_cross_entropy,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    pairwise_distance,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ..ops.nn_low_level import conv_tbc, native_channel_shuffle
from ..ops.norm import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    normalize,
    rms_norm,
)
from ..ops.pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from ..ops.sample_stats import pdist
from ..ops.upsample import (
    channel_shuffle,
    interpolate,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)

__all__ = ["linear", "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
           "adaptive_avg_pool2d", "batch_norm", "layer_norm", "dropout", "dropout2d", "relu", "relu_", "gelu",
           "tanh", "sigmoid", "silu", "leaky_relu", "elu", "softplus", "softmax", "log_softmax", "cross_entropy",
           "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "one_hot", "pad"]
__all__ += ["kl_div", "huber_loss", "smooth_l1_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
            "multi_margin_loss", "multilabel_margin_loss", "margin_ranking_loss", "hinge_embedding_loss",
            "cosine_embedding_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss", "poisson_nll_loss",
            "gaussian_nll_loss", "ctc_loss", "pairwise_distance", "cosine_similarity"]
__all__ += ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
            "pixel_unshuffle", "channel_shuffle"]
__all__ += ["affine_grid", "grid_sample"]
__all__ += ["pdist"]
__all__ += ["hardtanh", "hardswish", "hardsigmoid", "mish", "selu", "celu"]
__all__ += ["gumbel_softmax", "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
            "fractional_max_pool3d_with_indices", "linear_cross_entropy", "conv_tbc", "native_channel_shuffle"]
__all__ += ["group_norm", "instance_norm", "local_response_norm", "normalize", "rms_norm"]
__all__ += ["embedding", "embedding_bag", "bilinear"]
__all__ += ["conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "fold", "unfold"]
__all__ += ["dropout1d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]
__all__ += ["scaled_dot_product_attention", "multi_head_attention_forward"]
__all__ += ["max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
            "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
            "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
            "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d",
            "lp_pool2d", "lp_pool3d"]


def relu(input, inplace: bool = False):
    """``max(x, 0)`` elementwise of ``input`` (any shape, kept; in place when ``inplace``)
    (torch.nn.functional.relu)."""
    return _ops.relu_(input) if inplace else _ops.relu(input)


def relu_(input):
    """``max(x, 0)`` written into ``input`` and returned (``torch.nn.functional.relu_``)."""
    return _ops.relu_(input)


def tanh(input):
    """Hyperbolic tangent of ``input`` elementwise, any shape (torch.nn.functional.tanh)."""
    return _ops.tanh(input)


def sigmoid(input):
    """``1 / (1 + exp(-x))`` of ``input`` elementwise, any shape (torch.nn.functional.sigmoid)."""
    return _ops.sigmoid(input)


def _softmax_dim(ndim, name):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` of ``input`` along ``dim`` (computed in ``dtype`` when given),
    same shape (torch.nn.functional.softmax).  ``dim=None`` is deprecated: it warns and picks
    0 for 0-, 1- and 3-D inputs, else 1."""
    if dim is None:
        dim = _softmax_dim(input.dim(), "softmax")
    return _ops.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(x))`` of ``input`` along ``dim``, computed stably, same shape; the input is
    cast to ``dtype`` first when given (torch.nn.functional.log_softmax).  ``dim=None`` is
    deprecated: it warns and picks 0 for 0-, 1- and 3-D inputs, else 1."""
    if dim is None:
        dim = _softmax_dim(input.dim(), "log_softmax")
    return _ops.log_softmax(input, dim, dtype=dtype)


def one_hot(tensor, num_classes: int = -1):
    """int64 one-hot encoding: ``tensor``, int64 class indices ``[*]``, to ``[*, num_classes]``
    (torch.nn.functional.one_hot).  ``num_classes=-1`` takes the largest index + 1.
    RuntimeError for a tensor not of int64, indices negative or not below ``num_classes``,
    or an empty tensor with ``num_classes=-1``."""
    from .. import _dtype as D
    from ..ops._helpers import be, wrap
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    arr = tensor._data
    if num_classes == -1:
        if not arr.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(arr.max()) + 1
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
    leading (batch or channel) dim, as torch's (torch.nn.functional.pad).

    ``input``: any shape; ``mode``: one of the four above.  NotImplementedError when a
    non-constant mode is asked to pad every dim.
    """
    if mode != "constant" and len(pad) // 2 > input.ndim - 1:
        raise NotImplementedError("Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now")
    if mode == "replicate" or (mode == "reflect" and len(pad) // 2 < 3):
        (input,) = cast_inputs("fp32", input)  # torch's autocast lists these padding kernels as float32
    from ..ops.layout import _pad_last_dims
    return _pad_last_dims(input, pad, mode, value)




# ---- more activations, composed of ember ops (their gradients follow) ---------------------

def relu6(input, inplace: bool = False):
    """min(max(x, 0), 6): hardtanh(x, 0, 6), with its gradient (0 at both bounds)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def softsign(input):
    """x / (1 + |x|)."""
    return input / (1 + input.abs())


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), without overflow."""
    return -softplus(-input)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - _ops.tanh(input)


def softshrink(input, lambd: float = 0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _ops.where(input > lambd, input - lambd, _ops.where(input < -lambd, input + lambd, 0.0))


def hardshrink(input, lambd: float = 0.5):
    """x where |x| > lambd, else 0."""
    return _ops.where(input.abs() > lambd, input, 0.0)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """x where x > threshold, else ``value``."""
    if inplace:
        return _inplace(input, globals()["threshold"], threshold, value)
    return _ops.where(input > threshold, input, value)


def glu(input, dim: int = -1):
    """The gated linear unit a * sigmoid(b), a and b the halves of ``dim`` (Dauphin et al., 2017)."""
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} is size "
                           f"{input.shape[dim]}")
    a, b = _ops.chunk(input, 2, dim)
    return a * _ops.sigmoid(b)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along ``dim``."""
    return softmax(-input, dim, _stacklevel, dtype)


@autocast_op("lower")
def prelu(input, weight):
    """max(0, x) + weight * min(0, x), ``weight`` one value or one per channel (dim 1)."""
    if weight.numel() != 1:
        channels = input.shape[1] if input.ndim > 1 else input.shape[0]
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
        shape = [1] * input.ndim
        shape[1 if input.ndim > 1 else 0] = channels
        weight = weight.reshape(shape)
    return _ops.where(input > 0, input, weight * input)


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """Leaky ReLU with the slope drawn uniformly from [lower, upper] per element in
    training, and (lower + upper) / 2 otherwise (Xu et al., 2015)."""
    if inplace:
        return _inplace(input, rrelu, lower, upper, training)
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    slope = _ops.empty_like(input).uniform_(lower, upper)
    return _ops.where(input >= 0, input, input * slope)


# torch's in-place spellings
def elu_(input, alpha: float = 1.0):
    return elu(input, alpha, inplace=True)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input, negative_slope: float = 0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    return rrelu(input, lower, upper, training, inplace=True)


def threshold_(input, threshold: float, value: float):
    return globals()["threshold"](input, threshold, value, inplace=True)


def celu_(input, alpha: float = 1.0):
    return celu(input, alpha, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


# the ops published here pass through the dispatch seam when a mode listens
_register_namespace(globals())
