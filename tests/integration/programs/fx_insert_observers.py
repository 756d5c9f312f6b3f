"""A torch.fx program: insert an observer module after every activation of a traced model
(graph.inserting_after, call_module, add_submodule, replace_all_uses_with), run it, and
read what the observers saw; then delete them again (delete_submodule, erase_node,
eliminate_dead_code)."""

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F


class Observer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("max_abs", torch.zeros(()))

    def forward(self, x):
        self.max_abs.copy_(torch.maximum(self.max_abs, x.abs().max()))
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.fc2 = nn.Linear(6, 2)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h * 3  # noqa: B018  (dead code, for eliminate_dead_code to remove)
        return F.relu(self.fc2(h)) + torch.tanh(x).sum(dim=1, keepdim=True)


model = Net()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-1 + i / 10, 1, p.numel()).reshape(p.shape))
gm = fx.symbolic_trace(model)
activations = [n for n in gm.graph.nodes
               if n.op == "call_function" and n.target in (torch.relu, F.relu, torch.tanh)]
for i, node in enumerate(activations):
    name = f"observer_{i}"
    gm.add_submodule(name, Observer())
    with gm.graph.inserting_after(node):
        observed = gm.graph.call_module(name, (node,))
    node.replace_all_uses_with(observed, delete_user_cb=lambda user, o=observed: user is not o)
gm.graph.lint()
gm.recompile()
print(gm.code)
x = torch.linspace(-2, 2, 12).reshape(3, 4)
out = gm(x)
print("out", [round(v, 4) for v in out.flatten().tolist()])
print("observed", [(name, round(m.max_abs.item(), 4)) for name, m in gm.named_modules() if isinstance(m, Observer)])
for node in list(gm.graph.nodes):
    if node.op == "call_module" and node.target.startswith("observer_"):
        node.replace_all_uses_with(node.args[0])
        gm.graph.erase_node(node)
        gm.delete_submodule(node.target)
print("dead code removed", gm.graph.eliminate_dead_code())
gm.recompile()
print(gm.code)
print("same", torch.allclose(gm(x), model(x)), [name for name, _ in gm.named_children()])
