"""ember.fx.passes.shape_prop against torch.fx's: the same hand-built graphs propagated by
both, the recorded TensorMetadata compared field by field."""

import pytest
import torch
import torch.fx
from _programs import X, build, close

import ember
import ember.fx


def test_shape_prop_matches_torch():
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp
    from torch.fx.passes.shape_prop import TensorMetadata as TMeta

    from ember.fx.passes.shape_prop import ShapeProp, TensorMetadata
    assert TensorMetadata._fields == TMeta._fields
    tgm, egm = build(torch, torch.fx), build(ember, ember.fx)
    tres = TShapeProp(tgm).propagate(torch.tensor(X))
    eres = ShapeProp(egm).propagate(ember.tensor(X))
    close(eres[0], tres[0])

    def summary(meta, lib):
        if isinstance(meta, tuple) and hasattr(meta, "_fields"):
            return (tuple(meta.shape), str(meta.dtype).replace("torch", "ember"), meta.requires_grad,
                    tuple(meta.stride), str(meta.memory_format).replace("torch", "ember"), meta.is_quantized,
                    meta.qparams)
        if isinstance(meta, (list, tuple)):
            return type(meta).__name__, [summary(m, lib) for m in meta]
        if isinstance(meta, dict):
            return {k: summary(v, lib) for k, v in meta.items()}
        return meta
    for tn, en in zip(tgm.graph.nodes, egm.graph.nodes):
        assert ("tensor_meta" in tn.meta) == ("tensor_meta" in en.meta), tn.name
        if "tensor_meta" in tn.meta:
            assert summary(en.meta["tensor_meta"], ember) == summary(tn.meta["tensor_meta"], torch), tn.name
        assert en.meta["type"].__name__ == tn.meta["type"].__name__


def test_shape_prop_memory_formats_and_errors():
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp

    from ember.fx.passes.shape_prop import ShapeProp
    out = []
    for lib, fx, SP in [(torch, torch.fx, TShapeProp), (ember, ember.fx, ShapeProp)]:
        g = fx.Graph()
        x = g.placeholder("x")
        cl = g.call_method("contiguous", (x,), {"memory_format": lib.channels_last})
        p = g.call_method("permute", (x, 0, 3, 1, 2))
        five = g.call_method("unsqueeze", (cl, 0))
        g.output((cl, p, five))
        gm = fx.GraphModule(lib.nn.Module(), g)
        SP(gm).propagate(lib.ones(2, 3, 4, 5))
        out.append([str(n.meta["tensor_meta"].memory_format).replace("torch", "ember")
                    for n in gm.graph.nodes if n.op != "output"])
        bad = fx.Graph()
        a = bad.placeholder("a")
        bad.output(bad.call_function(lib.matmul, (a, a)))
        with pytest.raises(RuntimeError, match="ShapeProp error for: node=%matmul"):
            SP(fx.GraphModule(lib.nn.Module(), bad)).propagate(lib.ones(2, 3))
    assert out[0] == out[1]


def test_shape_prop_on_meta_tensors():
    from ember.fx.passes.shape_prop import ShapeProp
    gm = build(ember, ember.fx)
    gm = gm.to("meta")
    ShapeProp(gm).propagate(ember.empty(7, 4, device="meta"))
    tgm = build(torch, torch.fx).to("meta")
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp
    TShapeProp(tgm).propagate(torch.empty(7, 4, device="meta"))
    for tn, en in zip(tgm.graph.nodes, gm.graph.nodes):
        if tn.op not in ("output",) and "tensor_meta" in tn.meta:
            assert tuple(en.meta["tensor_meta"].shape) == tuple(tn.meta["tensor_meta"].shape)
