"""A torch.fx program: a Transformer that swaps sigmoid and neg, a graph pass that fuses
nothing but rewrites targets in place, and ShapeProp's shapes (torch.fx's documentation)."""

import operator

import torch
import torch.fx as fx
from torch.fx.passes.shape_prop import ShapeProp


class NegSigmSwapXformer(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target == torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "neg":
            call_self, *args_tail = args
            return call_self.sigmoid(*args_tail, **kwargs)
        return super().call_method(target, args, kwargs)


def fn(x):
    return torch.sigmoid(x).neg()


gm = fx.symbolic_trace(fn)
transformed = NegSigmSwapXformer(gm).transform()
x = torch.linspace(-2, 2, 5)
print(transformed.code)
print("swap", torch.allclose(transformed(x), torch.neg(x).sigmoid()))


class M(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y) * y


traced = fx.symbolic_trace(M())
for node in traced.graph.nodes:  # add -> mul, in place
    if node.op == "call_function" and node.target == operator.add:
        node.target = operator.mul
traced.graph.lint()
traced.recompile()
y = torch.linspace(1, 2, 5)
print(traced.code)
print("rewritten", torch.allclose(traced(x, y), torch.relu(x * y) * y))
ShapeProp(traced).propagate(x.reshape(5, 1), y)
for node in traced.graph.nodes:
    meta = node.meta.get("tensor_meta")
    print(node.name, None if meta is None else (list(meta.shape), str(meta.dtype), meta.requires_grad))
