"""Reading the IDX format of MNIST-style datasets, gzipped or not.

Files ending in ``.gz`` or ``.xz`` are decompressed on the fly.

Format (http://yann.lecun.com/exdb/mnist/, "FILE FORMATS"): a big-endian header of two
zero bytes, a type code (0x08 unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32,
0x0D float32, 0x0E float64), the number of dimensions, then one big-endian uint32 size
per dimension, then the values in C order.
"""

from __future__ import annotations

import gzip
import lzma
import os

import numpy as np

_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path) -> np.ndarray:
    """The array stored in the IDX file ``path`` (``.gz`` / ``.xz`` are decompressed).

    Raises RuntimeError naming the file when the header is malformed or the data is
    shorter or longer than the header says (a truncated download, say).
    """
    path = os.fspath(path)
    opener = _opener(path)
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, lzma.LZMAError) as e:
        raise RuntimeError(f"cannot read IDX file {path}: {e}") from e
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES:
        raise RuntimeError(f"{path} is not an IDX file: bad magic number {raw[:4].hex()}")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise RuntimeError(f"{path} is truncated: its header needs {header} bytes, the file has {len(raw)}")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_TYPES[raw[2]])
    expected = header + dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    if len(raw) != expected:
        raise RuntimeError(f"{path} is corrupt or truncated: the header announces shape {shape} "
                           f"({expected} bytes), the file has {len(raw)} bytes")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path, array: np.ndarray) -> None:
    """Write ``array`` as an IDX file (gzipped when ``path`` ends in ``.gz``)."""
    codes = {np.dtype(v).newbyteorder("="): k for k, v in _TYPES.items()}
    array = np.ascontiguousarray(array)
    code = codes.get(array.dtype)
    if code is None:
        raise TypeError(f"IDX cannot store dtype {array.dtype}")
    header = bytes([0, 0, code, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    body = array.astype(np.dtype(_TYPES[code])).tobytes()
    path = os.fspath(path)
    with _opener(path)(path, "wb") as f:
        f.write(header + body)


def _opener(path: str):
    if path.endswith(".gz"):
        return gzip.open
    if path.endswith(".xz"):
        return lzma.open
    return open
