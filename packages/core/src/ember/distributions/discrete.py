"""Bernoulli, Categorical and OneHotCategorical (torch.distributions), parameterized by
``probs`` or by ``logits`` (log-odds for Bernoulli, unnormalized log-probabilities for
the categorical ones); the other parameterization is derived on demand."""

from __future__ import annotations

from .. import ops
from .._tensor import Tensor
from ..nn import functional as F
from .distribution import Distribution, _size


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
    """Bernoulli(probs | logits): 1 with probability ``probs``, else 0.

    Exactly one of ``probs`` (in [0, 1]) or ``logits`` (log-odds) is given (ValueError
    otherwise), a tensor or a number (torch.distributions.Bernoulli). ``validate_args`` is
    accepted: the checks named here always run, the rest (support of ``log_prob``'s values,
    ...) never."""

    arg_constraints = {"probs": None, "logits": None}

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        self._probs = ops.tensor(float(probs)) if probs is not None and not isinstance(probs, Tensor) else probs
        self._logits = ops.tensor(float(logits)) if logits is not None and not isinstance(logits, Tensor) else logits
        super().__init__((self._probs if self._probs is not None else self._logits).shape)

    @property
    def probs(self):
        return self._probs if self._probs is not None else ops.sigmoid(self._logits)

    @property
    def logits(self):
        if self._logits is not None:
            return self._logits
        p = self._probs.clamp(_eps(self._probs), 1 - _eps(self._probs))
        return p.log() - (1 - p).log()

    def sample(self, sample_shape=()):
        p = self.probs.detach().expand(*self._extended_shape(sample_shape))
        return ops.bernoulli(p)

    def log_prob(self, value):
        return -F.binary_cross_entropy_with_logits(self.logits.expand(*value.shape) if value.ndim else self.logits,
                                                   value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)


def _eps(t):
    return 1.1920929e-07 if t.dtype.itemsize == 4 else 2.220446049250313e-16


class Categorical(Distribution):
    """Categorical(probs | logits): an index in 0..K-1 of the last dim, drawn with the
    (normalized) ``probs``.

    Exactly one of ``probs`` (non-negative, normalized along the last dim) or ``logits``
    (unnormalized log-probabilities) ``[*batch, K]`` is given, ValueError otherwise
    (torch.distributions.Categorical). ``validate_args`` is accepted: the checks named here
    always run, the rest (support of ``log_prob``'s values, ...) never."""

    arg_constraints = {"probs": None, "logits": None}

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self._probs = probs / probs.sum(-1, keepdim=True)
            self._logits = None
        else:
            self._logits = logits - logits.logsumexp(-1, keepdim=True)
            self._probs = None
        param = self._probs if self._probs is not None else self._logits
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1])

    @property
    def probs(self):
        return self._probs if self._probs is not None else self._logits.softmax(-1)

    @property
    def logits(self):
        if self._logits is not None:
            return self._logits
        return self._probs.clamp(min=_eps(self._probs)).log()

    @property
    def param_shape(self):
        return self.probs.shape

    def sample(self, sample_shape=()):
        probs = self.probs.detach().reshape(-1, self._num_events)
        n = 1
        for s in _size(sample_shape):
            n *= s
        draws = ops.multinomial(probs, n, replacement=True)  # [batch, n]
        return draws.t().reshape(_size(sample_shape) + tuple(self._batch_shape))

    def log_prob(self, value):
        value = value.long()
        logits = self.logits
        shape = ops.broadcast_shapes(tuple(value.shape), tuple(logits.shape[:-1]))
        logits = logits.expand(*(tuple(shape) + (self._num_events,)))
        return logits.gather(-1, value.expand(*shape).unsqueeze(-1)).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=-3.4028234663852886e38 if self.logits.dtype.itemsize == 4 else
                                   -1.7976931348623157e308)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = ops.arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(-1, *self._batch_shape) if expand else values

    @property
    def mean(self):
        return ops.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return ops.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)


class OneHotCategorical(Distribution):
    """OneHotCategorical(probs | logits): Categorical's draws as one-hot vectors.

    Exactly one of ``probs`` or ``logits`` ``[*batch, K]``, as in ``Categorical``; the event
    shape is [K] (torch.distributions.OneHotCategorical). ``validate_args`` is accepted: the
    checks named here always run, the rest (support of ``log_prob``'s values, ...) never."""

    arg_constraints = {"probs": None, "logits": None}

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,))

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    def sample(self, sample_shape=()):
        index = self._categorical.sample(sample_shape)
        return F.one_hot(index, self._categorical._num_events).to(self.probs.dtype)

    def log_prob(self, value):
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return F.one_hot(self.probs.argmax(-1), self._categorical._num_events).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)
