"""Fetchers: turn what the index sampler yields into one collated batch.

The same fetcher runs in the main process and inside worker processes
(torch.utils.data._utils.fetch).
"""

from __future__ import annotations

__all__ = ["create_fetcher"]


class _MapDatasetFetcher:
    """``dataset[i]`` for each index (or ``dataset.__getitems__(indices)`` when defined)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    """The next ``len(index)`` samples of the dataset's iterator; StopIteration at its end
    (or on a short last batch when ``drop_last``)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def create_fetcher(kind: str, dataset, auto_collation: bool, collate_fn, drop_last: bool):
    """A fetcher for a ``"map"`` or ``"iterable"`` dataset."""
    cls = _IterableDatasetFetcher if kind == "iterable" else _MapDatasetFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)
