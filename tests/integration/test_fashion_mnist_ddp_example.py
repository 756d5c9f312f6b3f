"""examples/distributed/fashion_mnist_ddp.py on 2 ranks through the launcher (ember-run), on
generated IDX files: both ranks train, rank 0 evaluates and saves weights PyTorch opens."""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from ember_vision.datasets.idx import write_idx

pytest.importorskip("mpi4py", reason="ember.distributed runs on mpi4py (the integration session installs it)")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_ddp_example_trains_on_two_ranks_through_the_launcher(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 256), ("t10k", 100)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = (rng.integers(0, 40, (n, 28, 28)) + labels[:, None, None] * 20).astype(np.uint8)
        write_idx(source / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(source / f"{prefix}-labels-idx1-ubyte.gz", labels)
    out = tmp_path / "weights.pt"
    done = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2",
                           str(ROOT / "examples" / "distributed" / "fashion_mnist_ddp.py"),
                           "--data-dir", str(tmp_path / "data"), "--source-dir", str(source), "--epochs", "1",
                           "--batch-size", "32", "--limit-batches", "8", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^2 ranks: test accuracy \d+\.\d\d% after", done.stdout, re.M), done.stdout
    state = torch.load(out, weights_only=True)
    assert list(state)[:2] == ["features.0.weight", "features.0.bias"]
    assert state["classifier.3.weight"].shape == (10, 128)
