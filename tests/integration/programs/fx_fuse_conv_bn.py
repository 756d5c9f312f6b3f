"""A torch.fx program: fold each BatchNorm2d that follows a Conv2d into the convolution
(the conv/bn fusion pass of torch.fx's tutorials), then check the fused model against the
original in eval mode."""

import copy

import torch
import torch.fx as fx
import torch.nn as nn


def fuse_conv_bn_eval(conv, bn):
    fused = copy.deepcopy(conv)
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    with torch.no_grad():
        fused.weight.copy_(conv.weight * scale.reshape(-1, 1, 1, 1))
        bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
        fused.bias = nn.Parameter((bias - bn.running_mean) * scale + bn.bias)
    return fused


def _parent_name(target):
    *parent, name = target.rsplit(".", 1)
    return (parent[0] if parent else ""), name


def replace_node_module(node, modules, new_module):
    parent_name, name = _parent_name(node.target)
    setattr(modules[parent_name], name, new_module)
    modules[node.target] = new_module


def fuse(model):
    model = copy.deepcopy(model)
    fx_model = fx.symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    fused = 0
    for node in fx_model.graph.nodes:
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        conv_node = node.args[0]
        if conv_node.op != "call_module" or not isinstance(modules[conv_node.target], nn.Conv2d):
            continue
        if len(conv_node.users) > 1:  # the conv's output is used elsewhere: keep it
            continue
        replace_node_module(conv_node, modules, fuse_conv_bn_eval(modules[conv_node.target], modules[node.target]))
        node.replace_all_uses_with(conv_node)
        fx_model.graph.erase_node(node)
        fused += 1
    fx_model.graph.lint()
    fx_model.recompile()
    return fx_model, fused


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
        self.conv = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.side = nn.Conv2d(4, 4, 1)
        self.side_bn = nn.BatchNorm2d(4)

    def forward(self, x):
        x = self.stem(x)
        y = self.bn(self.conv(x))
        s = self.side(x)
        return y + self.side_bn(s) + s  # side's output has two users: not fused


model = Net()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-0.5, 0.5 + i / 10, p.numel()).reshape(p.shape))
    for name, b in model.named_buffers():
        if name.endswith("running_var"):
            b.copy_(torch.linspace(0.5, 2.0, b.numel()))
        elif name.endswith("running_mean"):
            b.copy_(torch.linspace(-0.2, 0.3, b.numel()))
model.eval()
fused, count = fuse(model)
print("fused", count)
print(fused.code)
print([n for n, m in fused.named_modules() if isinstance(m, nn.BatchNorm2d)])
x = torch.linspace(-1, 1, 2 * 3 * 5 * 5).reshape(2, 3, 5, 5)
print("same", torch.allclose(fused(x), model(x), atol=1e-5))
print("values", [round(v, 3) for v in fused(x)[0, :, 0, 0].tolist()])
