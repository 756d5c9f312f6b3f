"""DistributedSampler without num_replicas and rank reads them from the default process
group, as torch's does: on 2 and 3 MPI ranks each yields the share torch's sampler gives that rank."""

import pytest
import torch.utils.data.distributed as torch_distributed
from mpilaunch import mpirun


@pytest.mark.parametrize("world", [2, 3])
def test_sampler_takes_world_size_and_rank_from_the_group(world):
    done = mpirun(world, "sampler.py", timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = sorted(line for line in done.stdout.splitlines() if line.count("|") == 2)
    assert len(lines) == world, done.stdout
    for rank, line in enumerate(lines):
        expected = torch_distributed.DistributedSampler(range(11), num_replicas=world, rank=rank, shuffle=False)
        assert line == f"{world}|{rank}|{list(expected)}"
