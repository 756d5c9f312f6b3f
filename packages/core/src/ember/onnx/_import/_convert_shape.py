"""Shape, indexing, creation and type operators.

A shape-like input that is a constant of the file becomes Python ints in the generated
code (``x.reshape([2, -1])``); one the graph computes (``Shape`` of an input, then
``Gather``/``Concat``) stays an int64 tensor read when the module runs.

Source: the ONNX operator specification (onnx.ai/onnx/operators), opset 21: Shape, Size,
Reshape, Flatten, Transpose, Unsqueeze, Squeeze, Concat, Split, Slice, Gather,
GatherElements, GatherND, Expand, Tile, Pad, Constant, ConstantOfShape, Range, Cast, CastLike,
Trilu, Dropout, NonZero."""

from __future__ import annotations

import builtins

import numpy as np

import ember

from . import runtime
from ._dtypes import from_onnx
from ._table import converts

_INT64_MAX = np.iinfo(np.int64).max


def _ints_or_tensor(b, name):
    """A shape-like input: Python ints when constant, else its tensor."""
    values = b.ints(name)
    return values if values is not None else b.tensor(name)


@converts("Constant")
def _constant(b, n):
    import onnx
    attrs = {a.name: a for a in n.proto.attribute}
    if "value" in attrs:
        return onnx.numpy_helper.to_array(attrs["value"].t)
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                       ("value_ints", np.int64)):
        if key in attrs:
            return np.array(n.attrs[key], dtype=dtype)
    raise n.unsupported(f"with attribute {next(iter(attrs), None)!r} (sparse or string constants) is not supported")


@converts("Shape")
def _shape(b, n):
    start, end = n.attrs.get("start", 0), n.attrs.get("end")
    return b.call(runtime.shape, b.tensor(n.input(0)), start, end) if (start, end) != (0, None) else \
        b.call(runtime.shape, b.tensor(n.input(0)))


@converts("Size")
def _size(b, n):
    return b.call(runtime.size, b.tensor(n.input(0)))


@converts("Reshape")
def _reshape(b, n):
    x, dims = b.tensor(n.input(0)), b.ints(n.input(1))
    if dims is not None and (n.attrs["allowzero"] or 0 not in dims):
        return b.method("reshape", x, dims)
    return b.call(runtime.reshape, x, _ints_or_tensor(b, n.input(1)), **({"allowzero": 1} if n.attrs["allowzero"]
                                                                          else {}))


@converts("Flatten")
def _flatten(b, n):
    x, axis = b.tensor(n.input(0)), n.attrs["axis"]
    rank = b.rank(n.input(0))
    if axis == 1 and rank is not None and rank >= 2:
        return b.call(ember.flatten, x, 1)
    return b.call(runtime.flatten, x, axis)


@converts("Transpose")
def _transpose(b, n):
    x, perm = b.tensor(n.input(0)), n.attrs.get("perm")
    if perm is None:
        rank = b.rank(n.input(0))
        if rank is None:
            return b.call(runtime.transpose, x)
        perm = list(range(rank))[::-1]
    return b.call(ember.permute, x, list(perm))


@converts("Unsqueeze")
def _unsqueeze(b, n):
    x, axes = b.tensor(n.input(0)), b.ints(n.input(1))
    if axes is not None and len(axes) == 1 and axes[0] >= 0:
        return b.call(ember.unsqueeze, x, axes[0])
    return b.call(runtime.unsqueeze, x, _ints_or_tensor(b, n.input(1)))


@converts("Squeeze")
def _squeeze(b, n):
    x = b.tensor(n.input(0))
    if not n.input(1):
        return b.call(ember.squeeze, x)
    return b.call(runtime.squeeze, x, _ints_or_tensor(b, n.input(1)))


@converts("Concat")
def _concat(b, n):
    return b.call(ember.cat, [b.tensor(i) for i in n.inputs if i], dim=n.attrs["axis"])


@converts("Split")
def _split(b, n):
    x, axis, count = b.tensor(n.input(0)), n.attrs["axis"], len(n.outputs)
    sizes = b.ints(n.input(1)) if n.input(1) else None
    if sizes is not None:
        parts = b.call(ember.split, x, sizes, dim=axis)
    elif n.input(1):
        parts = b.call(runtime.split, x, b.tensor(n.input(1)), axis=axis)
    else:
        parts = b.call(runtime.split, x, axis=axis, num_outputs=n.attrs.get("num_outputs") or count)
    return [b.item(parts, i) for i in range(count)]


@converts("Slice")
def _slice(b, n):
    x = b.tensor(n.input(0))
    starts, ends = b.ints(n.input(1)), b.ints(n.input(2))
    axes = b.ints(n.input(3)) if n.input(3) else None
    steps = b.ints(n.input(4)) if n.input(4) else None
    rank = b.rank(n.input(0))
    static = starts is not None and ends is not None and (axes is not None or not n.input(3)) and \
        (steps is not None or not n.input(4))
    if static and rank is not None and all(s > 0 for s in steps or [1]):
        index = [builtins.slice(None)] * rank
        for k, (start, end) in enumerate(zip(starts, ends)):
            axis = (axes[k] if axes is not None else k) % rank
            step = steps[k] if steps is not None else 1
            index[axis] = builtins.slice(start or None, None if end >= _INT64_MAX // 2 else end,
                                         None if step == 1 else step)
        while index and index[-1] == builtins.slice(None):
            index.pop()
        return b.item(x, tuple(index)) if index else x
    args = [_ints_or_tensor(b, n.input(i)) if n.input(i) else None for i in range(1, 5)]
    while args[-1] is None:
        args.pop()
    return b.call(runtime.slice, x, *args)


@converts("Gather")
def _gather(b, n):
    data, index, axis = n.input(0), n.input(1), n.attrs["axis"]
    values = b.const(index)
    if values is not None and values.ndim == 0:  # one position: a select
        return b.call(ember.select, b.tensor(data), axis, int(values))
    if axis == 0 and b.is_parameter(data) and values is None:  # a lookup table: an embedding
        return b.call(ember.nn.functional.embedding, b.tensor(index), b.tensor(data))
    return b.call(runtime.gather, b.tensor(data), b.tensor(index), axis)


@converts("GatherElements")
def _gather_elements(b, n):
    return b.call(runtime.gather_elements, b.tensor(n.input(0)), b.tensor(n.input(1)), n.attrs["axis"])


@converts("GatherND")
def _gather_nd(b, n):
    return b.call(runtime.gather_nd, b.tensor(n.input(0)), b.tensor(n.input(1)), n.attrs["batch_dims"])


@converts("Expand")
def _expand(b, n):
    return b.call(runtime.expand, b.tensor(n.input(0)), _ints_or_tensor(b, n.input(1)))


@converts("Tile")
def _tile(b, n):
    return b.call(runtime.tile, b.tensor(n.input(0)), _ints_or_tensor(b, n.input(1)))


@converts("Pad")
def _pad(b, n):
    x, pads = b.tensor(n.input(0)), _ints_or_tensor(b, n.input(1))
    value = b.operand(n.input(2), [n.input(0)]) if n.input(2) else None
    axes = _ints_or_tensor(b, n.input(3)) if n.input(3) else None
    return b.call(runtime.pad, x, pads, value, axes, mode=n.attrs["mode"])


@converts("ConstantOfShape")
def _constant_of_shape(b, n):
    import onnx
    value = n.attrs.get("value")
    array = onnx.numpy_helper.to_array(value) if value is not None else np.zeros(1, np.float32)
    from ... import from_numpy
    dtype = from_numpy(np.zeros(0, array.dtype)).dtype
    return b.call(runtime.constant_of_shape, _ints_or_tensor(b, n.input(0)), array.reshape(-1)[0].item(), dtype)


@converts("Range")
def _range(b, n):
    return b.call(runtime.arange, *(b.tensor(n.input(i)) for i in range(3)))


@converts("Cast")
def _cast(b, n):
    return b.method("to", b.tensor(n.input(0)), from_onnx(n.attrs["to"]))


@converts("CastLike")
def _cast_like(b, n):
    dtype = b.dtype(n.input(1))
    x = b.tensor(n.input(0))
    if dtype is not None:
        return b.method("to", x, dtype)
    return b.method("to", x, b.call(getattr, b.tensor(n.input(1)), "dtype"))


@converts("Trilu")
def _trilu(b, n):
    fn = ember.triu if n.attrs["upper"] else ember.tril
    k = b.ints(n.input(1)) if n.input(1) else [0]
    if k is None:
        return b.call(runtime.trilu, b.tensor(n.input(0)), b.tensor(n.input(1)), upper=n.attrs["upper"])
    return b.call(fn, b.tensor(n.input(0)), k[0]) if k[0] else b.call(fn, b.tensor(n.input(0)))


@converts("Dropout")
def _dropout(b, n):
    """Inference: the input itself (a ratio given with training_mode true is not supported);
    the optional mask output is not computed."""
    training = b.ints(n.input(2)) if n.input(2) else [0]
    if training is None or training[0]:
        raise n.unsupported("in training mode is not supported (the imported module computes inference)")
    return [b.tensor(n.input(0)), None]


@converts("NonZero")
def _nonzero(b, n):
    return b.method("t", b.call(ember.nonzero, b.tensor(n.input(0))))
