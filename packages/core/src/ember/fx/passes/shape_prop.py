"""``ShapeProp``: run a GraphModule on sample inputs and record each node's tensor
shape, dtype, strides and memory format in ``node.meta["tensor_meta"]``
(torch.fx.passes.shape_prop)."""

from __future__ import annotations

import traceback
from typing import Any, NamedTuple

from ..._tensor import Tensor
from .._compatibility import compatibility
from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


@compatibility(is_backward_compatible=True)
class TensorMetadata(NamedTuple):
    """What ShapeProp records of a tensor, with torch's fields: ``shape`` (Size),
    ``dtype``, ``requires_grad``, ``stride`` (tuple), ``memory_format`` (the first of
    contiguous / channels_last / channels_last_3d the tensor satisfies, else None),
    ``is_quantized`` and ``qparams`` (ember has no quantized tensors: False and {})."""
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _is_sparse(t: Tensor) -> bool:
    return bool(getattr(t, "is_sparse", False)) or str(getattr(t, "layout", "")).startswith("ember.sparse")


def _extract_tensor_metadata(result: Tensor, include_contiguity: bool = True) -> TensorMetadata:
    import ember
    sparse = _is_sparse(result)
    stride = result.stride() if not sparse else ()
    memory_format = None
    if include_contiguity and not sparse:
        for fmt in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
            try:
                if result.is_contiguous(memory_format=fmt):
                    memory_format = fmt
                    break
            except RuntimeError:  # channels_last asks for 4-d, channels_last_3d for 5-d
                continue
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, stride, memory_format, False, {})


@compatibility(is_backward_compatible=True)
class ShapeProp(Interpreter):
    """Execute ``gm`` node by node; for each node whose result holds tensors, store a
    TensorMetadata (or the same structure of them, for tuples/lists/dicts of tensors)
    in ``meta["tensor_meta"]``, and the result's type in ``meta["type"]``.

    Example::

        ShapeProp(gm).propagate(ember.randn(50, 1000))
        gm.graph.nodes ... node.meta["tensor_meta"].shape   # ember.Size([50, 100])

    ``fake_mode`` is accepted for torch's signature; ember has no fake tensors, so the
    graph always runs on the given values (pass tensors on the ``meta`` device to
    propagate shapes without computing). A failing node raises ``RuntimeError``
    ("ShapeProp error for: node=...") from the original exception."""

    def __init__(self, gm, fake_mode: Any = None) -> None:
        super().__init__(gm)
        self.fake_mode = fake_mode
        self.fake_module = None
        self.real_module = self.module

    def run_node(self, n: Node) -> Any:
        try:
            result = super().run_node(n)
        except Exception as e:
            traceback.print_exc()
            raise RuntimeError(f"ShapeProp error for: node={n.format_node()} with meta={n.meta}") from e
        found = False

        def extract(obj):
            nonlocal found
            if isinstance(obj, Tensor):
                found = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the module on ``args`` (sample inputs), recording metadata; returns its result."""
        return super().run(*args)
