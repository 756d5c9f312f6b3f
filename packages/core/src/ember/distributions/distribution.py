"""The Distribution base (torch.distributions.Distribution): shapes, sampling and the
common properties, for the families in this package."""

from __future__ import annotations

from .._tensor import Size, Tensor
from ..autograd.grad_mode import no_grad


def _size(sample_shape) -> tuple:
    if isinstance(sample_shape, int):
        return (sample_shape,)
    return tuple(sample_shape)


class Distribution:
    """A batch of distributions of shape ``batch_shape`` over events of ``event_shape``.

    ``sample(sample_shape)`` draws without gradient; ``rsample`` (where
    ``has_rsample``) draws reparameterized samples that gradients flow through; both give
    ``sample_shape + batch_shape + event_shape``.  ``log_prob(value)`` gives
    ``batch_shape``-shaped log densities (or log masses).

    ``validate_args`` is accepted for torch's signature; each subclass names the checks it
    runs (torch.distributions.Distribution).
    """

    has_rsample = False
    arg_constraints: dict = {}

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple:
        return _size(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement rsample")

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        params = ", ".join(f"{k}: {v.shape if isinstance(getattr(self, k, None), Tensor) and v.numel() != 1 else v}"
                           for k in self.arg_constraints for v in [getattr(self, k, None)] if v is not None)
        return f"{type(self).__name__}({params})"
