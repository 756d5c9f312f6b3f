"""Weights in and out of an archive: always stored as one safetensors file.

``--weights`` takes a safetensors file or a torch checkpoint holding a state_dict (what
``ember.save(model.state_dict(), f)`` or ``torch.save`` write). Tensors that share memory
(tied weights) are stored once, as safetensors' ``save_model`` does: in each group of names
sharing a storage the first name (sorted) whose tensor covers the whole storage is kept, the
others are dropped and recorded in the file's metadata as ``{dropped_name: kept_name}``;
loading puts them back.

Source: safetensors' "torch shared tensors" notes, https://huggingface.co/docs/safetensors/torch_shared_tensors
"""

from __future__ import annotations

import json
from collections import defaultdict

import ml_dtypes  # noqa: F401 - registers the 'bfloat16' numpy dtype safetensors asks for
import numpy as np

from ._errors import ArchiveError

__all__ = ["read_weights_file", "to_safetensors_bytes", "state_dict_from_safetensors"]


def _is_safetensors(head: bytes) -> bool:
    # a little-endian u64 header length, then a JSON object
    return len(head) >= 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") > 0


def _root(arr: np.ndarray) -> np.ndarray:
    # the array owning the memory (as_strided views hide it one level down, in a helper object)
    while True:
        b = arr.base
        if not isinstance(b, np.ndarray):
            b = getattr(b, "base", None)
            if not isinstance(b, np.ndarray):
                return arr
        arr = b
    return arr


def read_weights_file(path: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """``({name: array}, {dropped_name: kept_name})`` from a safetensors file or a torch
    state_dict checkpoint; tied tensors are folded as described in the module docstring.

    Raises ArchiveError when the file holds something other than a flat mapping of names to tensors."""
    with open(path, "rb") as f:
        head = f.read(9)
    if _is_safetensors(head):
        from safetensors import safe_open
        from safetensors.numpy import load_file
        with safe_open(path, framework="numpy") as f:
            meta = f.metadata() or {}
        arrays = load_file(path)
        return arrays, {k: v for k, v in meta.items() if v in arrays and k not in arrays}
    import ember
    try:
        obj = ember.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a corrupt file, or one that needs code to unpickle
        raise ArchiveError(f"cannot read the weights file {path!r} as safetensors or a torch checkpoint: {e}") from e
    if not isinstance(obj, dict) or not all(isinstance(k, str) and isinstance(v, ember.Tensor) for k, v in obj.items()):
        raise ArchiveError(f"the checkpoint {path!r} must hold a state_dict (a mapping of names to tensors), "
                           f"got {type(obj).__name__}"
                           + (f" with keys {list(obj)[:5]}" if isinstance(obj, dict) else ""))
    return _fold_shared({k: v.detach().numpy() for k, v in obj.items()})


def _fold_shared(arrays: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    groups: dict[int, list[str]] = defaultdict(list)
    for name, arr in arrays.items():
        groups[id(_root(arr))].append(name)
    kept, dropped = {}, {}
    for names in groups.values():
        if len(names) == 1:
            kept[names[0]] = arrays[names[0]]
            continue
        root = _root(arrays[names[0]])
        complete = sorted(n for n in names if arrays[n].nbytes == root.nbytes and arrays[n].flags.c_contiguous
                          and arrays[n].__array_interface__["data"][0] == root.__array_interface__["data"][0])
        if not complete:
            raise ArchiveError(f"the tensors {sorted(names)} share memory but none covers all of it; "
                               "save them as separate tensors (clone them) before archiving")
        keep = complete[0]
        kept[keep] = arrays[keep]
        for n in sorted(names):
            if n != keep:
                dropped[n] = keep
    return kept, dropped


def to_safetensors_bytes(arrays: dict[str, np.ndarray], dropped: dict[str, str]) -> bytes:
    from safetensors.numpy import save
    return save({k: np.ascontiguousarray(v) for k, v in arrays.items()}, metadata=dict(dropped) or None)


def state_dict_from_safetensors(data: bytes) -> dict:
    """A state_dict of ember tensors from safetensors bytes, tied names put back (sharing memory)."""
    from safetensors.numpy import load

    import ember
    header_len = int.from_bytes(data[:8], "little")
    meta = json.loads(data[8:8 + header_len]).get("__metadata__") or {}
    state = {k: ember.from_numpy(np.array(v)) for k, v in load(data).items()}
    for dropped, keep in meta.items():
        if keep in state and dropped not in state:
            state[dropped] = state[keep]
    return state
