"""A training script in today's PyTorch style: the model compiled with torch.compile, a
compiled evaluation function with a data-dependent branch, torch._dynamo.explain on it, and
a jit-traced copy for export. Prints the losses, the accuracy and what explain reports."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(256, 8)
y = (x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 1).long()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.norm, self.fc2 = nn.Linear(8, 32), nn.LayerNorm(32), nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


model = Net()
compiled = torch.compile(model)
opt = torch.optim.AdamW(compiled.parameters(), lr=1e-2)


@torch.compile
def train_step(xb, yb):
    loss = F.cross_entropy(compiled(xb), yb)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


@torch.compile
def accuracy(xb, yb):
    correct = (compiled(xb).argmax(1) == yb).float().mean()
    if correct > 0.5:  # a graph break: the branch depends on a tensor's value
        return correct
    return correct * 0


losses = []
for _ in range(8):
    for i in range(0, 256, 32):
        losses.append(train_step(x[i:i + 32], y[i:i + 32]).item())
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
print(f"accuracy {accuracy(x, y).item():.4f}")
report = torch._dynamo.explain(accuracy)(x, y)
print(f"explain graphs {report.graph_count} breaks {report.graph_break_count}")
traced = torch.jit.trace(model.eval(), x[:4])
print(f"traced matches {torch.allclose(traced(x[:4]), model(x[:4]))}")
