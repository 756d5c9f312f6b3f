"""``ember.nn.parallel``: torch.nn.parallel's wrappers (torch docs, "DataParallel",
"DistributedDataParallel")."""

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
