"""DDP's side of the generic join (ember.distributed.algorithms.Join): what a joined rank
runs for each iteration the others still train, and the final model sync."""

from __future__ import annotations

from ...distributed.algorithms.join import JoinHook

__all__ = ["DDPJoinHook"]


class DDPJoinHook(JoinHook):
    """Shadows DDP's collectives of one iteration in the order the training ranks issue
    them: the buffer broadcast (from a rank still training), whether this iteration
    averages, every bucket's reduction with zero gradients and the used-parameter
    exchange; ``post_hook`` gives every rank the model of the last rank to join."""

    def __init__(self, ddp, divide_by_initial_world_size: bool = True):
        from .distributed import DistributedDataParallel
        if not isinstance(ddp, DistributedDataParallel):
            raise AssertionError(f"DDP join hook requires passing in a DistributedDataParallel instance as the "
                                 f"state, got {type(ddp).__name__}")
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size
        super().__init__()

    def main_hook(self) -> None:
        ddp = self.ddp
        if ddp._will_sync_buffers():
            ddp._sync_states(list(ddp.module.buffers()), src=ddp._find_common_rank(False))
        sync = ddp._global_requires_sync(joined=True)
        ddp.require_forward_param_sync = sync
        if sync:
            ddp.reducer.shadow_backward(getattr(ddp, "_join_nonjoined", ddp.process_group.size()))

    def post_hook(self, is_last_joiner: bool) -> None:
        self.ddp._sync_final_model(is_last_joiner)
