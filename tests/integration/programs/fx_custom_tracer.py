"""A torch.fx program: a Tracer subclass that keeps a user module as one call_module node,
the graph listed node by node, the traced module run beside the eager one."""

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = Swish()
        self.fc2 = nn.Linear(8, 3)
        self.register_buffer("offset", torch.arange(3.0))

    def forward(self, x):
        h = self.act(self.fc1(x))
        h = torch.cat([h, h.flip(1)], dim=0)
        return F.relu(self.fc2(h)) + self.offset * h.shape[0]


class LeafSwish(fx.Tracer):
    def is_leaf_module(self, m, qualname):
        return isinstance(m, Swish) or super().is_leaf_module(m, qualname)


def fill(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape))


def show(gm):
    for node in gm.graph.nodes:
        target = node.target if isinstance(node.target, str) else fx.node._get_qualified_name(node.target)
        print(node.op, node.name, target, [str(a) for a in node.args], sorted(node.kwargs),
              sorted(u.name for u in node.users))


model = Net()
fill(model)
x = torch.linspace(-2, 2, 8).reshape(2, 4)
leafy = fx.GraphModule(model, LeafSwish().trace(model))
show(leafy)
plain = fx.symbolic_trace(model)
show(plain)
print(plain.code)
for gm in (leafy, plain):
    print("out", [round(v, 4) for v in gm(x).flatten().tolist()], torch.equal(gm(x), model(x)))
