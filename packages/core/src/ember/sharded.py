"""Sharded checkpoints in the Hugging Face layout, for every package to read and write.

A folder holds shards (``model-00001-of-00003.safetensors``, ...) and an index,
``model.safetensors.index.json`` (``pytorch_model.bin.index.json`` for torch's format):
``{"metadata": {"total_size": <bytes>}, "weight_map": {name: shard file}}``. A state dict
that fits in one shard is written as a single file without an index, as
huggingface_hub does.

- ``save_torch_state_dict(state_dict, save_directory, max_shard_size="5GB")``:
  huggingface_hub's function of that name (safetensors by default; each file written to a
  temporary name and renamed; shards of an earlier save under the same pattern removed);
- ``load_sharded_checkpoint(model, folder, strict=True, prefer_safe=True)``: transformers'
  function of that name, one shard in memory at a time;
- ``load_state_dict_from_index(folder)``: every tensor of a sharded folder as one dict.

Safetensors files are read and written by ember itself (every dtype the format names,
bfloat16 included; complex128 has no code there and raises TypeError); each reader takes
``mmap=True`` to map files instead of reading them.
"""

from __future__ import annotations

import json
import os
import re

__all__ = ["load_sharded_checkpoint", "load_state_dict_from_index", "load_weights_file", "save_torch_state_dict",
           "SAFE_INDEX_NAME", "INDEX_NAME"]

SAFE_INDEX_NAME = "model.safetensors.index.json"
INDEX_NAME = "pytorch_model.bin.index.json"
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30,
          "TIB": 2**40}


def _size_in_bytes(size) -> int:
    """``5_000_000_000``, ``"5GB"`` (powers of 10) or ``"5GiB"`` (powers of 2) in bytes."""
    if isinstance(size, int):
        return size
    match = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]+)\s*", str(size))
    if not match or match.group(2).upper() not in _UNITS:
        raise ValueError(f"max_shard_size must be an int or a size such as '5GB' or '500MiB', got {size!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def _split(state_dict: dict, max_bytes: int) -> list:
    """Names per shard, in order: a shard closes before the tensor that would overflow it;
    a tensor larger than a shard gets one of its own; tensors sharing memory are written once."""
    shards, current, current_size, seen = [], [], 0, set()
    for name, tensor in state_dict.items():
        key = (tensor.data_ptr(), tuple(tensor.shape), tensor.dtype) if tensor.numel() else None
        if key is not None and key in seen:
            continue
        seen.add(key)
        size = tensor.numel() * tensor.element_size()
        if size > max_bytes:
            shards.append([name])
            continue
        if current and current_size + size > max_bytes:
            shards.append(current)
            current, current_size = [], 0
        current.append(name)
        current_size += size
    if current:
        shards.append(current)
    return shards


def save_torch_state_dict(state_dict: dict, save_directory, *, filename_pattern: str | None = None,
                          max_shard_size="5GB", metadata: dict | None = None, safe_serialization: bool = True,
                          force_contiguous: bool = True) -> None:
    """Write ``state_dict`` (name -> tensor) into ``save_directory`` as shards of at most
    ``max_shard_size`` bytes plus an index, or as one file when it fits (huggingface_hub's
    ``save_torch_state_dict`` layout and names). ``metadata`` goes into each safetensors
    header beside ``{"format": "pt"}``. Raises ValueError for a bad ``max_shard_size``.

    ``filename_pattern`` names the files, with ``{suffix}`` replaced by ``-00001-of-00003``
    (or nothing for one file); by default ``model{suffix}.safetensors``, or
    ``pytorch_model{suffix}.bin`` without ``safe_serialization`` (then torch's format).
    ``force_contiguous`` is accepted (tensors are always written contiguous)."""
    from .serialization import _write_path_atomically, save
    save_directory = os.fspath(save_directory)
    os.makedirs(save_directory, exist_ok=True)
    pattern = filename_pattern or ("model{suffix}.safetensors" if safe_serialization else "pytorch_model{suffix}.bin")
    shards = _split(state_dict, _size_in_bytes(max_shard_size))
    names = ([pattern.format(suffix="")] if len(shards) == 1 else
             [pattern.format(suffix=f"-{i + 1:05d}-of-{len(shards):05d}") for i in range(len(shards))])
    for old in _earlier_shards(save_directory, pattern, keep=set(names)):
        os.unlink(os.path.join(save_directory, old))
    for file, keys in zip(names, shards):
        path = os.path.join(save_directory, file)
        part = {k: state_dict[k].detach() for k in keys}
        if safe_serialization:
            blob = _safetensors_bytes(part, metadata, force_contiguous)
            _write_path_atomically(path, lambda f, blob=blob: f.write(blob))
        else:
            save(part, path)
    if len(shards) > 1:
        index = {"metadata": {"total_size": sum(state_dict[k].numel() * state_dict[k].element_size()
                                                for keys in shards for k in keys), **(metadata or {})},
                 "weight_map": {k: file for file, keys in zip(names, shards) for k in sorted(keys)}}
        text = json.dumps(index, indent=2, sort_keys=True) + "\n"
        _write_path_atomically(os.path.join(save_directory, pattern.format(suffix="") + ".index.json"),
                               lambda f: f.write(text.encode()))


def _earlier_shards(directory: str, pattern: str, keep: set) -> list:
    """Files of an earlier save under ``pattern`` (its shards, single file, index) not in ``keep``."""
    plain = pattern.format(suffix="")
    shard = re.compile(re.escape(pattern).replace(re.escape("{suffix}"), r"-\d{5}-of-\d{5}") + "$")
    ours = (plain, plain + ".index.json")
    return [f for f in os.listdir(directory) if f not in keep and (shard.match(f) or f in ours)]


def _safetensors_bytes(part: dict, metadata, force_contiguous: bool) -> bytes:
    # every tensor is written compactly, as safetensors stores no strides
    from ._safetensors import save_bytes
    return save_bytes(part, {"format": "pt", **(metadata or {})})


def _index(folder: str, prefer_safe: bool) -> tuple:
    """(path of the index to read, its weight map); OSError naming what is missing."""
    order = (SAFE_INDEX_NAME, INDEX_NAME) if prefer_safe else (INDEX_NAME, SAFE_INDEX_NAME)
    for name in order:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path) as f:
                index = json.load(f)
            if "weight_map" not in index:
                raise OSError(f"{path} is not a sharded-checkpoint index: it has no 'weight_map'")
            return path, index["weight_map"]
    raise ValueError(f"Can't find a checkpoint index ({' or '.join(order)}) in {folder}.")


def load_weights_file(path, *, mmap: bool = False) -> dict:
    """One weights file as name -> CPU tensor: safetensors (every dtype it names, bfloat16
    included, read by ember itself) or torch's format through ember's restricted unpickler
    (no code in the file runs). ``mmap=True`` maps the file: tensors are views of it, read
    from disk when touched. Raises RuntimeError naming the file when it is corrupt.

    ``path`` is the file (a str or os.PathLike); its name decides the format."""
    return _load_shard(os.fspath(path), mmap)


def _load_shard(path: str, mmap: bool = False) -> dict:
    if path.endswith(".safetensors"):
        from ._safetensors import load_file
        return load_file(path, mmap=mmap)
    from .serialization import load
    return load(path, map_location="cpu", weights_only=True, mmap=mmap)


def load_state_dict_from_index(folder, prefer_safe: bool = True, *, mmap: bool = False) -> dict:
    """Every tensor of the sharded checkpoint in ``folder`` (name -> tensor, the index's order);
    ``mmap=True`` maps each shard instead of reading it (see ``load_weights_file``).

    Raises ValueError when the folder has no index, OSError when a shard it names is missing.

    With ``prefer_safe`` the safetensors index is read when both it and torch's are there."""
    folder = os.fspath(folder)
    _, weight_map = _index(folder, prefer_safe)
    out = {}
    for file in dict.fromkeys(weight_map.values()):
        path = os.path.join(folder, file)
        if not os.path.isfile(path):
            raise OSError(f"the checkpoint index in {folder} names the shard {file}, which is missing")
        out.update(_load_shard(path, mmap))
    return {k: out[k] for k in weight_map if k in out}


def load_sharded_checkpoint(model, folder, strict: bool = True, prefer_safe: bool = True, *, mmap: bool = False):
    """Load the sharded checkpoint in ``folder`` into ``model`` one shard at a time
    (transformers' ``load_sharded_checkpoint``); ``prefer_safe`` reads the safetensors
    index when both exist; ``mmap=True`` (an ember extension) maps each shard, so only the
    parameters being copied are read into memory. Returns ``(missing_keys, unexpected_keys)`` as
    ``Module.load_state_dict`` does.

    Raises RuntimeError (``strict``) naming the missing and unexpected keys before anything
    is loaded; ValueError when the folder has no index; OSError for a missing shard."""
    folder = os.fspath(folder)
    _, weight_map = _index(folder, prefer_safe)
    model_keys = set(model.state_dict())
    missing = [k for k in model_keys if k not in weight_map]
    unexpected = [k for k in weight_map if k not in model_keys]
    if strict and (missing or unexpected):
        message = f"Error(s) in loading state_dict for {model.__class__.__name__}"
        if missing:
            message += "\nMissing key(s): " + ", ".join(f'"{k}"' for k in sorted(missing)) + "."
        if unexpected:
            message += "\nUnexpected key(s): " + ", ".join(f'"{k}"' for k in sorted(unexpected)) + "."
        raise RuntimeError(message)
    for file in dict.fromkeys(weight_map.values()):
        path = os.path.join(folder, file)
        if not os.path.isfile(path):
            raise OSError(f"the checkpoint index in {folder} names the shard {file}, which is missing")
        model.load_state_dict(_load_shard(path, mmap), strict=False)
    from .nn.modules.module import _IncompatibleKeys
    return _IncompatibleKeys(missing, unexpected)
