"""ember.utils.data: datasets, samplers, collation and the DataLoader (torch.utils.data)."""

from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "default_collate", "default_convert",
           "get_worker_info"]
