"""The input/output signature of a model, found by running it once on an example batch.

``--example-input FILE.npz`` holds one array per model input, in ``forward``'s argument
order (``numpy.savez`` keeps the order; its default names ``arr_0``.. become
``input__0``..). The outputs are named ``output__0``.. in return order (a tensor, or a
tuple/list of tensors), or by key when ``forward`` returns a dict. Every dimension is fixed
at the example's size except the first, the batch dimension, which becomes -1 when the model
batches (``max_batch_size`` > 0).
"""

from __future__ import annotations

import numpy as np

from ..config import TensorSpec
from ..datatypes import datatype_of
from ._errors import ArchiveError

__all__ = ["input_names", "run_signature", "outputs_as_list"]


def input_names(keys: list[str]) -> list[str]:
    """``arr_0``.. (numpy.savez's positional names) become ``input__0``..; others stay."""
    return [f"input__{k[4:]}" if k.startswith("arr_") and k[4:].isdigit() else k for k in keys]


def outputs_as_list(out) -> list[tuple[str, object]]:
    """``[(name, value)]`` of a forward result: a tensor, a tuple/list of tensors, or a dict."""
    if isinstance(out, dict):
        return [(str(k), v) for k, v in out.items()]
    if isinstance(out, (tuple, list)):
        return [(f"output__{i}", v) for i, v in enumerate(out)]
    return [("output__0", out)]


def _spec(name: str, arr: np.ndarray, batched: bool) -> TensorSpec:
    shape = list(arr.shape)
    if batched and shape:
        shape[0] = -1
    return TensorSpec(name, datatype_of(arr.dtype), shape)


def run_signature(model, example: dict[str, np.ndarray], batched: bool) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """``(inputs, outputs)`` specs from one forward of ``model`` on ``example`` (under no_grad).

    Raises ArchiveError when the example is empty, its arrays disagree on the batch size, or
    ``forward`` fails or returns something other than tensors."""
    import ember
    if not example:
        raise ArchiveError("the example input holds no arrays")
    names = input_names(list(example))
    arrays = list(example.values())
    if batched and len({a.shape[0] if a.ndim else None for a in arrays}) != 1:
        raise ArchiveError(f"the example arrays must share their first (batch) dimension, got shapes "
                           f"{[list(a.shape) for a in arrays]}")
    with ember.no_grad():
        try:
            out = model(*[ember.from_numpy(np.ascontiguousarray(a)) for a in arrays])
        except Exception as e:
            raise ArchiveError(f"the model failed on the example input: {type(e).__name__}: {e}") from e
    inputs = [_spec(n, a, batched) for n, a in zip(names, arrays)]
    outputs = []
    for name, value in outputs_as_list(out):
        if not isinstance(value, ember.Tensor):
            raise ArchiveError(f"forward returned {type(value).__name__} for {name!r}; expected tensors")
        outputs.append(_spec(name, value.detach().cpu().numpy(), batched))
    return inputs, outputs
