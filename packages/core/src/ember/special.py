"""ember.special: torch.special's functions (special functions of mathematical physics and
statistics), each with torch's gradient.

Values come from scipy.special (cupyx.scipy.special on the GPU); integer inputs give the
default float dtype.  Source of the derivatives: torch's ``derivatives.yaml`` and the
DLMF (https://dlmf.nist.gov), chapters 7 (error functions) and 10 (Bessel functions).
"""

from __future__ import annotations

import math

from .autograd.graph import record
from .ops._helpers import be, needs_grad, operand, wrap
from .ops.elementwise import _out, erf, exp, exp2, expm1, log, log1p, round, sigmoid, where  # noqa: F401
from .ops.elementwise_math import (  # noqa: F401
    _float_binary,
    _float_dtype,
    _special,
    digamma,
    erfc,
    erfinv,
    i0,
    lgamma,
    logit,
    polygamma,
    sinc,
    xlogy,
)
from .ops.reduction import log_softmax, logsumexp, softmax  # noqa: F401  (torch.special has them too)

__all__ = [
    "expit", "logit", "erf", "erfc", "erfcx", "erfinv", "exp2", "expm1", "log1p", "xlogy", "xlog1py", "gammaln",
    "digamma", "psi", "polygamma", "multigammaln", "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "sinc",
    "round", "entr", "logsumexp", "softmax", "log_softmax", "zeta",
]

expit = sigmoid
gammaln = lgamma
psi = digamma

_SQRT_2PI = math.sqrt(2 * math.pi)


def i1(input, *, out=None):
    """The modified Bessel function of the first kind, order 1."""
    return _special(input, "i1", "SpecialI1Backward0", _i1_rule, "in", out=out)


def _i1_rule(g, x):
    # I1'(x) = I0(x) - I1(x) / x, and 1/2 at 0 (DLMF 10.29.2)
    safe = where(x == 0, 1.0, x)
    return g * where(x == 0, 0.5, i0(x) - i1(x) / safe)


def i0e(input, *, out=None):
    """exp(-|x|) * I0(x), which does not overflow."""
    return _special(input, "i0e", "SpecialI0EBackward0", _i0e_rule, "in", out=out)


def _i0e_rule(g, x):
    from .ops.elementwise import sign
    return g * (i1e(x) - sign(x) * i0e(x))


def i1e(input, *, out=None):
    """exp(-|x|) * I1(x), which does not overflow."""
    return _special(input, "i1e", "SpecialI1EBackward0", _i1e_rule, "in", out=out)


def _i1e_rule(g, x):
    from .ops.elementwise import sign
    safe = where(x == 0, 1.0, x)
    return g * where(x == 0, 0.5, i0e(x) - i1e(x) * (sign(x) + 1 / safe))


def ndtr(input, *, out=None):
    """The standard normal distribution function, P(Z <= x)."""
    return _special(input, "ndtr", "SpecialNdtrBackward0", _ndtr_rule, "in", out=out)


def _ndtr_rule(g, x):
    return g * exp(-0.5 * x * x) / _SQRT_2PI


def ndtri(input, *, out=None):
    """The inverse of ndtr on [0, 1] (the normal quantile function)."""
    return _special(input, "ndtri", "SpecialNdtriBackward0", _ndtri_rule, "out", out=out)


def _ndtri_rule(g, r):
    return g * _SQRT_2PI * exp(0.5 * r * r)


def log_ndtr(input, *, out=None):
    """log(ndtr(x)), accurate far into the lower tail."""
    return _special(input, "log_ndtr", "SpecialLogNdtrBackward0", _log_ndtr_rule, "in", out=out)


def _log_ndtr_rule(g, x):
    return g * exp(-0.5 * x * x - log_ndtr(x)) / _SQRT_2PI


def erfcx(input, *, out=None):
    """The scaled complementary error function exp(x^2) * erfc(x)."""
    return _special(input, "erfcx", "SpecialErfcxBackward0", _erfcx_rule, "in", out=out)


def _erfcx_rule(g, x):
    return g * (2 * x * erfcx(x) - 2 / math.sqrt(math.pi))


def entr(input, *, out=None):
    """-x * log(x): 0 at 0, -inf for negative x."""
    dt = _float_dtype(input)
    bk = be(input)
    xp = bk.xp
    x = operand(input, dt, bk)
    with _quiet():
        r = wrap(xp.where(x > 0, -x * xp.log(xp.where(x > 0, x, 1)), xp.where(x == 0, 0.0, -math.inf)), dt)
    if needs_grad(input):
        record("SpecialEntrBackward0", _entr_rule, (input,), r, (input,))
    return _out(r, out)


def _entr_rule(g, x):
    return g * -(1 + log(x))


def xlog1py(input, other, *, out=None):
    """input * log1p(other), 0 where input is 0 (unless other is nan)."""
    r, _ = _float_binary(input, other, _xlog1py_array)
    if needs_grad(input, other):
        record("SpecialXlog1PyBackward0", _xlog1py_rule, (input, other), r, (input, other))
    return _out(r, out)


def _xlog1py_array(xp, x, y):
    with _quiet():
        v = x * xp.log1p(y)
    return xp.where((x == 0) & ~xp.isnan(y), 0.0, v)


def _xlog1py_rule(g, x, y):
    gx = where((x == 0) & ~(y != y), 0.0, g * log1p(y))
    return gx, g * x / (1 + y)


def multigammaln(input, p: int, *, out=None):
    """The log of the multivariate gamma function of dimension ``p``:
    p(p-1)/4 log(pi) + sum_j lgamma(x - j/2), j = 0..p-1."""
    dt = _float_dtype(input)
    bk = be(input)
    x = operand(input, dt, bk)
    arr = sum(bk.special.gammaln(x - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)
    r = wrap(bk.xp.asarray(arr, dtype=x.dtype), dt)
    if needs_grad(input):
        record("MvlgammaBackward0", _multigammaln_rule, (input,), r, (input, p))
    return _out(r, out)


def _multigammaln_rule(g, x, p):
    d = digamma(x)
    for j in range(1, p):
        d = d + digamma(x - j / 2)
    return g * d


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function sum_k (k + other)^-input; differentiable in ``other``
    only, as in torch."""
    r, _ = _float_binary(input, other, lambda xp, x, q: _special_functions(input, other).zeta(x, q))
    if needs_grad(other):
        record("SpecialZetaBackward0", _zeta_rule, (input, other), r, (input, other))
    return _out(r, out)


def _zeta_rule(g, x, q):
    return None, g * -x * zeta(x + 1, q)


def _special_functions(*operands):
    from ._tensor import Tensor
    from .ops._helpers import be as _be
    return _be(next(t for t in operands if isinstance(t, Tensor))).special


def _quiet():
    import numpy
    return numpy.errstate(divide="ignore", invalid="ignore", over="ignore")
