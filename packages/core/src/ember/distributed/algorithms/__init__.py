"""``ember.distributed.algorithms``: the generic join context (``Join``, ``Joinable``,
``JoinHook``) and DDP communication hooks (torch.distributed.algorithms)."""

from .join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook"]
