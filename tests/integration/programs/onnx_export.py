"""Train a small CNN for a few steps, then export it for deployment with torch.onnx.export
(input/output names, an opset, the weights in the file, a dynamic batch) and keep two
sample inputs of different batch sizes and the model's outputs on them beside the file."""

import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)
        self.fc = nn.Linear(16 * 6 * 6, 10)
        self.dropout = nn.Dropout(0.25)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.conv2(x))
        x = self.dropout(torch.flatten(x, 1))
        return F.log_softmax(self.fc(x), dim=1)


parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
args = parser.parse_args()
torch.manual_seed(0)
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
images, labels = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
for _step in range(5):
    optimizer.zero_grad()
    loss = F.nll_loss(model(images), labels)
    loss.backward()
    optimizer.step()
model.eval()
sample = torch.randn(3, 1, 28, 28)
path = os.path.join(args.out, "net.onnx")
torch.onnx.export(model, (sample,), path, input_names=["image"], output_names=["log_probs"], opset_version=18,
                  external_data=False, dynamic_axes={"image": {0: "batch"}, "log_probs": {0: "batch"}})
other = torch.randn(5, 1, 28, 28)
with torch.no_grad():
    np.save(os.path.join(args.out, "sample.npy"), sample.numpy())
    np.save(os.path.join(args.out, "expected.npy"), model(sample).numpy())
    np.save(os.path.join(args.out, "other.npy"), other.numpy())
    np.save(os.path.join(args.out, "other_expected.npy"), model(other).numpy())
print(f"exported to {path}, in onnx export {torch.onnx.is_in_onnx_export()}")
