"""Normal, Uniform, Gamma, Beta, Dirichlet and MultivariateNormal (torch.distributions).

Sources for the densities, entropies and moments: the torch.distributions docs and the
standard references (e.g. Bishop, "Pattern Recognition and Machine Learning", App. B).
"""

from __future__ import annotations

import math

from .. import ops
from .._tensor import Tensor
from ..ops.sampling import standard_gamma
from .distribution import Distribution


def _as_tensor(x, like=None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    dtype = like.dtype if isinstance(like, Tensor) and like.dtype.is_floating_point else None
    return ops.tensor(float(x), dtype=dtype)


def _broadcast(*params):
    ts = [p for p in params if isinstance(p, Tensor)]
    like = ts[0] if ts else None
    tensors = [_as_tensor(p, like) for p in params]
    return ops.broadcast_tensors(*tensors)


class Normal(Distribution):
    """Normal(loc, scale): the Gaussian with mean ``loc`` and standard deviation ``scale``.

    ``loc`` and ``scale`` (tensors or numbers) broadcast to the batch shape; a ``scale``
    that is not positive raises ValueError (torch.distributions.Normal). ``validate_args``
    is accepted: the checks named here always run, the rest (support of ``log_prob``'s
    values, ...) never."""

    has_rsample = True
    arg_constraints = {"loc": None, "scale": None}

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast(loc, scale)
        if bool((self.scale <= 0).any()):
            raise ValueError("Expected parameter scale to be positive")
        super().__init__(self.loc.shape)

    def rsample(self, sample_shape=()):
        eps = ops.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def cdf(self, value):
        return 0.5 * (1 + ops.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value):
        return self.loc + self.scale * ops.erfinv(2 * value - 1) * math.sqrt(2)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self.scale ** 2

    @property
    def stddev(self):
        return self.scale


class Uniform(Distribution):
    """Uniform(low, high): constant density on [low, high).

    ``low`` and ``high`` (tensors or numbers) broadcast to the batch shape; ``low >= high``
    raises ValueError (torch.distributions.Uniform). ``validate_args`` is accepted: the
    checks named here always run, the rest (support of ``log_prob``'s values, ...) never."""

    has_rsample = True
    arg_constraints = {"low": None, "high": None}

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = _broadcast(low, high)
        if bool((self.low >= self.high).any()):
            raise ValueError("Expected parameter low to be less than high")
        super().__init__(self.low.shape)

    def rsample(self, sample_shape=()):
        u = ops.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        inside = (value >= self.low) & (value < self.high)
        return ops.where(inside, -(self.high - self.low).log(), -math.inf)

    def entropy(self):
        return (self.high - self.low).log()

    def cdf(self, value):
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    @property
    def mean(self):
        return (self.low + self.high) / 2

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12


class Gamma(Distribution):
    """Gamma(concentration, rate): density rate^a x^(a-1) e^(-rate x) / Gamma(a).

    ``concentration`` (the shape a) and ``rate`` (tensors or numbers, positive) broadcast to
    the batch shape (torch.distributions.Gamma). ``validate_args`` is accepted; the
    parameters are not checked."""

    has_rsample = True
    arg_constraints = {"concentration": None, "rate": None}

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = _broadcast(concentration, rate)
        super().__init__(self.concentration.shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return standard_gamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)

    def log_prob(self, value):
        a, b = self.concentration, self.rate
        return ops.xlogy(a, b) + ops.xlogy(a - 1, value) - b * value - ops.lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + ops.lgamma(a) + (1 - a) * ops.digamma(a)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate ** 2


class Dirichlet(Distribution):
    """Dirichlet(concentration): distributions over the simplex of the last dim.

    ``concentration`` ``[*batch, K]`` (positive) gives the batch shape ``[*batch]`` and the event
    shape [K]; a 0-d one raises ValueError (torch.distributions.Dirichlet).
    ``validate_args`` is accepted: the checks named here always run, the rest (support of
    ``log_prob``'s values, ...) never."""

    has_rsample = True
    arg_constraints = {"concentration": None}

    def __init__(self, concentration, validate_args=None):
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:])

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = standard_gamma(self.concentration.expand(*shape))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        a = self.concentration
        return (ops.xlogy(a - 1, value).sum(-1) + ops.lgamma(a.sum(-1)) - ops.lgamma(a).sum(-1))

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return (ops.lgamma(a).sum(-1) - ops.lgamma(a0) - (k - a0) * ops.digamma(a0)
                - ((a - 1) * ops.digamma(a)).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def variance(self):
        a0 = self.concentration.sum(-1, keepdim=True)
        m = self.concentration / a0
        return m * (1 - m) / (a0 + 1)


class Beta(Distribution):
    """Beta(concentration1, concentration0) on [0, 1], as a two-category Dirichlet.

    ``concentration1`` (alpha) and ``concentration0`` (beta), positive tensors or numbers,
    broadcast to the batch shape (torch.distributions.Beta). ``validate_args`` is accepted;
    the parameters are not checked."""

    has_rsample = True
    arg_constraints = {"concentration1": None, "concentration0": None}

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = _broadcast(concentration1, concentration0)
        self._dirichlet = Dirichlet(ops.stack([self.concentration1, self.concentration0], -1))
        super().__init__(self.concentration1.shape)

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        return self._dirichlet.log_prob(ops.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total ** 2 * (total + 1))


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril): the
    Gaussian over the last dim of ``loc``; ``scale_tril`` is the Cholesky factor L of the
    covariance (L L^T).

    Exactly one of ``covariance_matrix``, ``precision_matrix`` (its inverse) or
    ``scale_tril`` ``[*, k, k]`` is given (ValueError otherwise); ``loc`` ``[*, k]`` broadcasts with
    its batch dims (torch.distributions.MultivariateNormal). A matrix that is not positive
    definite raises RuntimeError from the Cholesky factorization. ``validate_args`` is
    accepted: the checks named here always run, the rest (support of ``log_prob``'s values,
    ...) never."""

    has_rsample = True
    arg_constraints = {"loc": None}

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        from .. import linalg
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        if scale_tril is not None:
            L = scale_tril
        elif covariance_matrix is not None:
            L = linalg.cholesky(covariance_matrix)
        else:
            L = linalg.cholesky(linalg.inv(precision_matrix))
        batch = tuple(ops.broadcast_shapes(tuple(loc.shape[:-1]), tuple(L.shape[:-2])))
        self.loc = loc.expand(*(batch + tuple(loc.shape[-1:])))
        self.scale_tril = L.expand(*(batch + tuple(L.shape[-2:])))
        super().__init__(batch, loc.shape[-1:])

    @property
    def covariance_matrix(self):
        return self.scale_tril @ self.scale_tril.mT

    @property
    def precision_matrix(self):
        from .. import linalg
        return linalg.inv(self.covariance_matrix)

    def rsample(self, sample_shape=()):
        eps = ops.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + (self.scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self.scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        from .. import linalg
        diff = (value - self.loc).unsqueeze(-1)
        L = self.scale_tril.expand(*(tuple(diff.shape[:-2]) + tuple(self.scale_tril.shape[-2:])))
        z = linalg.solve_triangular(L, diff, upper=False).squeeze(-1)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + (z * z).sum(-1)) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        return 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return (self.scale_tril ** 2).sum(-1)
