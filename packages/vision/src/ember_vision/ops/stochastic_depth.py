"""Stochastic depth (torchvision.ops.stochastic_depth).

Source: Huang et al., "Deep Networks with Stochastic Depth", https://arxiv.org/abs/1603.09382.
"""

from __future__ import annotations

import ember
from ember import nn

__all__ = ["stochastic_depth", "StochasticDepth"]


def stochastic_depth(input, p: float, mode: str, training: bool = True):
    """Zero a residual branch with probability ``p`` and scale the survivors by ``1 / (1 - p)``.

    ``input`` is ``[N, ...]`` of any float dtype; the result has its shape and dtype.
    ``mode="row"`` draws one keep/drop per sample (``[N, 1, ..., 1]`` mask), ``mode="batch"``
    one for the whole batch. Identity when ``training`` is False or ``p`` is 0.

    Raises ValueError when ``p`` is outside [0, 1] or ``mode`` is neither "batch" nor "row".
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = ember.empty(size, dtype=input.dtype, device=input.device).bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)  # keeps the expected value of the branch unchanged
    return input * noise


class StochasticDepth(nn.Module):
    """Module form of :func:`stochastic_depth` (torchvision.ops.StochasticDepth; Huang et al.,
    2016, arXiv:1603.09382); active only in training mode. Drops with probability ``p`` in
    [0, 1], per sample (``mode="row"``) or for the whole batch (``mode="batch"``); errors are
    raised at the first forward.
    """

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
