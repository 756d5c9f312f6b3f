"""Language modelling from a local corpus: contiguous token ids, ``batchify`` + BPTT windows, random windows.

``batchify`` and ``get_batch`` follow PyTorch's word_language_model example: the id stream is
cut into ``batch_size`` columns ``[steps, batch]`` and read ``bptt`` steps at a time, the target
being the input shifted by one. ``RandomWindowDataset`` draws GPT-style ``block_size`` windows at
random offsets (nanoGPT's sampling), as ``(x, y)`` with ``y`` shifted by one.
"""

from __future__ import annotations

import os
import random

import numpy as np

import ember
from ember.utils.data import IterableDataset, get_worker_info


def encode_corpus(source, encode, append_eos: int | None = None):
    """The token ids of a corpus as one int64 tensor ``[N]``.

    Args:
        source: a file path, a list of paths, or an iterable of lines.
        encode: a function from a line to a list of ids (a tokenizer's ``encode``, a Vocab after a
            tokenizer...).
        append_eos: an id appended after each line (e.g. ``<eos>``), or None.
    """
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    ids: list[int] = []

    def lines():
        for item in source:
            if isinstance(item, (str, os.PathLike)) and os.path.isfile(item):
                with open(item, encoding="utf-8") as f:
                    yield from f
            else:
                yield item

    for line in lines():
        ids.extend(encode(line))
        if append_eos is not None:
            ids.append(append_eos)
    return ember.tensor(ids, dtype=ember.int64)


def batchify(data, batch_size: int):
    """Cut ``data`` ``[N]`` into ``batch_size`` contiguous columns: ``[N // batch_size, batch_size]`` (the rest is
    dropped).

    Raises:
        ValueError: fewer tokens than columns.
    """
    steps = data.shape[0] // batch_size
    if steps == 0:
        raise ValueError(f"cannot batchify {data.shape[0]} tokens into {batch_size} columns")
    return data[: steps * batch_size].view(batch_size, steps).t().contiguous()


def get_batch(source, i: int, bptt: int):
    """The BPTT window at row ``i`` of ``source`` ``[T, B]`` (from ``batchify``): ``data`` ``[L, B]`` and
    ``target`` ``[L * B]`` (the next tokens), ``L = min(``bptt``, T - 1 - i)`` (the PyTorch word
    language model example's ``get_batch``). Raises IndexError when no target is left."""
    seq_len = min(bptt, source.shape[0] - 1 - i)
    if seq_len <= 0:
        raise IndexError(f"step {i} leaves no target in a source of {source.shape[0]} steps")
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def bptt_windows(source, bptt: int):
    """Every BPTT window of ``source`` ``[T, B]`` (from ``batchify``), in order: ``(data, target)``
    pairs of :func:`get_batch` at rows 0, ``bptt``, 2 * ``bptt``, ..."""
    for i in range(0, source.shape[0] - 1, bptt):
        yield get_batch(source, i, bptt)


class RandomWindowDataset(IterableDataset):
    """``samples`` random windows of a token stream per epoch: ``(x [block_size], y [block_size])``, y = x shifted.

    Worker processes split the samples between them and draw from the loader's worker seeds.

    Args:
        data: the token stream, a 1-D int tensor or array ``[N]`` (kept as int64).
        block_size: tokens per window.
        samples: windows per epoch (the dataset's length).
        seed: the draws' seed; each epoch (each ``iter``) draws new windows from it.

    Raises:
        ValueError: a stream no longer than ``block_size``.
    """

    def __init__(self, data, block_size: int, samples: int, seed: int = 0):
        if data.shape[0] <= block_size:
            raise ValueError(f"the token stream ({data.shape[0]} tokens) must be longer than block_size ({block_size})")
        self.data = np.asarray(data.numpy() if isinstance(data, ember.Tensor) else data, dtype=np.int64)
        self.block_size = block_size
        self.samples = samples
        self.seed = seed
        self._epoch = 0

    def __len__(self) -> int:
        return self.samples

    def __iter__(self):
        info = get_worker_info()
        wid, n = (info.id, info.num_workers) if info is not None else (0, 1)
        rng = random.Random(hash((self.seed, info.seed)) if info is not None else hash((self.seed, self._epoch)))
        self._epoch += 1
        high = len(self.data) - self.block_size - 1
        for _ in range(wid, self.samples, n):
            start = rng.randint(0, high)
            chunk = self.data[start:start + self.block_size + 1]
            yield ember.from_numpy(chunk[:-1].copy()), ember.from_numpy(chunk[1:].copy())
