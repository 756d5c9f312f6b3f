"""Parameter initialisation (torch.nn.init): in-place fills of a tensor, outside autograd.

Random fills draw from ember's default generator (or ``generator=``); their streams are
ember's own, their distributions torch's."""

from __future__ import annotations

import math
import warnings

from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_", "dirac_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_",
           "orthogonal_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity``: 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope 0.01 unless ``param``),
    3/4 for selu."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill with samples from U(a, b), ``a`` the lower bound and ``b`` the upper
    (``torch.nn.init.uniform_``).
    ``tensor`` (any shape) is filled in place and returned, outside autograd.
    ``generator``: the Generator to draw from (ember's default when None)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill with samples from N(mean, std^2), of mean ``mean`` and standard deviation ``std``
    (``torch.nn.init.normal_``).
    ``tensor`` (any shape) is filled in place and returned, outside autograd.
    ``generator``: the Generator to draw from (ember's default when None)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with samples of N(``mean``, ``std``^2) truncated to [``a``, ``b``]
    (``torch.nn.init.trunc_normal_``'s method, ember's own stream): by rejection, redrawing
    normal samples outside [a, b] while the interval holds more than 0.3 of the mass, else
    drawing uniformly in [a, b] and keeping each draw with probability ``pdf(x) / max pdf``
    (so far tails end quickly too).
    Warns, as torch, when ``mean`` is more than 2 ``std`` outside [a, b]. ``tensor`` (a float
    tensor of any shape) is filled in place and returned, outside autograd. ``generator``:
    the Generator to draw from (ember's default when None)."""
    import math
    import warnings

    import numpy

    from ..ops.creation import _gen, _host
    from ..ops.creation import tensor as _tensor
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    g = _gen(generator, tensor.device)
    n = tensor.numel()
    lo, hi = (numpy.asarray([a, b]).astype(numpy.dtype(tensor.dtype.name)).tolist()  # as the tensor holds them
              if tensor.is_floating_point() else (a, b))
    by_normal = cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3
    log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2
    kept = []
    count = 0
    while count < n:
        if by_normal:
            s = _host(g.normal(mean, std, size=n))
            s = s[(s >= lo) & (s <= hi)]
        else:
            s = _host(g.uniform(a, b, size=n))
            keep = numpy.log(_host(g.random(size=n))) <= -0.5 * ((s - mean) / std) ** 2 - log_peak
            s = s[keep]
        kept.append(s)
        count += s.size
    with no_grad():
        return tensor.copy_(_tensor(numpy.concatenate(kept)[:n].reshape(tuple(tensor.shape))))


def constant_(tensor, val):
    """Fill with ``val`` (``torch.nn.init.constant_``).
    ``tensor`` (any shape) is filled in place and returned, outside autograd."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill with 1 (``torch.nn.init.ones_``).  ``tensor`` (any shape) is filled in place and returned,
    outside autograd."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with 0 (``torch.nn.init.zeros_``).  ``tensor`` (any shape) is filled in place and returned,
    outside autograd."""
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Fill a 2-d ``tensor`` ``[n, m]`` with the identity matrix (ones on the main diagonal)
    in place, outside autograd, and return it (``torch.nn.init.eye_``).  ValueError for other
    dims."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from ..ops.creation import eye
    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor, groups=1):
    """Fill a {3,4,5}-d convolution weight ``tensor`` ``[C_out, C_in, *k]`` with the Dirac delta:
    a convolution with it copies input channels to output channels (as many as both have),
    each group of ``groups`` (dividing ``C_out``) starting over at input channel 0
    (``torch.nn.init.dirac_``).  In place, returned.  ValueError for other dims or a ``groups``
    not dividing dim 0."""
    d = tensor.ndim
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per = sizes[0] // groups
    n = min(out_per, sizes[1])
    with no_grad():
        tensor.zero_()
        arr = tensor._data
        for g in range(groups):
            for i in range(n):
                arr[(g * out_per + i, i) + tuple(s // 2 for s in sizes[2:])] = 1
        tensor._vc[0] += 1
    return tensor


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Fill with U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010,
    "Understanding the difficulty of training deep feedforward neural networks";
    ``torch.nn.init.xavier_uniform_``).  ``gain``: the scale, e.g. ``calculate_gain``'s.
    ``fan_in`` is ``size(1) * prod(size[2:])``, ``fan_out`` ``size(0) * prod(size[2:])``
    (ValueError for fewer than 2 dims).
    ``tensor`` (any shape) is filled in place and returned, outside autograd.
    ``generator``: the Generator to draw from (ember's default when None)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Fill with N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot & Bengio,
    2010; ``torch.nn.init.xavier_normal_``).  ``gain``: the scale.
    ``fan_in`` is ``size(1) * prod(size[2:])``, ``fan_out`` ``size(0) * prod(size[2:])``
    (ValueError for fewer than 2 dims).
    ``tensor`` (any shape) is filled in place and returned, outside autograd.
    ``generator``: the Generator to draw from (ember's default when None)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """Fill with U(-b, b), b = gain * sqrt(3 / fan) (He et al., 2015, arXiv:1502.01852;
    ``torch.nn.init.kaiming_uniform_``); ``a`` is the negative slope of a leaky_relu.

    ``mode``: 'fan_in' (keeps the forward pass's variance) or 'fan_out' (the backward's);
    ``fan_in`` is ``size(1) * prod(size[2:])``, ``fan_out`` ``size(0) * prod(size[2:])``
    (ValueError for fewer than 2 dims).
    ``nonlinearity``: the name given to ``calculate_gain`` with ``a``, 'leaky_relu' or
    'relu' recommended.
    ``tensor`` (any shape) is filled in place and returned, outside autograd; a tensor with no
    elements warns and is returned as it is.
    ValueError for another mode or nonlinearity.  ``generator``: the Generator to draw from (ember's
    default when None).
    """
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """Fill with N(0, std^2), std = gain / sqrt(fan) (He et al., 2015, arXiv:1502.01852;
    ``torch.nn.init.kaiming_normal_``).

    ``a``: the negative slope of a leaky_relu.
    ``mode``: 'fan_in' or 'fan_out'; ``fan_in`` is ``size(1) * prod(size[2:])``, ``fan_out``
    ``size(0) * prod(size[2:])``
    (ValueError for fewer than 2 dims).
    ``nonlinearity``: the name given to ``calculate_gain`` with ``a``.
    ``tensor`` (any shape) is filled in place and returned, outside autograd; a tensor with no
    elements warns and is returned as it is.  ValueError for another mode or nonlinearity.
    ``generator``: the Generator to draw from (ember's default when None).
    """
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain: float = 1.0, generator=None):
    """Fill with a (semi-)orthogonal matrix (rows flattened past dim 0), times ``gain``: the Q
    of the QR decomposition of a standard normal matrix, its signs fixed by R's diagonal
    (Saxe et al., 2013, arXiv:1312.6120; ``torch.nn.init.orthogonal_``).  ``tensor`` of at least
    2 dims (ValueError else) is filled in place and returned.
    ``generator``: the Generator to draw from (ember's default when None)."""
    import numpy
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    from ..ops.creation import _gen, _host
    from ..ops.creation import tensor as _tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _host(_gen(generator, tensor.device).standard_normal((rows, cols)))
    if rows < cols:
        flat = flat.T
    q, r = numpy.linalg.qr(flat)
    q = q * numpy.sign(numpy.diag(r))
    if rows < cols:
        q = q.T
    with no_grad():
        return tensor.copy_(_tensor(gain * q.reshape(tuple(tensor.shape))))


