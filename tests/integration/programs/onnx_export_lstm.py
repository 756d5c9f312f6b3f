"""Train a small LSTM tagger for a few steps, then export it with torch.onnx.export (the
legacy exporter's arguments: dynamo=False, a dynamic batch and sequence length) and keep
sample token batches of two shapes and the model's outputs on them beside the file."""

import argparse
import os

import numpy as np
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, vocab=200, tags=7):
        super().__init__()
        self.embed = nn.Embedding(vocab, 24)
        self.lstm = nn.LSTM(24, 32, num_layers=2, batch_first=True, bidirectional=True, dropout=0.1)
        self.head = nn.Linear(64, tags)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out).log_softmax(-1)


parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
args = parser.parse_args()
torch.manual_seed(0)
model = Tagger()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
tokens, tags = torch.randint(0, 200, (16, 10)), torch.randint(0, 7, (16, 10))
for _step in range(5):
    optimizer.zero_grad()
    loss = nn.functional.nll_loss(model(tokens).reshape(-1, 7), tags.reshape(-1))
    loss.backward()
    optimizer.step()
model.eval()
sample = torch.randint(0, 200, (2, 10))
path = os.path.join(args.out, "tagger.onnx")
axes = {0: "batch", 1: "seq"}
torch.onnx.export(model, (sample,), path, input_names=["tokens"], output_names=["log_probs"], dynamo=False,
                  dynamic_axes={"tokens": axes, "log_probs": axes})
other = torch.randint(0, 200, (3, 17))
with torch.no_grad():
    for name, batch in (("sample", sample), ("other", other)):
        np.save(os.path.join(args.out, f"{name}.npy"), batch.numpy())
        np.save(os.path.join(args.out, f"{name}_expected.npy"), model(batch).numpy())
print(f"exported to {path}")
