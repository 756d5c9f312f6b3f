"""The streaming base of the text datasets: records read lazily, a shuffle buffer, sharding across workers."""

from __future__ import annotations

import random

from ember.utils.data import Dataset, IterableDataset, get_worker_info


class MalformedRowError(ValueError):
    """A row that does not parse; the message names the file and the 1-based line."""

    def __init__(self, path: str, line: int, problem: str):
        super().__init__(f"{path}, line {line}: {problem}")
        self.path = path
        self.line = line


class ListDataset(Dataset):
    """A map-style dataset over ``records`` (a list held in memory; what ``to_map_style`` returns);
    item ``i`` is ``transform(records[i])``, or the record itself when ``transform`` is None."""

    def __init__(self, records: list, transform=None):
        self.records = records
        self.transform = transform

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index):
        record = self.records[index]
        return self.transform(record) if self.transform is not None else record


class TextIterableDataset(IterableDataset):
    """Streams records from files: subclasses define ``_records()`` yielding one record per example.

    Args:
        shuffle_buffer: 0 keeps the file order; N > 0 draws each record at random from a buffer
            of N (the usual streaming shuffle: the larger the buffer, the closer to a full shuffle).
        seed: the shuffle's seed; each epoch (each ``iter``) draws a new order from it (in DataLoader
            workers, from it and the worker's seed).
        transform: applied to each record as it is yielded.

    Under a DataLoader with workers, worker ``w`` of ``n`` keeps records ``w, w + n, ...``, so
    each record is read by one worker only.
    """

    def __init__(self, shuffle_buffer: int = 0, seed: int = 0, transform=None):
        if shuffle_buffer < 0:
            raise ValueError(f"shuffle_buffer must be >= 0, got {shuffle_buffer}")
        self.shuffle_buffer = shuffle_buffer
        self.seed = seed
        self.transform = transform
        self._epoch = 0

    def _records(self):
        raise NotImplementedError

    def _sharded(self):
        info = get_worker_info()
        if info is None or info.num_workers == 1:
            yield from self._records()
            return
        for i, record in enumerate(self._records()):
            if i % info.num_workers == info.id:
                yield record

    def __iter__(self):
        records = self._sharded()
        if self.shuffle_buffer:
            info = get_worker_info()
            # in a worker, the loader's per-epoch worker seed varies the order (seed the DataLoader's generator
            # for a reproducible one); in the main process the epoch count does
            rng = random.Random(hash((self.seed, info.seed)) if info is not None else hash((self.seed, self._epoch)))
            records = _shuffled(records, self.shuffle_buffer, rng)
        self._epoch += 1
        for record in records:
            yield self.transform(record) if self.transform is not None else record

    def to_map_style(self) -> ListDataset:
        """All records read into memory, as a map-style dataset (file order; same transform)."""
        return ListDataset(list(self._records()), self.transform)


def _shuffled(records, size: int, rng: random.Random):
    buffer = []
    for record in records:
        if len(buffer) < size:
            buffer.append(record)
            continue
        i = rng.randrange(size)
        yield buffer[i]
        buffer[i] = record
    rng.shuffle(buffer)
    yield from buffer
