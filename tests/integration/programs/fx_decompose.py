"""A torch.fx program: decompose F.relu and F.gelu into simpler operations by re-emitting
a traced graph node by node through Proxies on a GraphAppendingTracer (the Proxy/retracing
example of torch.fx's documentation); the rules call torch's functions on the Proxies."""

import math

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return F.relu(self.fc(x)) + F.gelu(-x)


def relu_decomposition(x):
    return (x > 0) * x


def gelu_decomposition(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


decomposition_rules = {F.relu: relu_decomposition, F.gelu: gelu_decomposition}


def decompose(model, tracer_class=fx.Tracer):
    graph = tracer_class().trace(model)
    new_graph = fx.Graph()
    env = {}
    tracer = fx.proxy.GraphAppendingTracer(new_graph)
    for node in graph.nodes:
        if node.op == "call_function" and node.target in decomposition_rules:
            proxy_args = [fx.Proxy(env[x.name], tracer) if isinstance(x, fx.Node) else x for x in node.args]
            output_proxy = decomposition_rules[node.target](*proxy_args)
            env[node.name] = output_proxy.node
        else:
            env[node.name] = new_graph.node_copy(node, lambda x: env[x.name])
    return fx.GraphModule(model, new_graph)


model = M()
with torch.no_grad():
    model.fc.weight.copy_(torch.linspace(-1, 1, 9).reshape(3, 3))
    model.fc.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
decomposed = decompose(model)
print(decomposed.code)
x = torch.linspace(-1.5, 1.5, 6).reshape(2, 3)
print("same", torch.allclose(decomposed(x), model(x), atol=1e-6))
print("values", [round(v, 4) for v in decomposed(x).flatten().tolist()])
