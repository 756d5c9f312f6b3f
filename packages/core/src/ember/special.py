"""ember.special: torch.special's functions (special functions of mathematical physics and
statistics), each with torch's gradient.

Values come from scipy.special (cupyx.scipy.special on the GPU); integer inputs give the
default float dtype.  Source of the derivatives: torch's ``derivatives.yaml`` and the
DLMF (https://dlmf.nist.gov), chapters 7 (error functions) and 10 (Bessel functions).
"""

from __future__ import annotations

import math

from ._tensor import Tensor
from .autograd.graph import record
from .ops._dispatch import register_namespace as _register_namespace
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
    "round", "entr", "logsumexp", "softmax", "log_softmax", "zeta", "bessel_j0", "bessel_j1", "bessel_y0",
    "bessel_y1", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p", "gammainc", "gammaincc",
]

expit = sigmoid
gammaln = lgamma
psi = digamma

_SQRT_2PI = math.sqrt(2 * math.pi)


def i1(input, *, out=None):
    """The modified Bessel function of the first kind, order 1, of ``input`` elementwise
    (torch.special.i1). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    return _special(input, "i1", "SpecialI1Backward0", _i1_rule, "in", out=out)


def _i1_rule(g, x):
    # I1'(x) = I0(x) - I1(x) / x, and 1/2 at 0 (DLMF 10.29.2)
    safe = where(x == 0, 1.0, x)
    return g * where(x == 0, 0.5, i0(x) - i1(x) / safe)


def i0e(input, *, out=None):
    """``exp(-|x|) * I0(x)`` of ``input`` elementwise, which does not overflow
    (torch.special.i0e). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    return _special(input, "i0e", "SpecialI0EBackward0", _i0e_rule, "in", out=out)


def _i0e_rule(g, x):
    from .ops.elementwise import sign
    return g * (i1e(x) - sign(x) * i0e(x))


def i1e(input, *, out=None):
    """``exp(-|x|) * I1(x)`` of ``input`` elementwise, which does not overflow
    (torch.special.i1e). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    return _special(input, "i1e", "SpecialI1EBackward0", _i1e_rule, "in", out=out)


def _i1e_rule(g, x):
    from .ops.elementwise import sign
    safe = where(x == 0, 1.0, x)
    return g * where(x == 0, 0.5, i0e(x) - i1e(x) * (sign(x) + 1 / safe))


def ndtr(input, *, out=None):
    """The standard normal distribution function ``P(Z <= x)`` at ``input``, elementwise
    (torch.special.ndtr). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    return _special(input, "ndtr", "SpecialNdtrBackward0", _ndtr_rule, "in", out=out)


def _ndtr_rule(g, x):
    return g * exp(-0.5 * x * x) / _SQRT_2PI


def ndtri(input, *, out=None):
    """The inverse of ``ndtr`` (the standard normal quantile function) of ``input`` in [0, 1],
    elementwise: -inf at 0, +inf at 1, NaN outside (torch.special.ndtri). Integer and bool
    ``input`` gives the default float dtype; ``out`` receives the result when given."""
    return _special(input, "ndtri", "SpecialNdtriBackward0", _ndtri_rule, "out", out=out)


def _ndtri_rule(g, r):
    return g * _SQRT_2PI * exp(0.5 * r * r)


def log_ndtr(input, *, out=None):
    """``log(ndtr(input))`` elementwise, accurate far into the lower tail
    (torch.special.log_ndtr). Integer and bool ``input`` gives the default float dtype;
    ``out`` receives the result when given."""
    return _special(input, "log_ndtr", "SpecialLogNdtrBackward0", _log_ndtr_rule, "in", out=out)


def _log_ndtr_rule(g, x):
    return g * exp(-0.5 * x * x - log_ndtr(x)) / _SQRT_2PI


def erfcx(input, *, out=None):
    """The scaled complementary error function ``exp(x**2) * erfc(x)`` of ``input``,
    elementwise (torch.special.erfcx). Integer and bool ``input`` gives the default float
    dtype; ``out`` receives the result when given."""
    return _special(input, "erfcx", "SpecialErfcxBackward0", _erfcx_rule, "in", out=out)


def _erfcx_rule(g, x):
    return g * (2 * x * erfcx(x) - 2 / math.sqrt(math.pi))


def entr(input, *, out=None):
    """The entropy term ``-x * log(x)`` of ``input`` elementwise: 0 at 0, -inf for negative x
    (torch.special.entr). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    dt = _float_dtype(input)
    bk = be(input)
    xp = bk.xp
    x = operand(input, dt, bk)
    r = wrap(xp.where(x > 0, -x * xp.log(xp.where(x > 0, x, 1)), xp.where(x == 0, 0.0, -math.inf)), dt)
    if needs_grad(input):
        record("SpecialEntrBackward0", _entr_rule, (input,), r, (input,))
    return _out(r, out)


def _entr_rule(g, x):
    return g * -(1 + log(x))


def xlog1py(input, other, *, out=None):
    """``input * log1p(other)`` elementwise, 0 where ``input`` is 0 unless ``other`` is NaN
    (torch.special.xlog1py). ``input`` and ``other`` are tensors or numbers, broadcast
    together; integer operands give the default float dtype. ``out`` receives the result
    when given."""
    r, _ = _float_binary(input, other, _xlog1py_array)
    if needs_grad(input, other):
        record("SpecialXlog1PyBackward0", _xlog1py_rule, (input, other), r, (input, other))
    return _out(r, out)


def _xlog1py_array(xp, x, y):
    v = x * xp.log1p(y)
    return xp.where((x == 0) & ~xp.isnan(y), 0.0, v)


def _xlog1py_rule(g, x, y):
    gx = where((x == 0) & ~(y != y), 0.0, g * log1p(y))
    return gx, g * x / (1 + y)


def multigammaln(input, p: int, *, out=None):
    """The log of the multivariate gamma function of dimension ``p`` at ``input``: ``p(p-1)/4
    log(pi) + sum_j lgamma(x - j/2)``, j = 0..p-1 (torch.special.multigammaln,
    torch.mvlgamma). ``p`` is a positive int. Integer and bool ``input`` gives the default
    float dtype; ``out`` receives the result when given."""
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
    """The Hurwitz zeta function ``sum_k (k + other) ** -input``, k = 0, 1, ...
    (torch.special.zeta).

    ``input`` (the exponent) and ``other`` (the shift) are tensors or numbers, broadcast
    together; integer operands give the default float dtype. Differentiable in ``other``
    only, as in torch. ``out`` receives the result when given."""
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



# ---- Bessel functions, orthogonal polynomials, incomplete gamma ----------------------
# torch gives these no gradient (except gammainc/gammaincc in their second argument).

def _forward_only(fname, doc, fname_public):
    def op(input, *, out=None):
        r = wrap(getattr(be(input).special, fname)(operand(input, _float_dtype(input), be(input))),
                 _float_dtype(input))
        return _out(r, out)
    op.__doc__ = (f"{doc} Elementwise on ``input`` (torch.special.{fname_public}); integer and bool ``input`` "
                  "gives the default float dtype; ``out`` receives the result when given. No gradient.")
    return op


bessel_j0 = _forward_only("j0", "The Bessel function of the first kind, order 0.", "bessel_j0")
bessel_j1 = _forward_only("j1", "The Bessel function of the first kind, order 1.", "bessel_j1")
bessel_y0 = _forward_only("y0", "The Bessel function of the second kind, order 0.", "bessel_y0")
bessel_y1 = _forward_only("y1", "The Bessel function of the second kind, order 1.", "bessel_y1")
modified_bessel_i0 = _forward_only("i0", "The modified Bessel function of the first kind, order 0.",
                                   "modified_bessel_i0")
modified_bessel_i1 = _forward_only("i1", "The modified Bessel function of the first kind, order 1.",
                                   "modified_bessel_i1")
modified_bessel_k0 = _forward_only("k0", "The modified Bessel function of the second kind, order 0.",
                                   "modified_bessel_k0")
modified_bessel_k1 = _forward_only("k1", "The modified Bessel function of the second kind, order 1.",
                                   "modified_bessel_k1")
scaled_modified_bessel_k0 = _forward_only("k0e", "``exp(x) * K0(x)``.", "scaled_modified_bessel_k0")
scaled_modified_bessel_k1 = _forward_only("k1e", "``exp(x) * K1(x)``.", "scaled_modified_bessel_k1")


def spherical_bessel_j0(input, *, out=None):
    """The spherical Bessel function of the first kind, order 0: ``sin(x) / x`` of ``input``, 1
    at 0 (torch.special.spherical_bessel_j0). No gradient. Integer and bool ``input`` gives
    the default float dtype; ``out`` receives the result when given."""
    dt = _float_dtype(input)
    bk = be(input)
    return _out(wrap(bk.special.spherical_jn(0, operand(input, dt, bk)), dt), out)


def airy_ai(input, *, out=None):
    """The Airy function Ai of ``input``, elementwise (torch.special.airy_ai). No gradient.
    Integer and bool ``input`` gives the default float dtype; ``out`` receives the result
    when given."""
    dt = _float_dtype(input)
    bk = be(input)
    return _out(wrap(bk.special.airy(operand(input, dt, bk))[0], dt), out)


def _recurrence(name, first, step, title):
    """An orthogonal polynomial P_n(x) from P_0 = 1, P_1 = first(x) and
    P_{k+1} = step(k, x, P_k, P_{k-1}); ``n`` a number or a tensor broadcast with x
    (0 for negative n, as torch)."""
    def op(input, n, *, out=None):
        import numpy
        dt = _float_dtype(input)
        x = numpy.asarray(operand(input, dt, be(input)), dtype=numpy.float64)
        ns = numpy.asarray(n._data if isinstance(n, Tensor) else n)
        x, ns = numpy.broadcast_arrays(x, ns)
        top = int(ns.max()) if ns.size else 0
        result = numpy.where(ns == 0, 1.0, 0.0)
        prev, cur = numpy.ones_like(x), first(x)
        if top >= 1:
            result = numpy.where(ns == 1, cur, result)
        for k in range(1, top):
            prev, cur = cur, step(k, x, cur, prev)
            result = numpy.where(ns == k + 1, cur, result)
        return _out(wrap(result.astype(dt.np), dt), out)
    op.__name__ = name
    op.__doc__ = (f"{title} P_n(x) at ``input`` of degree ``n`` (torch.special.{name}), from its three-term "
                  "recurrence.\n\n``n`` is an int or an integer tensor broadcast with ``input`` (a negative degree "
                  "gives 0, as torch); integer and bool ``input`` gives the default float dtype, and the values "
                  "are computed in float64. ``out`` receives the result when given. No gradient.")
    return op


def _chebyshev_step(k, x, cur, prev):
    return 2 * x * cur - prev


chebyshev_polynomial_t = _recurrence("chebyshev_polynomial_t", lambda x: x, _chebyshev_step,
                                     "The Chebyshev polynomial of the first kind")
chebyshev_polynomial_u = _recurrence("chebyshev_polynomial_u", lambda x: 2 * x, _chebyshev_step,
                                     "The Chebyshev polynomial of the second kind")
chebyshev_polynomial_v = _recurrence("chebyshev_polynomial_v", lambda x: 2 * x - 1, _chebyshev_step,
                                     "The Chebyshev polynomial of the third kind")
chebyshev_polynomial_w = _recurrence("chebyshev_polynomial_w", lambda x: 2 * x + 1, _chebyshev_step,
                                     "The Chebyshev polynomial of the fourth kind")


def _shifted(poly, name):
    def op(input, n, *, out=None):
        return poly(2 * input - 1, n, out=out)
    op.__name__ = name
    op.__doc__ = (f"{poly.__name__} at ``2 * input - 1``: the shifted polynomial of degree ``n``, orthogonal on "
                  f"[0, 1] (torch.special.{name}). ``n`` is an int or an integer tensor broadcast with ``input``; "
                  "``out`` receives the result when given. No gradient.")
    return op


shifted_chebyshev_polynomial_t = _shifted(chebyshev_polynomial_t, "shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _shifted(chebyshev_polynomial_u, "shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _shifted(chebyshev_polynomial_v, "shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _shifted(chebyshev_polynomial_w, "shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _recurrence("hermite_polynomial_h", lambda x: 2 * x,
                                   lambda k, x, cur, prev: 2 * x * cur - 2 * k * prev,
                                   "The physicists' Hermite polynomial")
hermite_polynomial_he = _recurrence("hermite_polynomial_he", lambda x: x, lambda k, x, cur, prev: x * cur - k * prev,
                                    "The probabilists' Hermite polynomial")
laguerre_polynomial_l = _recurrence("laguerre_polynomial_l", lambda x: 1 - x,
                                    lambda k, x, cur, prev: ((2 * k + 1 - x) * cur - k * prev) / (k + 1),
                                    "The Laguerre polynomial")
legendre_polynomial_p = _recurrence("legendre_polynomial_p", lambda x: x,
                                    lambda k, x, cur, prev: ((2 * k + 1) * x * cur - k * prev) / (k + 1),
                                    "The Legendre polynomial")


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function ``P(input, other)`` elementwise
    (torch.special.gammainc).

    ``input`` (a > 0) and ``other`` (x >= 0) are tensors or numbers, broadcast together;
    integer operands give the default float dtype. Differentiable in ``other``: a gradient
    asked of ``input`` raises NotImplementedError, as in torch. ``out`` receives the result
    when given."""
    return _incomplete_gamma(input, other, "gammainc", "IgammaBackward0", 1.0, out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P(input,
    other)`` elementwise (torch.special.gammaincc).

    ``input`` (a > 0) and ``other`` (x >= 0) are tensors or numbers, broadcast together;
    integer operands give the default float dtype. Differentiable in ``other``: a gradient
    asked of ``input`` raises NotImplementedError, as in torch. ``out`` receives the result
    when given."""
    return _incomplete_gamma(input, other, "gammaincc", "IgammacBackward0", -1.0, out)


def _incomplete_gamma(a, x, fname, node, sign, out):
    r, _ = _float_binary(a, x, lambda xp, p, q: getattr(_special_functions(a, x), fname)(p, q))
    if needs_grad(a, x):
        if isinstance(a, Tensor) and a.requires_grad:
            raise NotImplementedError(f"the derivative of {fname} with respect to its first argument is not "
                                      "implemented")
        record(node, _incomplete_gamma_rule, (a, x), r, (a, x, sign))
    return _out(r, out)


def _incomplete_gamma_rule(g, a, x, sign):
    # dP/dx = x^(a-1) e^(-x) / Gamma(a)
    return None, sign * g * exp((a - 1) * log(x) - x - lgamma(a))


# the ops published here pass through the dispatch seam when a mode listens
_register_namespace(globals())
