"""DistributedDataParallel on 2 and 3 ranks: a few SGD steps give, on every rank, the
parameters of single-process training on the global batch from the same start."""

import re

import numpy as np
import pytest
from mpilaunch import mpirun

import ember
from ember import nn


def single_process(start, world, micro, variant="plain"):
    """The same steps in one process: the loss is the mean over ranks of the sum over
    micro-batches of each one's mean loss (what DDP's averaged, accumulated gradients follow)."""
    body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))

    def forward(x):
        return (body(x) + body(x.flip(0))) / 2 if variant.endswith("reentrant") else body(x)
    body.load_state_dict({k[len("body."):]: ember.from_numpy(v.copy()) for k, v in start.items()
                          if k.startswith("body.")})
    optimizer = ember.optim.SGD(body.parameters(), lr=0.1, momentum=0.9)
    data = np.random.default_rng(0)
    for _ in range(4):
        x = data.standard_normal((12, 4)).astype(np.float32)
        y = data.standard_normal((12, 2)).astype(np.float32)
        optimizer.zero_grad()
        total = 0
        for r in range(world):
            shard = slice(r * 12 // world, (r + 1) * 12 // world)
            for xm, ym in zip(np.array_split(x[shard], micro), np.array_split(y[shard], micro)):
                total = total + nn.functional.mse_loss(forward(ember.from_numpy(xm)), ember.from_numpy(ym))
        (total / world).backward()
        optimizer.step()
    return {f"body.{k}": v.detach().numpy() for k, v in body.state_dict().items()}


@pytest.mark.parametrize("world,micro,cap,variant", [
    (2, 1, 25, "plain"),        # one bucket
    (2, 2, 0.0001, "plain"),    # a bucket per parameter, no_sync accumulation
    (3, 1, 0.0002, "unused"),   # find_unused_parameters with a parameter the forward skips
    (2, 1, 25, "zero"),         # ZeroRedundancyOptimizer: SGD's momentum sharded across ranks
    (3, 1, 0.0001, "allreduce_hook"),
    (2, 1, 25, "fp16_compress_hook"),
    (2, 1, 25, "bf16_compress_hook"),
    (2, 2, 25, "bucket_view"),              # gradients as views of the one bucket, no_sync accumulation
    (3, 1, 0.0001, "bucket_view_hook"),     # a bucket per parameter, each GradBucket's buffer the gradients' memory
    (3, 1, 0.0002, "static"),               # static_graph with a parameter the forward skips
    (2, 2, 0.0001, "static_reentrant"),     # static_graph, parameters reached by two reentrant backwards
])
def test_ddp_equals_single_process_training(world, micro, cap, variant, tmp_path):
    done = mpirun(world, "ddp_train.py", tmp_path, micro, cap, variant)
    assert done.returncode == 0, done.stdout + done.stderr
    ranks = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(world)]
    start = {k[len("start."):]: v for k, v in ranks[0].items() if k.startswith("start.")}
    expected = single_process(start, world, micro, variant)
    for r, saved in enumerate(ranks):
        for k, v in start.items():
            np.testing.assert_array_equal(saved[f"start.{k}"], v, err_msg=f"rank {r} started from another {k}")
        for k, v in expected.items():
            # compressed gradients carry float16's / bfloat16's rounding into the parameters
            tol = {"fp16_compress_hook": 2e-3, "bf16_compress_hook": 2e-2}.get(variant, 1e-6)
            np.testing.assert_allclose(saved[f"final.{k}"], v, rtol=10 * tol, atol=tol, err_msg=f"rank {r}: {k}")
        assert not np.allclose(saved["final.body.0.weight"], start["body.0.weight"])


def test_a_parameter_without_gradient_needs_find_unused_parameters(tmp_path):
    done = mpirun(2, "ddp_train.py", tmp_path, 1, 25, "missing", timeout=60)
    assert done.returncode != 0
    assert "RuntimeError: Expected to have finished reduction in the prior iteration" in done.stderr, done.stderr
    assert "spare.weight" in done.stderr


def test_a_parameter_reached_by_two_reentrant_backwards_needs_static_graph(tmp_path):
    done = mpirun(2, "ddp_train.py", tmp_path, 1, 25, "reentrant", timeout=60)
    assert done.returncode != 0
    assert "RuntimeError: Expected to mark a variable ready only once" in done.stderr, done.stderr
    assert re.search(r"Parameter body\.[02]\.(weight|bias) has been marked as ready twice", done.stderr), done.stderr


def test_bucket_allreduces_start_while_backward_runs(tmp_path):
    """Overlap: with a bucket per parameter, all buckets but the one holding the first layer's
    parameters are handed to the communication hook before backward reaches the input."""
    done = mpirun(2, "ddp_overlap.py")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = sorted(line for line in done.stdout.splitlines() if line.startswith("rank "))
    assert len(lines) == 2, done.stdout
    for line in lines:
        events = line.split(": ")[1].split()
        buckets = [e for e in events if e.startswith("bucket")]
        assert len(buckets) == len(set(buckets)) >= 3, line
        # the input's gradient comes last in backward; buckets already sent by then overlapped it
        assert events.index("input") >= 2, line
