"""A torch.fx program: build the inverse of a traced function by walking its graph
backwards into a new Graph (the invert example of torch.fx's documentation)."""

import torch
import torch.fx as fx

invert_mapping = {}


def add_inverse(a, b):
    invert_mapping[a] = b
    invert_mapping[b] = a


for a, b in [(torch.sin, torch.asin), (torch.cos, torch.acos), (torch.tan, torch.atan), (torch.exp, torch.log)]:
    add_inverse(a, b)


def invert(model):
    fx_model = fx.symbolic_trace(model)
    new_graph = fx.Graph()
    env = {}
    for node in reversed(fx_model.graph.nodes):
        if node.op == "call_function":
            new_node = new_graph.call_function(invert_mapping[node.target], (env[node.name],))
            env[node.args[0].name] = new_node
        elif node.op == "output":
            new_node = new_graph.placeholder(node.name)
            env[node.args[0].name] = new_node
        elif node.op == "placeholder":
            new_graph.output(env[node.name])
        else:
            raise RuntimeError("Not implemented")
    new_graph.lint()
    return fx.GraphModule(fx_model, new_graph)


def f(x):
    return torch.exp(torch.tan(x))


inverse = invert(f)
print(inverse.code)
x = torch.linspace(-1, 1, 5)
print("roundtrip", torch.allclose(inverse(f(x)), x, atol=1e-6))
print("values", [round(v, 4) for v in inverse(f(x)).tolist()])
