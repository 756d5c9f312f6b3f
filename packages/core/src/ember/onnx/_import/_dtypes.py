"""ONNX tensor element types (TensorProto.DataType) as ember dtypes.

Source: the ONNX IR specification, "Tensor Element Types"."""

from __future__ import annotations

# TensorProto.DataType number -> ember dtype attribute name
_NAMES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool", 10: "float16",
          11: "float64", 14: "complex64", 15: "complex128", 16: "bfloat16"}


def from_onnx(elem_type: int, missing_ok: bool = False):
    """The ember dtype of ONNX element type ``elem_type``; TypeError (or None with
    ``missing_ok``) for a type ember has no dtype for (strings, unsigned 16-64 bit, float8)."""
    import ember
    name = _NAMES.get(elem_type)
    if name is None:
        if missing_ok:
            return None
        import onnx
        label = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() \
            else str(elem_type)
        raise TypeError(f"ONNX element type {label} has no ember dtype (supported: "
                        f"{', '.join(onnx.TensorProto.DataType.Name(k) for k in _NAMES)})")
    return getattr(ember, name)
