"""Elementwise math beyond arithmetic: inverse trigonometric and hyperbolic functions, the
special functions of torch.special (error function, gamma family, Bessel, normal
distribution), and two-argument functions (atan2, hypot, copysign, xlogy, logaddexp).

Integer and bool inputs give the default float dtype, as in torch.  Each gradient rule is
written with ember ops (so double backward works); those written with operators only
also run on raw arrays (``on_arrays``).  Formulas: torch's ``derivatives.yaml``.
"""

from __future__ import annotations

import math

from .. import _dtype as D
from .._tensor import Tensor, _make
from ..autograd.graph import on_arrays, record
from ._helpers import be, needs_grad, operand, wrap
from .elementwise import _binary, _out, _promote, _unary, exp, log, where

__all__ = [
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan", "arcsinh",
    "arccosh", "arctanh", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "i0", "sinc", "logit", "frac",
    "sgn", "deg2rad", "rad2deg", "positive", "atan2", "arctan2", "hypot", "copysign", "xlogy", "logaddexp",
    "logaddexp2", "float_power", "mvlgamma",
]


def _float_dtype(x: Tensor) -> D.dtype:
    return x.dtype if x.dtype._category >= 2 else D.get_default_dtype()


def _special(x: Tensor, fname: str, node: str, rule, save: str, *extra, out=None):
    """scipy.special's (cupyx's) ``fname`` on ``x`` in its float dtype; ``save`` is 'in' or
    'out' (what the rule gets after the gradient, followed by ``extra``)."""
    dt = _float_dtype(x)
    bk = be(x)
    r = wrap(getattr(bk.special, fname)(*extra, operand(x, dt, bk)), dt)
    if needs_grad(x):
        record(node, rule, (x,), r, ((r,) if save == "out" else (x,)) + extra)
    return _out(r, out)


# ---- inverse trigonometric and hyperbolic ------------------------------------------

@on_arrays()
def _asin_rule(g, x): return g / (1 - x * x) ** 0.5
@on_arrays()
def _acos_rule(g, x): return -g / (1 - x * x) ** 0.5
@on_arrays()
def _atan_rule(g, x): return g / (1 + x * x)
@on_arrays()
def _asinh_rule(g, x): return g / (x * x + 1) ** 0.5
@on_arrays()
def _acosh_rule(g, x): return g / ((x - 1) * (x + 1)) ** 0.5
@on_arrays()
def _atanh_rule(g, x): return g / (1 - x * x)


def _sinh_rule(g, x): return g * cosh(x)
def _cosh_rule(g, x): return g * sinh(x)


def asin(input, *, out=None):
    """Inverse sine of ``input`` elementwise, in [-pi/2, pi/2]; NaN outside [-1, 1]
    (torch.asin; ``arcsin`` is the same function). Integer and bool ``input`` gives the
    default float dtype; ``out`` receives the result when given."""
    return _unary(input, "asin", "AsinBackward0", _asin_rule, "in", out)


def acos(input, *, out=None):
    """Inverse cosine of ``input`` elementwise, in [0, pi]; NaN outside [-1, 1] (torch.acos;
    ``arccos`` is the same function). Integer and bool ``input`` gives the default float
    dtype; ``out`` receives the result when given."""
    return _unary(input, "acos", "AcosBackward0", _acos_rule, "in", out)


def atan(input, *, out=None):
    """Inverse tangent of ``input`` elementwise, in (-pi/2, pi/2) (torch.atan; ``arctan`` is
    the same function). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    return _unary(input, "atan", "AtanBackward0", _atan_rule, "in", out)


def sinh(input, *, out=None):
    """Hyperbolic sine of ``input`` elementwise (torch.sinh). Integer and bool ``input`` gives
    the default float dtype; ``out`` receives the result when given."""
    return _unary(input, "sinh", "SinhBackward0", _sinh_rule, "in", out)


def cosh(input, *, out=None):
    """Hyperbolic cosine of ``input`` elementwise (torch.cosh). Integer and bool ``input``
    gives the default float dtype; ``out`` receives the result when given."""
    return _unary(input, "cosh", "CoshBackward0", _cosh_rule, "in", out)


def asinh(input, *, out=None):
    """Inverse hyperbolic sine of ``input`` elementwise (torch.asinh; ``arcsinh`` is the same
    function). Integer and bool ``input`` gives the default float dtype; ``out`` receives
    the result when given."""
    return _unary(input, "asinh", "AsinhBackward0", _asinh_rule, "in", out)


def acosh(input, *, out=None):
    """Inverse hyperbolic cosine of ``input`` elementwise; NaN below 1 (torch.acosh;
    ``arccosh`` is the same function). Integer and bool ``input`` gives the default float
    dtype; ``out`` receives the result when given."""
    return _unary(input, "acosh", "AcoshBackward0", _acosh_rule, "in", out)


def atanh(input, *, out=None):
    """Inverse hyperbolic tangent of ``input`` elementwise; NaN outside [-1, 1], +-inf at +-1
    (torch.atanh; ``arctanh`` is the same function). Integer and bool ``input`` gives the
    default float dtype; ``out`` receives the result when given."""
    return _unary(input, "atanh", "AtanhBackward0", _atanh_rule, "in", out)


arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh


# ---- special functions -------------------------------------------------------------

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _erfc_rule(g, x): return -_TWO_OVER_SQRT_PI * g * exp(-x * x)
def _erfinv_rule(g, r): return (math.sqrt(math.pi) / 2) * g * exp(r * r)
def _lgamma_rule(g, x): return g * digamma(x)
def _digamma_rule(g, x): return g * polygamma(1, x)


def erfc(input, *, out=None):
    """The complementary error function ``1 - erf(input)`` elementwise, accurate where erf is
    near 1 (torch.erfc, torch.special.erfc). Integer and bool ``input`` gives the default
    float dtype; ``out`` receives the result when given."""
    return _special(input, "erfc", "ErfcBackward0", _erfc_rule, "in", out=out)


def erfinv(input, *, out=None):
    """The inverse error function of ``input`` elementwise: +-inf at +-1, NaN outside [-1, 1]
    (torch.erfinv, torch.special.erfinv). Integer and bool ``input`` gives the default float
    dtype; ``out`` receives the result when given."""
    return _special(input, "erfinv", "ErfinvBackward0", _erfinv_rule, "out", out=out)


def lgamma(input, *, out=None):
    """``log|Gamma(input)|`` elementwise; +inf at the poles 0, -1, -2, ... (torch.lgamma,
    torch.special.gammaln; scipy's gammaln). Integer and bool ``input`` gives the default
    float dtype; ``out`` receives the result when given."""
    return _special(input, "gammaln", "LgammaBackward0", _lgamma_rule, "in", out=out)


def digamma(input, *, out=None):
    """The digamma function ``Gamma'(x) / Gamma(x)`` of ``input`` elementwise; -inf at 0 and
    NaN at the negative integers, as torch (scipy.special.psi gives NaN at 0)
    (torch.digamma, torch.special.digamma and psi). Integer and bool ``input`` gives the
    default float dtype; ``out`` receives the result when given."""
    dt = _float_dtype(input)
    bk = be(input)
    x = operand(input, dt, bk)
    r = wrap(bk.xp.where(x == 0, -math.inf, bk.special.psi(x)), dt)
    if needs_grad(input):
        record("DigammaBackward0", _digamma_rule, (input,), r, (input,))
    return _out(r, out)


def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of digamma at ``input``, elementwise (torch.polygamma,
    torch.special.polygamma).

    ``n`` is a non-negative int (a negative or fractional one raises RuntimeError); ``n =
    0`` is ``digamma``. Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    if int(n) != n or n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    n = int(n)
    if n == 0:
        return digamma(input, out=out)
    dt = _float_dtype(input)
    bk = be(input)
    r = wrap(bk.special.polygamma(n, operand(input, dt, bk)), dt)
    if needs_grad(input):
        record("PolygammaBackward0", _polygamma_rule, (input,), r, (input, n))
    return _out(r, out)


def _polygamma_rule(g, x, n):
    return g * polygamma(n + 1, x)


def i0(input, *, out=None):
    """The modified Bessel function of the first kind, order 0, of ``input`` elementwise
    (torch.i0, torch.special.i0). Integer and bool ``input`` gives the default float dtype;
    ``out`` receives the result when given."""
    return _special(input, "i0", "I0Backward0", _i0_rule, "in", out=out)


def _i0_rule(g, x):
    from ..special import i1
    return g * i1(x)


def sinc(input, *, out=None):
    """The normalized sinc ``sin(pi x) / (pi x)`` of ``input`` elementwise, 1 at 0 (torch.sinc,
    torch.special.sinc). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    dt = _float_dtype(input)
    bk = be(input)
    r = wrap(bk.xp.sinc(operand(input, dt, bk)) if hasattr(bk.xp, "sinc") else _sinc_array(bk.xp, input, dt, bk), dt)
    if needs_grad(input):
        record("SincBackward0", _sinc_rule, (input,), r, (input, r))
    return _out(r, out)


def _sinc_array(xp, input, dt, bk):
    x = operand(input, dt, bk) * math.pi
    safe = xp.where(x == 0, 1.0, x)
    return xp.where(x == 0, 1.0, xp.sin(safe) / safe)


def _sinc_rule(g, x, r):
    from .elementwise import cos
    px = x * math.pi
    d = (cos(px) * math.pi - r * math.pi) / px  # (cos(pi x) - sinc(x)) / x
    return where(x == 0, 0.0, g * d)


def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))`` of ``input`` elementwise, with ``p`` clamped into ``[eps, 1 -
    eps]`` when ``eps`` is given (torch.logit, torch.special.logit).

    Without ``eps``, 0 and 1 give -inf and +inf and values outside [0, 1] NaN; the gradient
    is zero where the clamp bites. Integer and bool ``input`` gives the default float dtype;
    ``out`` receives the result when given."""
    dt = _float_dtype(input)
    bk = be(input)
    xp = bk.xp
    x = operand(input, dt, bk)
    if eps is not None:
        x = xp.clip(x, eps, 1 - eps)
    r = wrap(xp.log(x / (1 - x)), dt)
    if needs_grad(input):
        record("LogitBackward0", _logit_rule, (input,), r, (input, eps))
    return _out(r, out)


def _logit_rule(g, x, eps):
    d = g / (x * (1 - x))
    if eps is None:
        return d
    return where((x < eps) | (x > 1 - eps), 0.0, d)


# ---- small elementwise helpers -----------------------------------------------------

@on_arrays()
def _identity_rule(g): return g
@on_arrays()
def _zero_rule(g): return g * 0


def frac(input, *, out=None):
    """The fractional part ``input - trunc(input)`` elementwise, with the sign of ``input``
    (torch.frac). Floating dtypes only: an integer tensor raises RuntimeError. ``out``
    receives the result when given."""
    if input.dtype._category < 2:
        raise RuntimeError(f"\"frac_cpu\" not implemented for '{_type_name(input.dtype)}'")
    xp = be(input).xp
    r = wrap(input._data - xp.trunc(input._data), input.dtype)
    if needs_grad(input):
        record("FracBackward0", _identity_rule, (input,), r)
    return _out(r, out)


def sgn(input, *, out=None):
    """The sign of ``input`` elementwise: ``sign`` for real dtypes, ``x / |x|`` (0 at 0) for
    complex ones (torch.sgn). The shape and dtype are kept; ``out`` receives the result when
    given. The gradient is zero for real inputs."""
    from .elementwise import sign
    if input.dtype.is_complex:
        xp = be(input).xp
        a = xp.abs(input._data)
        r = wrap(xp.where(a == 0, 0, input._data / xp.where(a == 0, 1, a)), input.dtype)
        return _out(r, out)
    return sign(input, out=out)


def deg2rad(input, *, out=None):
    """``input`` converted from degrees to radians (``input * pi / 180``) (torch.deg2rad).
    Integer and bool ``input`` gives the default float dtype; ``out`` receives the result
    when given."""
    return _scaled(input, math.pi / 180, "Deg2RadBackward0", out)


def rad2deg(input, *, out=None):
    """``input`` converted from radians to degrees (``input * 180 / pi``) (torch.rad2deg).
    Integer and bool ``input`` gives the default float dtype; ``out`` receives the result
    when given."""
    return _scaled(input, 180 / math.pi, "Rad2DegBackward0", out)


def _scaled(input, factor, node, out):
    dt = _float_dtype(input)
    bk = be(input)
    r = wrap(bk.xp.multiply(operand(input, dt, bk), factor), dt)
    if needs_grad(input):
        record(node, _scale_rule, (input,), r, (factor,))
    return _out(r, out)


@on_arrays()
def _scale_rule(g, factor): return g * factor


def mvlgamma(input, p):
    """The multivariate log-gamma function of dimension ``p`` at ``input`` (torch.mvlgamma, the
    same as ember.special.multigammaln); every element of ``input`` must exceed ``(p - 1) /
    2``."""
    from ..special import multigammaln
    return multigammaln(input, p)


def positive(input):
    """``input`` itself (torch.positive, unary ``+``); a bool tensor raises TypeError."""
    if input.dtype is D.bool_:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


# ---- two arguments -----------------------------------------------------------------

def _float_binary(a, b, array_fn):
    dt = _promote(a, b)
    if dt._category < 2:
        dt = D.get_default_dtype()
    return wrap(_binary(a, b, array_fn, dt), dt), dt


def atan2(input, other, *, out=None):
    """The angle of the point ``(other, input)`` in radians, in [-pi, pi]: ``atan(input /
    other)`` in the right quadrant (torch.atan2; ``arctan2`` is the same function).

    ``input`` and ``other`` are tensors or numbers, broadcast together; integer and bool
    operands give the default float dtype. ``out`` receives the result when given."""
    r, _ = _float_binary(input, other, lambda xp, y, x: xp.atan2(y, x))
    if needs_grad(input, other):
        record("Atan2Backward0", _atan2_rule, (input, other), r, (input, other))
    return _out(r, out)


def _atan2_rule(g, y, x):
    d = g / (x * x + y * y)
    return d * x, -d * y


arctan2 = atan2


def hypot(input, other, *, out=None):
    """``sqrt(input**2 + other**2)`` elementwise, without overflow in the squares
    (torch.hypot). ``input`` and ``other`` broadcast together; integer operands give the
    default float dtype. ``out`` receives the result when given."""
    r, _ = _float_binary(input, other, lambda xp, a, b: xp.hypot(a, b))
    if needs_grad(input, other):
        record("HypotBackward0", _hypot_rule, (input, other), r, (input, other, r))
    return _out(r, out)


def _hypot_rule(g, a, b, r):
    d = g / r
    return d * a, d * b


def copysign(input, other, *, out=None):
    """``|input|`` with the sign of ``other`` elementwise, a signed zero counting
    (``copysign(1, -0.) = -1``) (torch.copysign). ``input`` and ``other`` are tensors or
    numbers, broadcast together; integer operands give the default float dtype. ``out``
    receives the result when given."""
    r, _ = _float_binary(input, other, lambda xp, a, b: xp.copysign(a, b))
    if needs_grad(input, other):
        record("CopysignBackward0", _copysign_rule, (input, other), r, (input, r))
    return _out(r, out)


def _copysign_rule(g, a, r):
    # d|a|*s/da = r / a, taken as 0 at a == 0 (torch's copysign_tensor_self_backward)
    return where(a == 0, 0.0, g * r / where(a == 0, 1.0, a)), g * 0


def xlogy(input, other, *, out=None):
    """``input * log(other)`` elementwise, 0 where ``input`` is 0 unless ``other`` is NaN
    (torch.xlogy, torch.special.xlogy). ``input`` and ``other`` are tensors or numbers,
    broadcast together; integer operands give the default float dtype. ``out`` receives the
    result when given."""
    r, _ = _float_binary(input, other, _xlogy_array)
    if needs_grad(input, other):
        record("XlogyBackward0", _xlogy_rule, (input, other), r, (input, other))
    return _out(r, out)


def _xlogy_array(xp, x, y):
    v = x * xp.log(y)  # numpy's warnings for log(0) are filtered for ember (ember._numpy_warnings)
    return xp.where((x == 0) & ~xp.isnan(y), 0.0, v)


def _xlogy_rule(g, x, y):
    gx = where((x == 0) & ~(y != y), 0.0, g * log(y))  # y != y: nan
    return gx, g * x / y


def logaddexp(input, other, *, out=None):
    """``log(exp(input) + exp(other))`` elementwise, without overflow (torch.logaddexp).
    ``input`` and ``other`` broadcast together; integer operands give the default float
    dtype. ``out`` receives the result when given."""
    r, _ = _float_binary(input, other, lambda xp, a, b: xp.logaddexp(a, b))
    if needs_grad(input, other):
        record("LogaddexpBackward0", _logaddexp_rule, (input, other), r, (input, other, r))
    return _out(r, out)


def _logaddexp_rule(g, a, b, r):
    return g * exp(a - r), g * exp(b - r)


def logaddexp2(input, other, *, out=None):
    """``log2(2**input + 2**other)`` elementwise, without overflow (torch.logaddexp2).
    ``input`` and ``other`` broadcast together; integer operands give the default float
    dtype. ``out`` receives the result when given."""
    r, _ = _float_binary(input, other, lambda xp, a, b: xp.logaddexp2(a, b))
    if needs_grad(input, other):
        record("Logaddexp2Backward0", _logaddexp2_rule, (input, other), r, (input, other, r))
    return _out(r, out)


def _logaddexp2_rule(g, a, b, r):
    ln2 = math.log(2.0)
    return g * exp((a - r) * ln2), g * exp((b - r) * ln2)


def float_power(input, exponent, *, out=None):
    """``input ** exponent`` computed in float64, or complex128 when an operand is complex
    (torch.float_power). ``input`` and ``exponent`` are tensors or numbers (one at least a
    tensor), broadcast together; the result is float64 (complex128) whatever their dtypes.
    ``out`` receives the result when given."""
    from .conversion import to
    from .elementwise import pow as _pow
    dt = D.complex128 if any(isinstance(v, Tensor) and v.dtype.is_complex for v in (input, exponent)) \
        else D.float64
    a = to(input, dt) if isinstance(input, Tensor) else input
    e = to(exponent, dt) if isinstance(exponent, Tensor) else exponent
    if not isinstance(a, Tensor):
        a = _make(be(e).xp.asarray(a, dtype=dt.np), dt)
    return _out(_pow(a, e), out)


def _type_name(d):
    from ._helpers import _type_name as name
    return name(d)
