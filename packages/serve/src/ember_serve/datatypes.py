"""Open Inference Protocol tensor datatypes and their wire forms.

The protocol names a tensor's element type with one of ``BOOL``, ``UINT8``..``UINT64``,
``INT8``..``INT64``, ``FP16``, ``FP32``, ``FP64``, ``BF16`` and ``BYTES``. In JSON a tensor's
``data`` is its elements in row-major order (flat or nested lists; BYTES as strings, BF16 as
numbers). In the binary tensor data extension the raw little-endian bytes follow the JSON
header; a BYTES element is a 4-byte little-endian length then its bytes.

Source: the KServe Open Inference Protocol (https://kserve.github.io/website/latest/modelserving/
data_plane/v2_protocol/) and Triton's binary data extension
(https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_binary_data.md).
"""

from __future__ import annotations

import struct

import ml_dtypes
import numpy as np

__all__ = ["DATATYPES", "numpy_dtype", "datatype_of", "from_json_data", "to_json_data",
           "from_binary", "to_binary", "ProtocolError"]


class ProtocolError(ValueError):
    """A request that breaks the protocol (the server answers 400 with the message)."""


# datatype -> numpy dtype (little-endian); BYTES is an object array of ``bytes``
DATATYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_), "UINT8": np.dtype("<u1"), "UINT16": np.dtype("<u2"), "UINT32": np.dtype("<u4"),
    "UINT64": np.dtype("<u8"), "INT8": np.dtype("<i1"), "INT16": np.dtype("<i2"), "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"), "FP16": np.dtype("<f2"), "FP32": np.dtype("<f4"), "FP64": np.dtype("<f8"),
    "BF16": np.dtype(ml_dtypes.bfloat16), "BYTES": np.dtype(object),
}
_BY_KIND = {(v.kind, v.itemsize): k for k, v in DATATYPES.items() if k not in ("BYTES", "BF16")}


def numpy_dtype(datatype: str) -> np.dtype:
    """The numpy dtype of a protocol datatype; ProtocolError for an unknown name."""
    try:
        return DATATYPES[datatype]
    except (KeyError, TypeError):
        raise ProtocolError(f"unknown datatype {datatype!r}: expected one of {', '.join(DATATYPES)}") from None


def datatype_of(dtype) -> str:
    """The protocol datatype of a numpy dtype (or of an ember/torch dtype, by name)."""
    name = str(dtype).rsplit(".", 1)[-1]
    if name == "bfloat16":
        return "BF16"
    if name in ("bool", "bool_"):
        return "BOOL"
    dt = np.dtype(dtype) if not hasattr(dtype, "is_floating_point") else np.dtype(name)
    if dt.kind in "OSU":
        return "BYTES"
    try:
        return _BY_KIND[(dt.kind, dt.itemsize)]
    except KeyError:
        raise ProtocolError(f"no protocol datatype for the dtype {dtype}") from None


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _check_shape(shape, where: str) -> tuple[int, ...]:
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                       for d in shape):
        raise ProtocolError(f"{where}: 'shape' must be a list of non-negative integers, got {shape!r}")
    return tuple(shape)


def _flatten(data):
    # nested lists -> one flat list, row-major (the protocol allows both forms)
    if not isinstance(data, list):
        return [data]
    if not any(isinstance(x, list) for x in data):
        return data
    out = []
    stack = [iter(data)]
    while stack:
        for x in stack[-1]:
            if isinstance(x, list):
                stack.append(iter(x))
                break
            out.append(x)
        else:
            stack.pop()
    return out


def _as_bytes(x, where: str) -> bytes:
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, (bytes, bytearray)):
        return bytes(x)
    raise ProtocolError(f"{where}: BYTES elements must be strings in JSON, got {type(x).__name__}")


def from_json_data(data, datatype: str, shape, where: str = "input") -> np.ndarray:
    """A numpy array ``[*shape]`` of ``datatype`` from a JSON ``data`` field.

    Raises ProtocolError when the element count does not match the shape or an element does
    not fit the datatype (a string in an FP32 tensor, a float in an INT32 one)."""
    shape = _check_shape(shape, where)
    dt = numpy_dtype(datatype)
    flat = _flatten(data)
    if len(flat) != _numel(shape):
        raise ProtocolError(f"{where}: shape {list(shape)} holds {_numel(shape)} elements, "
                            f"'data' has {len(flat)}")
    if datatype == "BYTES":
        arr = np.empty(len(flat), dtype=object)
        for i, x in enumerate(flat):
            arr[i] = _as_bytes(x, where)
        return arr.reshape(shape)
    if datatype == "BOOL":
        if not all(isinstance(x, bool) for x in flat):
            raise ProtocolError(f"{where}: BOOL elements must be true or false")
        return np.array(flat, dtype=np.bool_).reshape(shape)
    integer = dt.kind in "iu"
    for x in flat:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or (integer and not isinstance(x, int)):
            raise ProtocolError(f"{where}: a {datatype} tensor cannot hold the element {x!r}")
    if integer:
        info = np.iinfo(dt)
        if any(x < info.min or x > info.max for x in flat):
            raise ProtocolError(f"{where}: an element is out of the range of {datatype} [{info.min}, {info.max}]")
        return np.array(flat, dtype=dt).reshape(shape)
    return np.array(flat, dtype=np.float64).astype(dt).reshape(shape)


def to_json_data(arr: np.ndarray, datatype: str) -> list:
    """The flat row-major JSON ``data`` list of ``arr`` (BYTES as UTF-8 strings; BF16 as floats)."""
    flat = np.asarray(arr).reshape(-1)
    if datatype == "BYTES":
        return [x.decode("utf-8", errors="replace") if isinstance(x, bytes) else str(x) for x in flat]
    if datatype == "BF16":
        return flat.astype(np.float32).tolist()
    return flat.tolist()


def from_binary(raw: bytes | memoryview, datatype: str, shape, where: str = "input") -> np.ndarray:
    """A numpy array ``[*shape]`` from the binary tensor data extension's bytes.

    Raises ProtocolError when the byte count does not match the shape and datatype."""
    shape = _check_shape(shape, where)
    n = _numel(shape)
    if datatype == "BYTES":
        out = np.empty(n, dtype=object)
        pos, mv = 0, memoryview(raw)
        for i in range(n):
            if pos + 4 > len(mv):
                raise ProtocolError(f"{where}: BYTES data ends after {i} of {n} elements")
            (size,) = struct.unpack_from("<I", mv, pos)
            pos += 4
            if pos + size > len(mv):
                raise ProtocolError(f"{where}: BYTES element {i} wants {size} bytes, {len(mv) - pos} remain")
            out[i] = bytes(mv[pos:pos + size])
            pos += size
        if pos != len(mv):
            raise ProtocolError(f"{where}: {len(mv) - pos} bytes left over after {n} BYTES elements")
        return out.reshape(shape)
    dt = numpy_dtype(datatype)
    if len(raw) != n * dt.itemsize:
        raise ProtocolError(f"{where}: shape {list(shape)} of {datatype} needs {n * dt.itemsize} bytes, "
                            f"got {len(raw)}")
    return np.frombuffer(raw, dtype=dt).reshape(shape)


def to_binary(arr: np.ndarray, datatype: str) -> bytes:
    """The binary tensor data extension's bytes of ``arr`` (row-major, little-endian)."""
    if datatype == "BYTES":
        parts = []
        for x in np.asarray(arr, dtype=object).reshape(-1):
            b = x if isinstance(x, bytes) else str(x).encode("utf-8")
            parts.append(struct.pack("<I", len(b)))
            parts.append(b)
        return b"".join(parts)
    return np.ascontiguousarray(arr, dtype=numpy_dtype(datatype)).tobytes()
