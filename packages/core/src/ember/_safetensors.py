"""The safetensors format, read and written by ember itself: every ember dtype that the
format names (bfloat16 included), and files read either at once or memory-mapped.

A file is an 8-byte little-endian header length, a JSON header (``{"__metadata__": {str:
str}, name: {"dtype", "shape", "data_offsets": [begin, end]}}``, padded with spaces to a
multiple of 8) and the tensors' little-endian bytes ordered by dtype (the format's order,
widest first) then name, as the ``safetensors`` package lays them out, so files match
its own byte for byte (but for the order of metadata keys, which it takes from a hash map).

Source: https://github.com/huggingface/safetensors (the format's README).
"""

from __future__ import annotations

import json
import mmap as _mmap
import os
import struct
import sys

import numpy

from . import _dtype as D

__all__ = ["save_bytes", "load_file"]

_CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
          "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64", "complex64": "C64"}
_DTYPES = {code: D._dtype_by_name(name) for name, code in _CODES.items()}
# the format's dtype order (its Rust enum); tensors are laid out by it, highest first
_RANK = {c: i for i, c in enumerate(("BOOL", "U8", "I8", "I16", "F16", "BF16", "I32", "F32", "C64", "F64", "I64"))}
_MAX_HEADER = 100_000_000  # the safetensors package's own limit on the header's size


def save_bytes(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors file of ``tensors`` (name -> ember tensor, any device; views written
    compactly) with ``metadata`` (str -> str) in its header.

    Raises TypeError for a dtype the format has no code for (complex128) or a metadata value
    that is not a string, naming the tensor or key."""
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"safetensors metadata maps str to str; got {k!r}: {type(v).__name__}")
    entries = []
    for name, t in tensors.items():
        code = _CODES.get(t.dtype.name)
        if code is None:
            raise TypeError(f"tensor {name!r} has dtype {t.dtype}, which safetensors cannot store "
                            f"(it has {', '.join(sorted(_CODES))})")
        entries.append((name, code, t))
    entries.sort(key=lambda e: (-_RANK[e[1]], e[0]))
    header: dict = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    blobs, offset = [], 0
    for name, code, t in entries:
        arr = t.detach().cpu()._data
        if not arr.flags.c_contiguous:
            arr = arr.copy()  # not ascontiguousarray, which makes a 0-d array 1-d
        data = (arr.byteswap() if sys.byteorder == "big" else arr).tobytes()
        header[name] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def load_file(path, mmap: bool = False) -> dict:
    """name -> CPU ember tensor of the safetensors file at ``path`` (the header's order).

    ``mmap=True`` maps the file copy-on-write: tensors are views of the mapping, read when
    touched. Otherwise the file is read once into one buffer the tensors share.

    Raises RuntimeError naming the file for a header that is too long, not JSON, names an
    unknown dtype, or gives offsets that do not match the shape or run past the file."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise RuntimeError(f"failed to load {path!r}: {size} bytes, too short for a safetensors header")
        (n,) = struct.unpack("<Q", f.read(8))
        if n > min(size - 8, _MAX_HEADER):
            raise RuntimeError(f"failed to load {path!r}: the header claims {n} bytes; the file holds {size - 8} "
                               "after the length")
        try:
            header = json.loads(f.read(n))
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
            raise RuntimeError(f"failed to load {path!r}: the header is not JSON ({e})") from None
        if mmap:
            buf = _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_COPY)
        else:
            buf = bytearray(size)
            f.seek(0)
            f.readinto(buf)
    if not isinstance(header, dict):
        raise RuntimeError(f"failed to load {path!r}: the header is a JSON {type(header).__name__}, an object "
                           "expected")
    start = 8 + n
    from ._tensor import _make
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, (begin, end) = _entry(path, name, entry, size - start)
        if end == begin:  # frombuffer refuses an offset at the very end of the buffer
            arr = numpy.empty(0, dtype=dtype.np)
        else:
            arr = numpy.frombuffer(buf, dtype=dtype.np, count=(end - begin) // dtype.itemsize, offset=start + begin)
            if sys.byteorder == "big":
                arr = arr.byteswap()
        out[name] = _make(arr.reshape(shape), dtype)
    return out


def _entry(path: str, name: str, entry, room: int) -> tuple:
    """(dtype, shape, offsets) of one header entry, checked against the data's ``room`` bytes."""
    def bad(why):
        return RuntimeError(f"failed to load {path!r}: tensor {name!r} {why}")
    if not isinstance(entry, dict):
        raise bad(f"has a header entry of type {type(entry).__name__}, an object expected")
    code = entry.get("dtype")
    dtype = _DTYPES.get(code) if isinstance(code, str) else None
    if dtype is None:
        raise bad(f"has dtype {entry.get('dtype')!r}; ember reads {', '.join(_DTYPES)}")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
        raise bad(f"has shape {shape!r}, a list of sizes >= 0 expected")
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= room):
        raise bad(f"has data_offsets {offsets!r}, [begin, end] within the file's {room} data bytes expected")
    numel = 1
    for s in shape:
        numel *= s
    if offsets[1] - offsets[0] != numel * dtype.itemsize:
        raise bad(f"of shape {shape} and dtype {dtype.name} needs {numel * dtype.itemsize} bytes; its offsets "
                  f"span {offsets[1] - offsets[0]}")
    return dtype, tuple(shape), tuple(offsets)
