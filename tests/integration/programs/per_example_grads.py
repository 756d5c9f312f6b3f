"""Per-sample gradients with torch.func, as in PyTorch's tutorial: vmap over grad of a
functional_call, checked against one backward pass per sample, then used for
per-sample gradient clipping (the core step of DP-SGD)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.conv2(x))
        x = torch.flatten(x, 1)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


torch.manual_seed(0)
model = SimpleCNN()
data = torch.randn(16, 1, 10, 10)
targets = torch.randint(10, (16,))

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
    return F.nll_loss(predictions, target.unsqueeze(0))


per_sample = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)

worst = 0.0
for i in range(len(data)):
    model.zero_grad()
    F.nll_loss(model(data[i:i + 1]), targets[i:i + 1]).backward()
    for name, p in model.named_parameters():
        worst = max(worst, (per_sample[name][i] - p.grad).abs().max().item())
print(f"shapes {sorted((k, tuple(v.shape)) for k, v in per_sample.items())}")
print(f"max difference from the per-sample loop {worst:.2e}")

# DP-SGD's clipping: each sample's gradient scaled to norm at most 1, then averaged
norms = torch.stack([g.flatten(1).norm(dim=1) for g in per_sample.values()]).norm(dim=0)
factor = (1.0 / (norms + 1e-6)).clamp(max=1.0)
clipped = {k: (g * factor.view(-1, *([1] * (g.dim() - 1)))).mean(0) for k, g in per_sample.items()}
print(f"clipped norms <= 1: {bool((norms * factor <= 1 + 1e-5).all())}; mean norm {norms.mean().item():.3f}")
