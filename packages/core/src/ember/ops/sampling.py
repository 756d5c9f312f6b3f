"""Random sampling beyond the basic factories: poisson, binomial, the in-place samplers of torch's
Tensor (exponential_, geometric_, log_normal_, cauchy_, random_) and standard_gamma, whose
samples are differentiable in the shape parameter (implicit reparameterization: the
derivative of a sample x of Gamma(a, 1) is -(dP(a, x)/da) / p(x; a), with P the
regularized lower incomplete gamma function; Figurnov et al., "Implicit
Reparameterization Gradients", 2018).  Draws come from ember's generators, so they follow
``ember.manual_seed`` but not torch's streams.
"""

from __future__ import annotations

import numpy

from .. import _dtype as D
from .._tensor import Tensor, _make
from ..autograd.graph import record
from ._helpers import _type_name, be, needs_grad
from .creation import _fill_random, _gen

__all__ = ["poisson", "binomial", "exponential_", "geometric_", "log_normal_", "cauchy_", "random_", "standard_gamma"]


def _continuous(t, name: str, exc=RuntimeError) -> None:
    """torch's refusal of a continuous distribution on an integer or bool tensor."""
    if not t.dtype.is_floating_point:
        raise exc(f"{name} expects a floating point dtype (a continuous distribution), but got {t.dtype}")


def poisson(input, generator=None):
    """Poisson samples with the rates in ``input`` (same dtype); its gradient is zero.

    ``generator`` draws the samples (the default one of ``input``'s device when None). A
    negative rate raises RuntimeError, an integer ``input`` NotImplementedError
    (torch.poisson)."""
    _continuous(input, "poisson", NotImplementedError)
    g = _gen(generator, input.device)
    rates = numpy.asarray(input.__array__(), dtype=numpy.float64)
    if (rates < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    arr = g.poisson(rates).astype(input.dtype.np)
    return _make(be(input).xp.asarray(arr), input.dtype)


def binomial(count, prob, generator=None):
    """Binomial samples: successes in ``count`` trials of probability ``prob`` (float
    tensors of one dtype, broadcast together; the result has that dtype).  A count below
    zero gives 0 and a probability past [0, 1] is clipped into it, as torch's sampler
    does.  ValueError for a non-float count, RuntimeError for mismatched dtypes; the
    samples have no derivative (torch.binomial).

    ``generator`` draws the samples (the default one of the device when None)."""
    from .numerics import _not_implemented_rule
    for name, v in (("count", count), ("prob", prob)):
        if not isinstance(v, Tensor):
            raise TypeError(f"binomial(): argument '{name}' must be Tensor, not {type(v).__name__}")
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{_type_name(count.dtype)}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {_type_name(prob.dtype)} but expected {_type_name(count.dtype)}")
    g = _gen(generator, count.device)
    n = numpy.asarray(count.__array__(), dtype=numpy.float64)
    p = numpy.asarray(prob.__array__(), dtype=numpy.float64)
    try:
        n, p = numpy.broadcast_arrays(n, p)
    except ValueError:
        from .elementwise import broadcast_error
        raise broadcast_error(count, prob) from None
    trials = numpy.where(numpy.isfinite(n) & (n > 0), numpy.trunc(n), 0).astype(numpy.int64)
    p = numpy.clip(numpy.nan_to_num(p, nan=0.0), 0.0, 1.0)
    r = _make(be(count).xp.asarray(g.binomial(trials, p).astype(count.dtype.np)), count.dtype)
    if needs_grad(count, prob):
        record("NotImplemented", _not_implemented_rule("binomial"), (count, prob), r)
    return r


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples of the exponential distribution of rate ``lambd``."""
    _continuous(self, "exponential_")
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill_random(self, _gen(generator, self.device).exponential(1.0 / lambd, size=self.shape))


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if self.dtype is D.bool_:
        raise NotImplementedError("geometric_ is not implemented for bool tensors")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill_random(self, _gen(generator, self.device).geometric(p, size=self.shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with exp of normal samples of ``mean`` and ``std``."""
    _continuous(self, "log_normal_", NotImplementedError)
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _fill_random(self, _gen(generator, self.device).lognormal(mean, std, size=self.shape))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy samples of ``median`` and scale ``sigma``."""
    _continuous(self, "cauchy_")
    return _fill_random(self, median + sigma * _gen(generator, self.device).standard_cauchy(size=self.shape))


def random_(self, from_=0, to=None, *, generator=None):
    """Fill with integers uniform on [from, to) ([0, from) with one bound; for floats, up
    to 2**mantissa bits when no bound is given)."""
    if to is None:
        if from_ == 0:
            to = 2 ** 24 if self.dtype is D.float32 else 2 ** 53 if self.dtype is D.float64 else \
                (2 ** 63 - 1 if self.dtype is D.int64 else numpy.iinfo(self.dtype.np).max + 1)
        else:
            from_, to = 0, from_
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    return _fill_random(self, _gen(generator, self.device).integers(from_, to, size=self.shape))


def standard_gamma(alpha: Tensor, generator=None) -> Tensor:
    """Samples of Gamma(alpha, 1), differentiable in ``alpha`` (torch._standard_gamma)."""
    g = _gen(generator, alpha.device)
    a = numpy.asarray(alpha.__array__(), dtype=numpy.float64)
    x = numpy.maximum(g.standard_gamma(a), numpy.finfo(alpha.dtype.np).tiny)
    r = _make(be(alpha).xp.asarray(x.astype(alpha.dtype.np)), alpha.dtype)
    if needs_grad(alpha):
        record("StandardGammaBackward0", _standard_gamma_rule, (alpha,), r, (alpha, r))
    return r


def _standard_gamma_rule(grad, alpha, x):
    from scipy import special
    a = numpy.asarray(alpha.__array__(), dtype=numpy.float64)
    s = numpy.asarray(x.__array__(), dtype=numpy.float64)
    h = 1e-5 * numpy.maximum(a, 1.0)  # dP/da by a central difference in float64
    dP = (special.gammainc(a + h, s) - special.gammainc(numpy.maximum(a - h, 1e-300), s)) / (
        (a + h) - numpy.maximum(a - h, 1e-300))
    log_density = (a - 1) * numpy.log(s) - s - special.gammaln(a)
    dx = -dP / numpy.exp(log_density)
    return grad * _make(be(alpha).xp.asarray(dx.astype(alpha.dtype.np)), alpha.dtype)
