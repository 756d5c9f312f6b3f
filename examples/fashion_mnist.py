"""Train a small CNN on Fashion-MNIST with ember, save it, reload it, check it.

    python examples/fashion_mnist.py                 # 2 epochs, about 91% test accuracy
    python examples/fashion_mnist.py --limit-batches 20 --epochs 1   # a quick slice

Written against PyTorch's API: with ``ember`` replaced by ``torch`` and ``ember_vision`` by
``torchvision`` in its imports it runs unchanged on PyTorch.

The data is read from ``--data-dir`` in torchvision's layout
(``<data-dir>/FashionMNIST/raw/*-ubyte.gz``); ``--source-dir`` copies the original IDX
files from a local folder first (Debian's ``dataset-fashion-mnist`` installs them in
/usr/share/datasets/fashion-mnist), otherwise they are downloaded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

from tqdm import tqdm

import ember as torch
import ember_vision as torchvision
from ember import nn
from ember.nn import functional as F
from ember.utils.data import DataLoader

MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training-set pixel mean and std (in [0, 1])


class FashionCNN(nn.Module):
    """conv(1->32, 3x3, pad 1) - ReLU - maxpool 2 - conv(32->64, 3x3, pad 1) - ReLU - maxpool 2
    - linear(3136->128) - ReLU - linear(128->10). Input ``[N, 1, 28, 28]``, output logits
    ``[N, 10]``."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def prepare_data(data_dir: str, source_dir: str | None) -> None:
    """Copy the IDX files from ``source_dir`` into torchvision's layout when given."""
    if not source_dir:
        return
    raw = os.path.join(data_dir, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name in os.listdir(source_dir):
        if "ubyte" in name and not os.path.exists(os.path.join(raw, name)):
            tmp = os.path.join(raw, name + ".part")
            shutil.copyfile(os.path.join(source_dir, name), tmp)
            os.replace(tmp, os.path.join(raw, name))


def evaluate(model, loader, limit_batches: int | None = None) -> float:
    """Accuracy of ``model`` on ``loader`` in percent."""
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for i, (x, y) in enumerate(loader):
            if limit_batches is not None and i >= limit_batches:
                break
            correct += (model(x).argmax(1) == y).sum().item()
            total += y.numel()
    return 100.0 * correct / max(total, 1)


def main(argv=None) -> float:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data-dir", default="data", help="root holding FashionMNIST/raw")
    p.add_argument("--source-dir", default=None, help="folder with the original *-ubyte.gz files to copy from")
    p.add_argument("--epochs", type=int, default=2, help="passes over the 60,000 training images")
    p.add_argument("--batch-size", type=int, default=64, help="training images per step")
    p.add_argument("--lr", type=float, default=2e-3, help="Adam's initial learning rate, cosine-annealed to 0")
    p.add_argument("--out", default="fashion_mnist_cnn.pt", help="where the trained weights are saved")
    p.add_argument("--limit-batches", type=int, default=None,
                   help="train on this many batches per epoch and test on a tenth as many (at least one)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial weights and the shuffling")
    args = p.parse_args(argv)

    start = time.perf_counter()
    prepare_data(args.data_dir, args.source_dir)
    tf = torchvision.transforms.Compose([torchvision.transforms.ToTensor(),
                                         torchvision.transforms.Normalize((MEAN,), (STD,))])
    download = args.source_dir is None
    try:
        train_set = torchvision.datasets.FashionMNIST(args.data_dir, train=True, transform=tf, download=download)
        test_set = torchvision.datasets.FashionMNIST(args.data_dir, train=False, transform=tf, download=download)
    except RuntimeError as e:
        raise SystemExit(f"{e}\n\nNo Fashion-MNIST files: pass --source-dir with a folder holding the original "
                         "*-ubyte.gz files (on Debian: apt-get install dataset-fashion-mnist, then "
                         "--source-dir /usr/share/datasets/fashion-mnist), "
                         "or run where the download can reach the network.") from None
    print(f"data: {len(train_set)} training and {len(test_set)} test images "
          f"(prepared in {time.perf_counter() - start:.1f} s)")

    torch.manual_seed(args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=1000)
    model = FashionCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    n_batches = len(train_loader) if args.limit_batches is None else min(args.limit_batches, len(train_loader))
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * n_batches)

    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        bar = tqdm(train_loader, total=n_batches, desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch")
        for i, (x, y) in enumerate(bar):
            if i >= n_batches:
                break
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            if i % 20 == 0:
                bar.set_postfix(loss=f"{loss.item():.4f}")
        bar.close()
    eval_batches = None if args.limit_batches is None else max(1, args.limit_batches // 10)
    accuracy = evaluate(model, test_loader, eval_batches)
    elapsed = time.perf_counter() - start
    print(f"test accuracy: {accuracy:.2f}%")
    print(f"training and evaluation took {elapsed:.1f} s")

    torch.save(model.state_dict(), args.out)
    fresh = FashionCNN()
    fresh.load_state_dict(torch.load(args.out, weights_only=True))
    reloaded = evaluate(fresh, test_loader, eval_batches)
    print(f"reloaded from {args.out}: test accuracy: {reloaded:.2f}%")
    if reloaded != accuracy:
        raise SystemExit(f"the reloaded model scores {reloaded:.2f}%, not {accuracy:.2f}%")
    return accuracy


if __name__ == "__main__":
    main()
