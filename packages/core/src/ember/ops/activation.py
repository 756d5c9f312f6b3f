"""Activations, dropout and the dense layers (torch.nn.functional.gelu, silu, mish,
leaky_relu, elu, selu, celu, softplus, hardsigmoid, hardswish, hardtanh, dropout,
dropout1d/2d/3d, alpha_dropout, feature_alpha_dropout, linear, bilinear).  relu, tanh,
sigmoid, softmax and log_softmax live with the elementwise ops and reductions.

The activations are one node each, as torch's; on numpy float32/float64 arrays their
forward and backward run as compiled kernels (``cpu/kernels/activation.py``), elsewhere
as the ember ops they are written with.  Dropout on cupy float32/float64 arrays draws its
mask with the counter-based CUDA kernels (``cuda/kernels/dropout.py``) from the device
generator's Philox seed and offset."""

from __future__ import annotations

import math

import numpy

from .. import _dtype as D
from .._autocast import autocast_op
from .._blas import matmul as blas_matmul
from .._tensor import Tensor, _make
from ..autograd.grad_mode import no_grad
from ..autograd.graph import on_arrays
from ..cpu import kernels
from ..cuda.kernels import dropout as cuda_dropout
from ._helpers import be, check_same_device, needs_grad, record, wrap
from ._helpers import inplace as _inplace

__all__ = ["gelu", "silu", "mish", "leaky_relu", "elu", "selu", "celu", "softplus", "hardsigmoid", "dropout",
           "dropout2d", "dropout1d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "linear", "bilinear"]

_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_KERNEL_DTYPES = (D.float32, D.float64)


def _kernel_input(input) -> bool:
    return input.dtype in _KERNEL_DTYPES and kernels.accepts(input._data)


def _single(input, node, rule, params, kernel, composed, grad_params=None):
    """A one-node activation: the forward by ``kernels.activation.<kernel>`` (numba is
    imported only then) on numpy float32/float64 arrays,
    else by ``composed`` (ember ops, run without a graph: the reference and the other
    backends' path); ``rule(g, input, *grad_params)`` (``params`` unless given) is its
    gradient."""
    if _kernel_input(input):
        r = _make(getattr(kernels.activation, kernel)(input._data, *params), input.dtype)
    else:
        with no_grad():
            r = composed(input, *params)
    if needs_grad(input):
        record(node, rule, (input,), r, (input, *(params if grad_params is None else grad_params)))
    return r


def _arrays(kernel_name):
    """Give a gradient rule ``rule(g, x, *params)`` its array form: the backward kernel
    ``kernel_name`` for numpy float32/float64 arrays, else the rule itself on the arrays
    wrapped as tensors."""
    def mark(rule):
        def on_arrays_form(g, x, *params):
            if kernels.accepts(g, x):
                return getattr(kernels.activation, kernel_name)(g, x, *params)
            return rule(wrap(g), wrap(x), *params)._data
        return on_arrays(on_arrays_form)(rule)
    return mark


def gelu(input, approximate="none"):
    """Gaussian error linear unit ``x * Phi(x)``, ``Phi`` the standard normal CDF
    (torch.nn.functional.gelu; Hendrycks and Gimpel, arXiv:1606.08415).

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``approximate``:
    'none' (exact, through erf) or 'tanh' (``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``).
    RuntimeError for another ``approximate`` or an integer input."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"GeluKernelImpl\" not implemented for '{_long(input.dtype)}'")
    x = input._data
    if _kernel_input(input):
        r = _make(kernels.activation.gelu(x, approximate), input.dtype)
        if needs_grad(input):
            record("GeluBackward0", _gelu_rule, (input,), r, (input, approximate))
        return r
    xp = be(input).xp
    if approximate == "tanh":
        arr = 0.5 * x * (1 + xp.tanh(_SQRT_2_PI * (x + 0.044715 * x * x * x)))
    else:
        arr = 0.5 * x * (1 + be(input).special.erf(x * _INV_SQRT2))
    r = _make(arr.astype(x.dtype, copy=False), input.dtype)
    if needs_grad(input):
        record("GeluBackward0", _gelu_rule, (input,), r, (input, approximate))
    return r


@_arrays("gelu_grad")
def _gelu_rule(g, x, approximate):
    from .elementwise import erf, exp, tanh
    if approximate == "tanh":
        inner = _SQRT_2_PI * (x + 0.044715 * x * x * x)
        t = tanh(inner)
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _SQRT_2_PI * (1 + 3 * 0.044715 * x * x))
    cdf = 0.5 * (1 + erf(x * _INV_SQRT2))
    pdf = exp(x * x * -0.5) * (1.0 / math.sqrt(2 * math.pi))
    return g * (cdf + x * pdf)


def silu(input, inplace=False):
    """``x * sigmoid(x)`` (torch.nn.functional.silu; Elfwing et al., 2017): any shape, float
    dtypes; written into ``input`` when ``inplace``."""
    from .elementwise import sigmoid
    if inplace:
        return _inplace(input, silu)
    return _single(input, "SiluBackward0", _silu_rule, (), "silu", lambda x: x * sigmoid(x))


@_arrays("silu_grad")
def _silu_rule(g, x):
    from .elementwise import sigmoid
    s = sigmoid(x)
    return g * s * (1 + x * (1 - s))


def mish(input, inplace=False):
    """Mish ``x * tanh(softplus(x))`` (torch.nn.functional.mish; Misra, arXiv:1908.08681).

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``inplace``:
    write the result into ``input`` and return it."""
    from .elementwise import tanh
    if inplace:
        return _inplace(input, mish)
    return _single(input, "MishBackward0", _mish_rule, (), "mish", lambda x: x * tanh(softplus(x)))


@_arrays("mish_grad")
def _mish_rule(g, x):
    from .elementwise import sigmoid, tanh
    t = tanh(softplus(x))
    return g * (t + x * sigmoid(x) * (1 - t * t))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """Leaky ReLU: ``x`` where positive, ``negative_slope * x`` elsewhere
    (torch.nn.functional.leaky_relu; Maas et al., 2013).

    ``input``: a float tensor of any shape; the result has its shape and dtype.
    ``negative_slope``: the slope below zero (default 0.01). ``inplace``: write the result into
    ``input`` and return it."""
    from .elementwise import where
    if inplace:
        return _inplace(input, leaky_relu, negative_slope)
    return _single(input, "LeakyReluBackward0", _leaky_relu_rule, (negative_slope,), "leaky_relu",
                   lambda x, s: where(x > 0, x, x * s))


@_arrays("leaky_relu_grad")
def _leaky_relu_rule(g, x, negative_slope):
    from .elementwise import where
    return where(x > 0, g, g * negative_slope)


def _elu_like(input, node, alpha, scale, input_scale, grad_input_scale=None):
    # torch's elu kernel: scale * x where positive, scale * alpha * (exp(input_scale x) - 1)
    # elsewhere; elu, selu and celu are its three parametrisations
    from .elementwise import expm1, where
    grad_params = None if grad_input_scale is None else (alpha, scale, grad_input_scale)
    return _single(input, node, _elu_rule, (alpha, scale, input_scale), "elu",
                   lambda x, a, s, i: where(x > 0, x * s, expm1(x.clamp(max=0) * i) * (s * a)), grad_params)


@_arrays("elu_grad")
def _elu_rule(g, x, alpha, scale, input_scale):
    from .elementwise import exp, where
    return where(x > 0, g * scale, g * exp(x.clamp(max=0) * input_scale) * (scale * alpha * input_scale))


def elu(input, alpha=1.0, inplace=False):
    """Exponential linear unit: ``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere
    (torch.nn.functional.elu; Clevert et al., arXiv:1511.07289).

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``alpha``: the
    negative saturation value (default 1.0). ``inplace``: write the result into ``input`` and
    return it."""
    if inplace:
        return _inplace(input, elu, alpha)
    return _elu_like(input, "EluBackward0", alpha, 1.0, 1.0)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """Scaled ELU ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with the fixed
    self-normalizing constants ``alpha = 1.6732632...`` and ``scale = 1.0507009...``
    (torch.nn.functional.selu; Klambauer et al., arXiv:1706.02515).

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``inplace``:
    write the result into ``input`` and return it."""
    if inplace:
        return _inplace(input, selu)
    return _elu_like(input, "EluBackward0", _SELU_ALPHA, _SELU_SCALE, 1.0)


def celu(input, alpha=1.0, inplace=False):
    """Continuously differentiable ELU ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``
    (torch.nn.functional.celu; Barron, arXiv:1704.07483).

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``alpha``: the
    negative saturation value (default 1.0); RuntimeError when 0. ``inplace``: write the result
    into ``input`` and return it."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    if inplace:
        return _inplace(input, celu, alpha)
    # torch's derivative formula takes 1/alpha of alpha rounded to float32
    return _elu_like(input, "CeluBackward0", alpha, 1.0, 1.0 / alpha, 1.0 / float(numpy.float32(alpha)))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``input`` clamped into ``[min_val, max_val]`` (torch.nn.functional.hardtanh).

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``min_val``,
    ``max_val``: the bounds (default -1 and 1); ValueError when ``min_val > max_val``.
    ``inplace``: write the result into ``input`` and return it. The gradient is 1 strictly
    between the bounds and 0 at them (torch's hardtanh_backward; clamp's is 1 at the bounds)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _inplace(input, hardtanh, min_val, max_val)
    r = wrap(be(input).xp.clip(input._data, min_val, max_val), input.dtype)
    if needs_grad(input):
        record("HardtanhBackward0", _hardtanh_rule, (input,), r, (input, min_val, max_val))
    return r


def _hardtanh_rule(g, x, min_val, max_val):
    from .elementwise import where
    return where((x > min_val) & (x < max_val), g, 0.0)


def hardswish(input, inplace=False):
    """Hard swish ``x * relu6(x + 3) / 6`` (torch.nn.functional.hardswish; Howard et al.,
    "Searching for MobileNetV3", arXiv:1905.02244).

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``inplace``:
    write the result into ``input`` and return it. The gradient is torch's: 0 up to -3, ``x / 3
    + 1/2`` strictly between -3 and 3, 1 from 3 on."""
    if inplace:
        return _inplace(input, hardswish)
    x = input._data
    if _kernel_input(input):
        r = _make(kernels.activation.hardswish(x), input.dtype)
    else:
        r = wrap(x * be(input).xp.clip(x + 3, 0, 6) / 6, input.dtype)
    if needs_grad(input):
        record("HardswishBackward0", _hardswish_rule, (input,), r, (input,))
    return r


@_arrays("hardswish_grad")
def _hardswish_rule(g, x):
    from .elementwise import where
    return where(x <= -3, 0.0, where(x < 3, g * (x / 3 + 0.5), g))


_SIXTH_F32 = float(numpy.float32(1 / 6))  # torch's gradient factor, 1/6 rounded to float32 in every dtype


def hardsigmoid(input, inplace=False):
    """Hard sigmoid ``relu6(x + 3) / 6`` (torch.nn.functional.hardsigmoid; as used in MobileNetV3,
    arXiv:1905.02244).

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``inplace``:
    write the result into ``input`` and return it. The gradient is 1/6 strictly between -3 and
    3, else 0."""
    if inplace:
        return _inplace(input, hardsigmoid)
    return _single(input, "HardsigmoidBackward0", _hardsigmoid_rule, (), "hardsigmoid",
                   lambda x: hardtanh(x + 3, 0.0, 6.0) / 6)


@_arrays("hardsigmoid_grad")
def _hardsigmoid_rule(g, x):
    from .elementwise import where
    return where((x > -3) & (x < 3), g * _SIXTH_F32, 0.0)


def softplus(input, beta=1.0, threshold=20.0):
    """Softplus ``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``
    (torch.nn.functional.softplus), a smooth ReLU.

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``beta``: the
    sharpness (default 1.0). ``threshold``: above it (in ``beta * x``) the function is linear,
    for numerical stability (default 20.0)."""
    return _single(input, "SoftplusBackward0", _softplus_rule, (beta, threshold), "softplus", _softplus_composed)


def _softplus_composed(input, beta, threshold):
    from .elementwise import exp, log1p, relu, where
    bx = input * beta
    soft = (log1p(exp(-bx.abs())) + relu(bx)) / beta
    return where(bx > threshold, input, soft)


@_arrays("softplus_grad")
def _softplus_rule(g, x, beta, threshold):
    from .elementwise import sigmoid, where
    bx = x * beta
    return where(bx > threshold, g, g * sigmoid(bx))


# ---- dropout -----------------------------------------------------------------------

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _mask_dropout(input, p, mask_shape, name):
    from ..random import default_generator
    xp = be(input).xp
    x = input._data
    if p == 1.0:
        scaled = xp.zeros(mask_shape, dtype=x.dtype)
    elif cuda_dropout.accepts(x):
        # counter-based draws from the device generator's (seed, offset): a restored state replays them
        seed, offset = default_generator(input.device).philox_seed_offset(cuda_dropout.groups(math.prod(mask_shape)))
        if mask_shape == x.shape:
            arr, scaled = cuda_dropout.apply(x, p, 1.0 / (1.0 - p), seed, offset)
            r = _make(arr, input.dtype)
            if needs_grad(input):
                record(name, _dropout_rule, (input,), r, (_make(scaled, input.dtype),))
            return r
        scaled = cuda_dropout.mask(mask_shape, x.dtype, p, 1.0 / (1.0 - p), seed, offset)
    else:
        gen = default_generator(input.device).bit_generator
        draws = gen.random(mask_shape, dtype=xp.float32)
        if mask_shape == x.shape and x.flags.c_contiguous and kernels.accepts(x):
            # one pass for mask, scale and product, from the same draws
            arr, scaled = kernels.dropout.apply(x, draws, p, 1.0 / (1.0 - p))
            r = _make(arr, input.dtype)
            if needs_grad(input):
                record(name, _dropout_rule, (input,), r, (_make(scaled, input.dtype),))
            return r
        scaled = (draws >= p).astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p))
    r = _make(x * scaled, input.dtype)
    if needs_grad(input):
        record(name, _dropout_rule, (input,), r, (_make(scaled, input.dtype),))
    return r


def _dropout_grad_arrays(g, scaled):
    if g.shape == scaled.shape and scaled.flags.c_contiguous and kernels.accepts(g, scaled):
        return kernels.dropout.grad(g, scaled)
    return g * scaled


@on_arrays(_dropout_grad_arrays)
def _dropout_rule(g, scaled):
    return g * scaled


def dropout(input, p=0.5, training=True, inplace=False):
    """Dropout: each element zeroed with probability ``p`` (torch.nn.functional.dropout; Srivastava
    et al., JMLR 2014).

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``p``: the
    probability of zeroing, in [0, 1] (ValueError otherwise); the kept values are scaled by
    ``1/(1-p)`` so the expectation is unchanged. ``training``: when False the input is returned
    as is. ``inplace``: write the result into ``input``. The draws come from the default
    generator. RuntimeError for an integer input when it is applied."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_long(input.dtype)}")
    r = _mask_dropout(input, p, input._data.shape, "MulBackward0")
    return _write_back(input, r) if inplace else r


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for ``[N, C, H, W]`` inputs: each channel zeroed whole with probability
    ``p`` (torch.nn.functional.dropout2d; Tompson et al., arXiv:1411.4280).

    ``input``: float, ``[N, C, H, W]``; the result has its shape and dtype. A 3-D input is read
    as ``[N, C, L]``, with torch's warning; other ranks warn, as torch's, and draw one mask
    value per ``[N, C]`` entry; RuntimeError below 2 dims. ``p``: the probability of zeroing,
    in [0, 1] (ValueError otherwise); the kept values are scaled by ``1/(1-p)`` so the
    expectation is unchanged. ``training``: when False the input is returned as is.
    ``inplace``: write the result into ``input``. The draws come from the default generator."""
    import warnings
    _check_p(p)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    elif input.ndim != 4:
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = input._data.shape
    r = _mask_dropout(input, p, shape[:2] + (1,) * (input.ndim - 2), "MulBackward0")
    return _write_back(input, r) if inplace else r


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for ``[N, C, L]`` (or unbatched ``[C, L]``) inputs: each channel zeroed
    whole with probability ``p`` (torch.nn.functional.dropout1d).

    ``input``: ``[N, C, L]`` or ``[C, L]``, float; the result has its shape and dtype. ``p``:
    the probability of zeroing, in [0, 1] (ValueError otherwise); the kept values are scaled by
    ``1/(1-p)`` so the expectation is unchanged. ``training``: when False the input is returned
    as is. ``inplace``: write the result into ``input``. The draws come from the default
    generator. RuntimeError for an input of other dims."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = input._data.shape
    r = _mask_dropout(input, p, shape[:-1] + (1,), "MulBackward0")
    return _write_back(input, r) if inplace else r


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``) inputs: each channel
    zeroed whole with probability ``p`` (torch.nn.functional.dropout3d).

    ``input``: ``[N, C, D, H, W]`` or ``[C, D, H, W]``, float; the result has its shape and
    dtype. Other dims warn, as torch's, and are treated as unbatched (the mask varies along dim
    0 only); RuntimeError for a 0-dim input. ``p``: the probability of zeroing, in [0, 1]
    (ValueError otherwise); the kept values are scaled by ``1/(1-p)`` so the expectation is
    unchanged. ``training``: when False the input is returned as is. ``inplace``: write the
    result into ``input``. The draws come from the default generator."""
    import warnings
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if input.ndim == 0:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = input._data.shape
    lead = 2 if input.ndim == 5 else 1
    r = _mask_dropout(input, p, shape[:lead] + (1,) * (input.ndim - lead), "MulBackward0")
    return _write_back(input, r) if inplace else r


# torch's alpha dropout constant: -SELU scale * SELU alpha (Klambauer et al., 2017)
_ALPHA_PRIME = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, feature):
    """Dropped values are set to SELU's negative saturation and the result is rescaled
    (``a * (x * keep + alpha' * (keep - 1)) + alpha' * a * p``, ``a = ((alpha'^2 p + 1)
    (1 - p))^-1/2``) so that zero mean and unit variance inputs keep them."""
    from ..random import default_generator
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_long(input.dtype)}")
    shape = input._data.shape
    if p == 1.0:
        r = _mask_dropout(input, p, shape, "MulBackward0")  # torch multiplies by zero
        return _write_back(input, r) if inplace else r
    xp = be(input).xp
    x = input._data
    mshape = shape[:2] + (1,) * (input.ndim - 2) if feature else shape
    a = 1.0 / math.sqrt((_ALPHA_PRIME * _ALPHA_PRIME * p + 1) * (1 - p))
    if mshape == shape and cuda_dropout.accepts(x):  # counter-based draws, as dropout's
        seed, offset = default_generator(input.device).philox_seed_offset(cuda_dropout.groups(x.size))
        arr, scaled = cuda_dropout.apply_alpha(x, p, a, _ALPHA_PRIME * a, _ALPHA_PRIME * a * p, seed, offset)
        r = _make(arr, input.dtype)
        if needs_grad(input):
            record("AddBackward0", _dropout_rule, (input,), r, (_make(scaled, input.dtype),))
        return _write_back(input, r) if inplace else r
    draws = default_generator(input.device).bit_generator.random(mshape, dtype=xp.float32)
    if mshape == shape and x.flags.c_contiguous and kernels.accepts(x):  # one pass from the same draws
        arr, scaled = kernels.dropout.apply_alpha(x, draws, p, a, _ALPHA_PRIME * a, _ALPHA_PRIME * a * p)
    else:
        keep = (draws >= p).astype(x.dtype)
        scaled = keep * x.dtype.type(a)
        shift = (keep - 1) * x.dtype.type(_ALPHA_PRIME * a) + x.dtype.type(_ALPHA_PRIME * a * p)
        arr = x * scaled + shift
    r = _make(arr.astype(x.dtype, copy=False), input.dtype)
    if needs_grad(input):
        record("AddBackward0", _dropout_rule, (input,), r, (_make(scaled, input.dtype),))
    return _write_back(input, r) if inplace else r


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout for self-normalizing (SELU) networks (torch.nn.functional.alpha_dropout;
    Klambauer et al., arXiv:1706.02515): each element is dropped with probability ``p`` to
    SELU's negative saturation ``-scale * alpha`` and the result is rescaled affinely so that
    inputs of zero mean and unit variance keep them.

    ``input``: a float tensor of any shape; the result has its shape and dtype. ``p``: the drop
    probability, in [0, 1] (ValueError otherwise). ``training``: when False (the default here)
    the input is returned as is. ``inplace``: write the result into ``input``. RuntimeError for
    an integer input when it is applied."""
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (torch.nn.functional.feature_alpha_dropout): one draw per
    (sample, channel) of an input ``[N, C, *]``, dropped channels set to SELU's negative
    saturation and the result rescaled as alpha_dropout.

    ``input``: float, at least 2 dims (RuntimeError otherwise). ``p``: the drop probability, in
    [0, 1] (ValueError otherwise). ``training``: when False (the default here) the input is
    returned as is. ``inplace``: write the result into ``input``."""
    return _alpha_dropout(input, p, training, inplace, True)


def _write_back(input, r):
    from ._helpers import check_inplace, commit
    check_inplace(input)
    return commit(input, r)


# ---- dense layer -------------------------------------------------------------------

@autocast_op("lower")
def linear(input, weight, bias=None):
    """Affine map ``input @ weight.T + bias`` as one node (torch.nn.functional.linear).

    ``input``: ``[*, in]`` (at least 1-D). ``weight``: ``[out, in]`` (or ``[in]``, giving
    ``[*]``). ``bias``: optional ``[out]``. Returns ``[*, out]``; all three of one dtype
    (lowered under autocast). TypeError for a non-tensor input or weight; RuntimeError for a
    0-dim input, a weight of other dims, mismatched sizes or dtypes, or tensors on different
    devices."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"linear(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim == 0 or weight.ndim not in (1, 2):
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {input.ndim}D and "
                           f"{weight.ndim}D")
    x, w = input._data, weight._data
    if weight.ndim == 1 or input.ndim == 1:
        from .linalg import matmul
        out = matmul(input, weight.t() if weight.ndim == 2 else weight)
        return out + bias if bias is not None else out
    if x.shape[-1] != w.shape[1]:
        rows = 1
        for s in x.shape[:-1]:
            rows *= s
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} and "
                           f"{w.shape[1]}x{w.shape[0]})")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_long(input.dtype)} and "
                           f"{_long(weight.dtype)}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_long(input.dtype)} != "
                           f"{_long(bias.dtype)}")
    check_same_device(input, weight, "linear")
    if x.ndim > 2:  # one [rows, in] product: numpy runs a 3-d matmul as a stack of small ones
        arr = blas_matmul(x.reshape(-1, x.shape[-1]), w.T).reshape(x.shape[:-1] + (w.shape[0],))
    else:
        arr = blas_matmul(x, w.T)  # ember's threads split a large numpy product (see _blas)
    if arr.dtype != x.dtype:  # numpy multiplies bfloat16 matrices into float32
        arr = arr.astype(x.dtype)
    if bias is not None:
        arr += bias._data
    r = _make(arr, input.dtype)
    if needs_grad(input, weight, bias):
        record("AddmmBackward0" if input.ndim == 2 else "LinearBackward0", _linear_rule, (input, weight, bias), r,
               (input, weight, bias is not None and bias._requires_grad))
    return r


def _linear_rule(g, x, w, bias_req):
    from .linalg import matmul
    from .reduction import sum as _sum
    g2 = g.reshape(-1, g.shape[-1]) if g.ndim != 2 else g  # as 2-d products (see linear)
    gx = gw = gb = None
    if x._requires_grad:
        gx = matmul(g2, w)
        if g.ndim != 2:
            gx = gx.reshape(x.shape)
    if w._requires_grad:
        x2 = x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x
        gw = matmul(g2.t(), x2)
    if bias_req:
        gb = _sum(g, tuple(range(g.ndim - 1))) if g.ndim > 1 else g
    return gx, gw, gb


def bilinear(input1, input2, weight, bias=None):
    """Bilinear map ``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] +
    bias[o]`` (torch.nn.functional.bilinear).

    ``input1``: ``[*, in1]``; ``input2``: ``[*, in2]`` with the same leading dims. ``weight``:
    ``[out, in1, in2]``. ``bias``: optional ``[out]``. Returns ``[*, out]``. RuntimeError when
    the dims or sizes disagree. Composed of linear, a product and a sum, whose gradients follow."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D [out, in1, in2], got {weight.ndim}-D")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {in2}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_f):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0] if bias.ndim else 1} but expected {out_f}")
    # left product first: [*, in1] @ [in1, out * in2] -> [*, out, in2], then contract with input2
    left = linear(input1, weight.permute(0, 2, 1).reshape(out_f * in2, in1))
    out = (left.reshape(tuple(input1.shape[:-1]) + (out_f, in2)) * input2.unsqueeze(-2)).sum(-1)
    return out + bias if bias is not None else out


def _long(d):
    from ._helpers import _type_name
    return _type_name(d)





def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample from the Gumbel-softmax (Concrete) distribution over ``dim`` of ``logits``
    (torch.nn.functional.gumbel_softmax; Jang et al., arXiv:1611.01144; Maddison et al.,
    arXiv:1611.00712): ``softmax((logits + g) / tau, dim)`` with ``g = -log(E)``, ``E`` standard
    exponential noise drawn by ``Tensor.exponential_``.

    ``logits``: ``[*, num_features]`` unnormalized log-probabilities, float. ``tau``: the
    temperature, positive (small values approach one-hot samples; default 1). ``hard``: return
    the one-hot vector of each sample's largest entry, whose gradient is the soft sample's
    (straight-through: ``y_hard - y_soft.detach() + y_soft``). ``eps``: unused, as in torch,
    which warns when it is given. ``dim``: the dim of the classes (default -1). Returns the
    logits' shape and dtype."""
    import warnings

    from .creation import empty_like, zeros_like
    from .reduction import softmax
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -empty_like(logits).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter_(dim, index, value=1.0)
    return y_hard - y_soft.detach() + y_soft
