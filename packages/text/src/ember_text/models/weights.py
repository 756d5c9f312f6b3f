"""Reading and writing a model folder's weights: ``model.safetensors`` or ``pytorch_model.bin``.

Reading goes through ember-core's ``ember.sharded`` (one file or a sharded folder); writing
one file is here.
"""

from __future__ import annotations

import os

import numpy as np

import ember

from .._io import write_atomically

SAFE_WEIGHTS_NAME = "model.safetensors"
WEIGHTS_NAME = "pytorch_model.bin"


def load_state_dict_from_folder(folder: str) -> dict:
    """The state dict (name -> ember tensor) stored in ``folder``: ``model.safetensors``,
    ``pytorch_model.bin`` (through ``ember.load``'s restricted unpickler: no code in the file
    runs) or a sharded folder (``*.index.json``), all read by ember-core's ``ember.sharded``.

    Raises:
        OSError: the folder holds neither a weights file nor a sharded index, or a shard is missing.
    """
    from ember.sharded import INDEX_NAME, SAFE_INDEX_NAME, load_state_dict_from_index, load_weights_file
    folder = os.fspath(folder)
    for name in (SAFE_WEIGHTS_NAME, WEIGHTS_NAME):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            state = load_weights_file(path)
            if not isinstance(state, dict):
                raise OSError(f"{path} does not hold a state dict (found {type(state).__name__})")
            return state
    if any(os.path.isfile(os.path.join(folder, n)) for n in (SAFE_INDEX_NAME, INDEX_NAME)):
        return load_state_dict_from_index(folder)
    raise OSError(f"{folder!r} holds no weights: expected {SAFE_WEIGHTS_NAME} or {WEIGHTS_NAME}")


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
