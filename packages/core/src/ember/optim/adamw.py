"""AdamW: Adam with decoupled weight decay (torch.optim.AdamW).

Source: https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html
"""

from __future__ import annotations

from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam whose weight decay shrinks the parameter (``p *= 1 - lr * weight_decay``)
    instead of adding an L2 term to the gradient.  Same arguments and state as Adam,
    with ``weight_decay`` defaulting to 1e-2.

    Raises:
        ValueError: invalid hyper-parameters, as Adam; ``decoupled_weight_decay=False``.

    ``params``, ``lr``, ``betas``, ``eps``, ``amsgrad`` and ``maximize`` are Adam's;
    ``foreach``, ``capturable``, ``differentiable`` and ``fused`` are accepted and kept in
    the groups (torch.optim.AdamW; Loshchilov and Hutter, "Decoupled Weight Decay
    Regularization", 2019)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
