"""Reading and writing a model folder's weights: ``model.safetensors`` or ``pytorch_model.bin``.

One small function reads a folder's weights file, or a sharded folder through the core's
reader (``ember.sharded``).
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np

import ember

from .._io import write_atomically

SAFE_WEIGHTS_NAME = "model.safetensors"
WEIGHTS_NAME = "pytorch_model.bin"


def load_state_dict_from_folder(folder: str) -> dict:
    """The state dict (name -> ember tensor) stored in ``folder``.

    ``model.safetensors`` is read with the ``safetensors`` package's numpy API (bfloat16 files,
    which numpy cannot name, through ``read_safetensors_bf16``); ``pytorch_model.bin`` through
    ``ember.load``'s restricted unpickler (no code in the file runs).

    Raises:
        OSError: the folder holds neither a weights file nor a sharded index, or a shard is missing.
    """
    folder = os.fspath(folder)
    safe = os.path.join(folder, SAFE_WEIGHTS_NAME)
    if os.path.isfile(safe):
        from safetensors.numpy import load_file

        try:
            arrays = load_file(safe)
        except TypeError:  # "data type 'bfloat16' not understood": numpy has no bfloat16 of its own
            arrays = read_safetensors_bf16(safe)
        return {k: ember.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}
    legacy = os.path.join(folder, WEIGHTS_NAME)
    if os.path.isfile(legacy):
        state = ember.load(legacy, map_location="cpu", weights_only=True)
        if not isinstance(state, dict):
            raise OSError(f"{legacy} does not hold a state dict (found {type(state).__name__})")
        return state
    from ember.sharded import INDEX_NAME, SAFE_INDEX_NAME, load_state_dict_from_index
    if any(os.path.isfile(os.path.join(folder, n)) for n in (SAFE_INDEX_NAME, INDEX_NAME)):
        return load_state_dict_from_index(folder)
    raise OSError(f"{folder!r} holds no weights: expected {SAFE_WEIGHTS_NAME} or {WEIGHTS_NAME}")


_SAFETENSORS_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
                       "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors_bf16(path: str) -> dict:
    """A safetensors file read into numpy arrays, bfloat16 ones as ``ml_dtypes.bfloat16``.

    The format (the safetensors specification): an 8-byte little-endian header length, a JSON
    header mapping each name to its dtype, shape and byte offsets, then the raw little-endian data.

    Raises:
        ValueError: a truncated file or a dtype outside the table above and BF16.
    """
    import ml_dtypes

    dtypes = {**_SAFETENSORS_DTYPES, "BF16": ml_dtypes.bfloat16}
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path} is not a safetensors file (too short)")
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in dtypes:
            raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']}, which ember_text cannot read")
        start, end = info["data_offsets"]
        if end > len(data):
            raise ValueError(f"{path} is truncated: tensor {name} ends at byte {end} of {len(data)}")
        out[name] = np.frombuffer(data[start:end], dtype=dtypes[info["dtype"]]).reshape(info["shape"]).copy()
    return out


def save_state_dict_to_folder(state_dict: dict, folder: str, safe_serialization: bool = True) -> str:
    """Write ``state_dict`` as ``model.safetensors`` (default) or ``pytorch_model.bin``; returns the path."""
    folder = os.fspath(folder)
    if safe_serialization:
        from safetensors.numpy import save

        arrays = {k: np.ascontiguousarray(v.detach().cpu().numpy()) for k, v in state_dict.items()}
        path = os.path.join(folder, SAFE_WEIGHTS_NAME)
        data = save(arrays, metadata={"format": "pt"})
        write_atomically(path, lambda f: f.write(data), mode="wb")
        return path
    path = os.path.join(folder, WEIGHTS_NAME)
    ember.save({k: v.detach() for k, v in state_dict.items()}, path)
    return path
