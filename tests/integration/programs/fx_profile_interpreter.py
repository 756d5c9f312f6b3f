"""A torch.fx program: an Interpreter that times every node of a traced network (the
profiling example of torch.fx's documentation)."""

import time

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)
        self.bn = nn.BatchNorm2d(2)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)) + x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(2, 3)

    def forward(self, x):
        x = self.blocks(x)
        return self.head(x.mean(dim=(2, 3)))


class ProfilingInterpreter(torch.fx.Interpreter):
    def __init__(self, mod):
        super().__init__(torch.fx.symbolic_trace(mod))
        self.total_runtime_sec = []
        self.runtimes_sec = {}

    def run(self, *args):
        t0 = time.perf_counter()
        out = super().run(*args)
        self.total_runtime_sec.append(time.perf_counter() - t0)
        return out

    def run_node(self, n):
        t0 = time.perf_counter()
        out = super().run_node(n)
        self.runtimes_sec.setdefault(n, []).append(time.perf_counter() - t0)
        return out


model = Net().eval()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
x = torch.linspace(-1, 1, 2 * 2 * 4 * 4).reshape(2, 2, 4, 4)
interp = ProfilingInterpreter(model)
for _ in range(3):
    out = interp.run(x)
print("nodes", [n.name for n in interp.runtimes_sec])
print("ops", [n.op for n in interp.runtimes_sec])
print("timed", all(len(t) == 3 and min(t) >= 0 for t in interp.runtimes_sec.values()), len(interp.total_runtime_sec))
print("out", [round(v, 4) for v in out.flatten().tolist()])
print("eager", torch.allclose(out, model(x)))
