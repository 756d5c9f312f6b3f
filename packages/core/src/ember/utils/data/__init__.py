"""ember.utils.data: datasets, samplers, collation and the DataLoader (torch.utils.data)."""

from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler",
           "default_collate", "default_convert", "get_worker_info"]
