"""DistributedSampler: each of ``num_replicas`` processes reads its own share of a
dataset (torch.utils.data.distributed).

Source: https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler
"""

from __future__ import annotations

import math

from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices of replica ``rank``: every ``num_replicas``-th index of the (shuffled)
    index list, starting at ``rank``.

    Without ``drop_last`` the list is padded by repeating its first indices until it
    divides evenly; with ``drop_last`` its tail is cut instead. ``shuffle`` permutes with
    a generator seeded ``seed + epoch`` (call ``set_epoch`` each epoch), identical on all
    replicas. ``len`` is the per-replica count.

    Args: ``dataset`` (sized), ``num_replicas`` (int), ``rank`` (int), ``shuffle`` (True), ``seed`` (0),
    ``drop_last`` (False).

    An omitted ``num_replicas`` or ``rank`` is the default process group's size or this
    process's rank in it (``ember.distributed``).

    Raises ValueError when one is omitted and no process group has been initialized (torch's
    message), or for a rank outside ``[0, num_replicas - 1]``; RuntimeError when one is omitted
    and ``ember.distributed`` is not available (mpi4py missing).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            # the default group's size and rank (torch's ValueError when none was initialized)
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        from ...ops.creation import randperm
        from ...random import Generator
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding] if padding else []
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` in the shuffling seed, so each epoch has a new order."""
        self.epoch = epoch
