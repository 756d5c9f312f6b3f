"""DistributedDataParallel (torch.nn.parallel.DistributedDataParallel), before ember's
distributed engine: ember has no process groups yet, so constructing one raises torch's
error for a program that never called ``init_process_group``."""

from __future__ import annotations

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Data-parallel training across processes. Raises ValueError, as torch does without a
    default process group (``ember.distributed.is_available()`` is False for now)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        if process_group is None:
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        raise RuntimeError(f"ember.distributed has no process groups yet; got process_group={process_group!r}")
