"""The generic Join (ember.distributed.algorithms) on 2 and 3 ranks with uneven inputs:
a joinable of the test's own against hand-derived sums, DDP alone and DDP with
ZeroRedundancyOptimizer against single-process training, divide_by_initial_world_size=False
and throw_on_early_termination=True."""

import numpy as np
import pytest
from mpilaunch import mpirun

import ember
from ember import nn


@pytest.mark.parametrize("world", [2, 3])
def test_generic_join_shadows_the_joined_ranks(world, tmp_path):
    done = mpirun(world, "join_generic.py", tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    longest = 2 + world - 1
    for r in range(world):
        lines = (tmp_path / f"rank{r}.txt").read_text().splitlines()
        # iteration i sums r + 1 over the ranks that still have an iteration i (the others add 0)
        sums = [f"sum {i} {sum(q + 1 for q in range(world) if i < 2 + q):g}" for i in range(2 + r)]
        assert lines[:2 + r] == sums, lines
        assert lines[2 + r] == f"last {r == world - 1}"
        assert lines[3 + r] == f"shadowed {longest - (2 + r)}"
        assert lines[4 + r] == f"even {world * (world + 1) // 2:g}"
        assert lines[5 + r] == "empty The join context manager requires at least one joinable"


def single_process(start, world, steps, effective):
    """Step t averages the gradients of the ranks that still have a batch t: over the whole
    world, or over those ranks (``effective``)."""
    body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    body.load_state_dict({k: ember.from_numpy(v.copy()) for k, v in start.items()})
    optimizer = ember.optim.SGD(body.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        optimizer.zero_grad()
        total, active = 0, 0
        for r in range(world):
            if step < 3 + 2 * r:
                data = np.random.default_rng([step, r])
                x, y = data.standard_normal((4, 4)).astype(np.float32), data.standard_normal((4, 2)).astype(np.float32)
                total = total + nn.functional.mse_loss(body(ember.from_numpy(x)), ember.from_numpy(y))
                active += 1
        (total / (active if effective else world)).backward()
        optimizer.step()
    return {k: v.detach().numpy() for k, v in body.state_dict().items()}


@pytest.mark.parametrize("world,variant", [(2, "ddp"), (3, "ddp"), (2, "zero"), (3, "zero"), (3, "effective"),
                                           (3, "throw")])
def test_ddp_join_with_uneven_inputs(world, variant, tmp_path):
    """Rank r has 3 + 2r batches; every rank ends with the model single-process training
    reaches (with "throw", after the 3 steps every rank finished before the first ran out)."""
    done = mpirun(world, "ddp_join.py", tmp_path, variant, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    ranks = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(world)]
    start = {k[len("start."):]: v for k, v in ranks[0].items() if k.startswith("start.")}
    steps = 3 if variant == "throw" else 3 + 2 * (world - 1)
    expected = single_process(start, world, steps, effective=variant == "effective")
    for r, saved in enumerate(ranks):
        assert int(saved["steps"]) == (3 if variant == "throw" else 3 + 2 * r)
        for k, v in expected.items():
            np.testing.assert_allclose(saved[f"final.{k}"], v, rtol=1e-5, atol=1e-6, err_msg=f"rank {r}: {k}")
    if variant == "throw":
        assert (tmp_path / "rank0.txt").read_text() == "Rank 0 exhausted all inputs.\n"
        for r in range(1, world):
            assert (tmp_path / f"rank{r}.txt").read_text() == ("Detected at least one rank that exhausted inputs. "
                                                               "Throwing across all ranks.\n")
    else:
        assert not any((tmp_path / f"rank{r}.txt").exists() for r in range(world))
    if variant == "effective":  # the two divisions give models the comparison can tell apart
        initial = single_process(start, world, steps, effective=False)
        assert not np.allclose(ranks[0]["final.0.weight"], initial["0.weight"], rtol=1e-4, atol=1e-5)

