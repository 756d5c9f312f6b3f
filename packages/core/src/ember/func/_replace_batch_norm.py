"""``replace_all_batch_norm_modules_``: batch norm without running statistics, for vmap."""

from __future__ import annotations

__all__ = ["replace_all_batch_norm_modules_"]


def replace_all_batch_norm_modules_(root):
    """In place, make every BatchNorm module of ``root`` stop tracking running statistics
    (they would be updated in place by every example under vmap), as torch.func's does.
    Returns ``root``."""
    from ..nn.modules.batchnorm import _BatchNorm
    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
