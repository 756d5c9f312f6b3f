"""A PyTorch training script as people write them: a model, a DataLoader, checkpoints every
epoch, TensorBoard logging, resuming from the last checkpoint. Run it unmodified under ember
with ``python -m ember.compat train_with_checkpoints.py --out DIR``."""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(256, 8)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    ckpt = os.path.join(args.out, "last.pt")
    start = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start = state["epoch"] + 1
    writer = SummaryWriter(os.path.join(args.out, "runs"))
    step = start * len(loader)
    for epoch in range(start, start + args.epochs):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            writer.add_scalar("train/loss", loss.item(), step)
            step += 1
        scheduler.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(x).argmax(1) == y).float().mean().item()
        writer.add_scalar("train/accuracy", accuracy, epoch)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": epoch}, ckpt)
        print(f"epoch {epoch} loss {loss.item():.4f} accuracy {accuracy:.3f}")
    writer.close()


if __name__ == "__main__":
    main()
