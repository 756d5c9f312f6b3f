"""Variable-length sequences for the recurrent layers (torch.nn.utils.rnn): padding,
packing and back.

A PackedSequence holds the steps of a batch of sequences sorted by decreasing length,
time-major: ``data`` ``[N, *]`` stacks, for each step ``t``, the ``batch_sizes[t]``
sequences still running.  Every conversion here is one gather (``index_select``) of
rows, with the row indices computed on the host, so gradients flow through each.
"""

from __future__ import annotations

from collections import namedtuple

import numpy

from ... import _dtype as D
from ..._tensor import Tensor
from ...ops.creation import full, tensor
from ...ops.indexing import index_select
from ...ops.shape import cat

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


def _int64(arr, device=None):
    return tensor(numpy.asarray(arr, dtype=numpy.int64), dtype=D.int64, device=device)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Packed batch of sequences (torch.nn.utils.rnn.PackedSequence): ``data`` ``[N, *]``,
    ``batch_sizes`` (int64, on the CPU) ``[T]``, and the permutations ``sorted_indices``
    (batch order to packing order) and ``unsorted_indices`` (its inverse) or None.  Made
    by pack_padded_sequence and pack_sequence; accepted and returned by RNN, LSTM, GRU.
    ``PackedSequence((data, batch_sizes))`` is accepted too, as in torch."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence are made by "
                                 "pack_sequence and pack_padded_sequence in nn.utils.rnn.")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not (isinstance(data, (list, tuple)) and len(data) == 2):
            raise AssertionError("Expected data to be a list or tuple of length 2")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data`` converted as by Tensor.to (the indices follow it to its device;
        ``batch_sizes`` stays on the CPU); ``self`` when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cuda(self, *args, **kwargs):
        return self.to(*args, device="cuda", **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to(*args, device="cpu", **kwargs)

    def double(self):
        return self.to(dtype=D.float64)

    def float(self):
        return self.to(dtype=D.float32)

    def half(self):
        return self.to(dtype=D.float16)

    def long(self):
        return self.to(dtype=D.int64)

    def int(self):
        return self.to(dtype=D.int32)

    def short(self):
        return self.to(dtype=D.int16)

    def char(self):
        return self.to(dtype=D.int8)

    def byte(self):
        return self.to(dtype=D.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation):
    """The inverse of ``permutation``, a 1-D int64 permutation of ``0..n-1``: ``inv[perm[i]] =
    i``, int64 on its device (None for None) (torch.nn.utils.rnn.invert_permutation)."""
    if permutation is None:
        return None
    perm = numpy.asarray(permutation.tolist(), dtype=numpy.int64)
    inv = numpy.empty_like(perm)
    inv[perm] = numpy.arange(perm.size)
    return _int64(inv, permutation.device)


def _lengths_list(lengths):
    return [int(v) for v in (lengths.tolist() if isinstance(lengths, Tensor) else lengths)]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack ``input``, a padded batch ``[T, B, *]`` (``[B, T, *]`` with ``batch_first``) of sequences of
    ``lengths`` (list or 1-D tensor of B ints).  With ``enforce_sorted`` the lengths must
    be non-increasing (RuntimeError otherwise); without it the batch is sorted here and
    the permutation kept in the result.  RuntimeError for a length <= 0 or beyond T
    (torch.nn.utils.rnn.pack_padded_sequence)."""
    lens = _lengths_list(lengths)
    sorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        order = list(range(len(lens)))
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])  # stable, as torch's sort on CPU
        sorted_indices = _int64(order, input.device)
    if any(v <= 0 for v in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    t_dim, b_dim = (1, 0) if batch_first else (0, 1)
    t_len, batch = input.shape[t_dim], input.shape[b_dim]
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={batch})")
    if lens and max(lens) > t_len:
        raise RuntimeError(f"Expected the longest length to be at most the padded length {t_len}, "
                           f"but got {max(lens)}")
    slens = numpy.asarray([lens[i] for i in order], dtype=numpy.int64)
    n_steps = int(slens[0]) if slens.size else 0
    batch_sizes = (slens[None, :] > numpy.arange(n_steps)[:, None]).sum(1)
    # row of the flattened [T*B, *] (or [B*T, *]) input holding step t of packed column j
    rows = []
    for t, bs in enumerate(batch_sizes):
        cols = numpy.asarray(order[:bs])
        rows.append(cols * t_len + t if batch_first else t * batch + cols)
    index = numpy.concatenate(rows) if rows else numpy.zeros(0, numpy.int64)
    flat = input.reshape((t_len * batch,) + tuple(input.shape[2:]))
    data = index_select(flat, 0, _int64(index, input.device))
    return PackedSequence(data, _int64(batch_sizes), sorted_indices, None)


def _packed_lengths(batch_sizes):
    """Length of each packed column (packing order) from the batch sizes."""
    bs = numpy.asarray(batch_sizes, dtype=numpy.int64)
    if bs.size == 0:
        return numpy.zeros(0, numpy.int64)
    return (bs[None, :] > numpy.arange(int(bs[0]))[:, None]).sum(1)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo pack_padded_sequence on ``sequence``, a PackedSequence: returns ``(padded,
    lengths)``, padded ``[T, B, *]`` (``[B, T, *]`` with ``batch_first``), filled with
    ``padding_value``, with the batch in its original order, ``T`` the longest length or
    ``total_length`` (ValueError if shorter than the longest), ``lengths`` int64 on the CPU
    (torch.nn.utils.rnn.pad_packed_sequence)."""
    bs = [int(b) for b in sequence.batch_sizes.tolist()]
    t_len = len(bs)
    if total_length is not None:
        if total_length < t_len:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {t_len}")
        t_len = total_length
    data = sequence.data
    batch = bs[0] if bs else 0
    n = data.shape[0]
    # gather from data plus one padding row (index n) into [T, B] time-major order
    index = numpy.full((t_len, batch), n, dtype=numpy.int64)
    o = 0
    for t, b in enumerate(bs):
        index[t, :b] = numpy.arange(o, o + b)
        o += b
    lengths = _packed_lengths(bs)
    if sequence.unsorted_indices is not None:
        perm = numpy.asarray(sequence.unsorted_indices.tolist(), dtype=numpy.int64)
        index, lengths = index[:, perm], lengths[perm]
    if batch_first:
        index = index.T
    pad_row = full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    rows = index_select(cat([data, pad_row], 0), 0, _int64(index.reshape(-1), data.device))
    padded = rows.reshape(index.shape + tuple(data.shape[1:]))
    return padded, _int64(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack ``sequences`` (an iterable of tensors ``[L_i, *]``, or a tensor unbound along dim 0)
    into ``[max L, B, *]`` (``[B, max L, *]`` with ``batch_first``), filling with ``padding_value``
    on ``padding_side`` ('right' or 'left').
    RuntimeError for an empty list, a bad side or trailing shapes that differ
    (torch.nn.utils.rnn.pad_sequence)."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    try:
        sequences = tuple(sequences)
    except TypeError:
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}") from None
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences[1:]:
        if tuple(s.shape[1:]) != trailing:
            bad = next((i for i, (a, b) in enumerate(zip(s.shape[1:], trailing)) if a != b), 0)
            raise RuntimeError(f"The size of tensor a ({trailing[bad] if trailing else 0}) must match the size of "
                               f"tensor b ({s.shape[1 + bad] if trailing else 0}) at non-singleton dimension "
                               f"{bad + 1}")
    lens = [int(s.shape[0]) for s in sequences]
    t_len, total = max(lens), sum(lens)
    index = numpy.full((t_len, len(lens)), total, dtype=numpy.int64)
    o = 0
    for j, n in enumerate(lens):
        start = 0 if padding_side == "right" else t_len - n
        index[start:start + n, j] = numpy.arange(o, o + n)
        o += n
    if batch_first:
        index = index.T
    first = sequences[0]
    pad_row = full((1,) + trailing, padding_value, dtype=first.dtype, device=first.device)
    rows = index_select(cat(list(sequences) + [pad_row], 0), 0, _int64(index.reshape(-1), first.device))
    return rows.reshape(index.shape + trailing)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences ``[L_i, *]`` of ``padded_sequences``, a padded batch ``[T, B, *]``
    (``[B, T, *]`` with ``batch_first``), cut to ``lengths`` (B ints or a 1-D tensor)
    (torch.nn.utils.rnn.unpad_sequence; unlike torch's code, the input is not
    transposed in place)."""
    padded = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [padded[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack ``sequences``, a list of tensors ``[L_i, *]`` (longest first unless
    ``enforce_sorted`` is False), into a PackedSequence: pad_sequence then
    pack_padded_sequence (torch.nn.utils.rnn.pack_sequence)."""
    lengths = [int(s.shape[0]) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences ``[L_i, *]`` in ``packed_sequences``, a PackedSequence, in their
    original order (torch.nn.utils.rnn.unpack_sequence)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
