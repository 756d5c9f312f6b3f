"""Activation layers (torch.nn.modules.activation)."""

from __future__ import annotations

import warnings

from ... import ops as _ops
from ...ops import activation as A
from .module import Module

__all__ = ["ReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "LeakyReLU", "SiLU", "ELU", "Softplus", "ReLU6",
           "SELU", "CELU", "Softsign", "Hardtanh", "Hardsigmoid", "Hardswish", "Mish", "LogSigmoid", "Tanhshrink",
           "Softshrink", "Hardshrink", "Threshold", "GLU", "Softmin", "Softmax2d", "PReLU", "RReLU"]


class ReLU(Module):
    """``max(x, 0)`` elementwise; any shape, kept (torch.nn.ReLU).  ``inplace``: overwrite the input
    and return it."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return _ops.relu_(input) if self.inplace else _ops.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """Gaussian error linear unit, exact (``approximate='none'``) or tanh-approximated."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return A.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """Hyperbolic tangent elementwise."""

    def forward(self, input):
        return _ops.tanh(input)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` elementwise."""

    def forward(self, input):
        return _ops.sigmoid(input)


class SiLU(Module):
    """``x * sigmoid(x)`` elementwise, any shape (torch.nn.SiLU; the swish of Ramachandran et
    al., 2017, arXiv:1710.05941).  ``inplace``: overwrite the input and return it."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return A.silu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere (default 0.01); any shape
    (torch.nn.LeakyReLU).  ``inplace``: overwrite the input and return it."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return A.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere; any shape (torch.nn.ELU;
    Clevert et al., 2015, arXiv:1511.07289).  ``inplace``: overwrite the input and return it."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return A.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``: ``x`` itself where
    ``beta * x > threshold``, for numerical stability (``beta`` default 1,
    ``threshold`` 20); any shape (torch.nn.Softplus)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return A.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


def _softmax_dim(ndim: int, name: str) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    """``exp(x) / sum(exp(x))`` along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        dim = self.dim if self.dim is not None else _softmax_dim(input.dim(), "softmax")
        return _ops.softmax(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log(softmax(x))`` along ``dim``, computed stably."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim if self.dim is not None else _softmax_dim(input.dim(), "log_softmax")
        return _ops.log_softmax(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


def _simple(name, fn_name, doc, **defaults):
    """A module whose forward is ``F.<fn_name>(input, **its settings)``."""
    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        names = list(defaults)
        values = dict(defaults)
        values.update(zip(names, args))
        values.update(kwargs)
        for key, value in values.items():
            setattr(self, key, value)

    def forward(self, input):
        from .. import functional as F
        return getattr(F, fn_name)(input, **{k: getattr(self, k) for k in defaults})

    def extra_repr(self):
        return ", ".join(f"{k}={getattr(self, k)}" for k in defaults if k != "inplace" or getattr(self, k))
    return type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                  "__doc__": doc, "__module__": __name__})


ReLU6 = _simple("ReLU6", "relu6", "min(max(x, 0), 6) (torch.nn.ReLU6).", inplace=False)
SELU = _simple("SELU", "selu", "Scaled ELU with the self-normalizing constants (torch.nn.SELU).", inplace=False)
CELU = _simple("CELU", "celu", "Continuously differentiable ELU (torch.nn.CELU).", alpha=1.0, inplace=False)
Softsign = _simple("Softsign", "softsign", "x / (1 + ``|x|``) (torch.nn.Softsign).")
Hardtanh = _simple("Hardtanh", "hardtanh", "x clamped into [min_val, max_val] (torch.nn.Hardtanh).", min_val=-1.0,
                   max_val=1.0, inplace=False)
Hardsigmoid = _simple("Hardsigmoid", "hardsigmoid", "relu6(x + 3) / 6 (torch.nn.Hardsigmoid).", inplace=False)
Hardswish = _simple("Hardswish", "hardswish", "x * relu6(x + 3) / 6 (torch.nn.Hardswish).", inplace=False)
Mish = _simple("Mish", "mish", "x * tanh(softplus(x)) (torch.nn.Mish).", inplace=False)
LogSigmoid = _simple("LogSigmoid", "logsigmoid", "log(sigmoid(x)) (torch.nn.LogSigmoid).")
Tanhshrink = _simple("Tanhshrink", "tanhshrink", "x - tanh(x) (torch.nn.Tanhshrink).")
Softshrink = _simple("Softshrink", "softshrink", "Soft thresholding by lambd (torch.nn.Softshrink).", lambd=0.5)
Hardshrink = _simple("Hardshrink", "hardshrink", "Hard thresholding by lambd (torch.nn.Hardshrink).", lambd=0.5)
Softshrink.extra_repr = Hardshrink.extra_repr = lambda self: str(self.lambd)  # as torch prints them
Hardsigmoid.extra_repr = Hardswish.extra_repr = lambda self: ""  # torch prints no settings, inplace or not
Threshold = _simple("Threshold", "threshold", "x above threshold, else value (torch.nn.Threshold).",
                    threshold=None, value=None, inplace=False)
GLU = _simple("GLU", "glu", "The gated linear unit over ``dim`` (torch.nn.GLU).", dim=-1)
Softmin = _simple("Softmin", "softmin", "softmax(-x) along ``dim`` (torch.nn.Softmin).", dim=None)


class Softmax2d(Module):
    """Softmax over the channels of [N, C, H, W] or [C, H, W] (torch.nn.Softmax2d)."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return _ops.softmax(input, -3)


class PReLU(Module):
    """max(0, x) + a * min(0, x) with a learned slope ``a`` (one, or one per channel),
    initialized to ``init`` (torch.nn.PReLU; He et al., 2015, arXiv:1502.01852).

    ``num_parameters``: 1, or C for a slope per channel (dim 1 of the input, dim 0 of a 1-D
    one; RuntimeError in forward when C differs).  ``device``, ``dtype``: of the weight
    ``[num_parameters]``.  Any shape, kept.
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        from ..parameter import Parameter
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(_ops.full((num_parameters,), init, dtype=dtype))

    def forward(self, input):
        from .. import functional as F
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: random slopes in [lower, upper] while training, their mean in
    eval (torch.nn.RReLU; Xu et al., 2015, arXiv:1505.00853).

    ``lower``, ``upper``: the bounds of the uniform slope, drawn per element of a negative
    input.  ``inplace``: overwrite the input.  Any shape, kept.
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        from .. import functional as F
        return F.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")
