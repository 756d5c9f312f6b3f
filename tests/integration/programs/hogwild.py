"""Hogwild training in the style of PyTorch's mnist_hogwild example: one model in shared
memory, several processes taking optimizer steps on it at once, without locks; the parent
then evaluates the model it never trained itself."""

import argparse

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def blobs(n, seed):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randint(0, 2, (n, 2), generator=g).float() * 2 - 1  # four clusters; XOR labels
    points = centers * 1.5 + torch.randn(n, 2, generator=g) * 0.5
    return TensorDataset(points, (centers[:, 0] * centers[:, 1] > 0).long())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return F.log_softmax(self.fc2(torch.relu(self.fc1(x))), dim=1)


def train(rank, args, model):
    torch.manual_seed(args.seed + rank)
    data = blobs(512, args.seed)
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data, args.num_processes, rank))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            F.nll_loss(model(x), y).backward()
            optimizer.step()


def accuracy(model):
    x, y = blobs(400, 99).tensors
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-processes", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    mp.set_start_method("spawn", force=True)
    torch.manual_seed(args.seed)
    model = Net()
    model.share_memory()  # gradients are allocated lazily, per process
    before = accuracy(model)
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    print(f"exit codes {[p.exitcode for p in processes]}")
    print(f"accuracy {before:.3f} -> {accuracy(model):.3f}")
