"""ember.distributed beside raw mpi4py, and DDP's step time beside one process.

    python benchmarks/distributed.py               # starts itself on 2 ranks through ember-run
    python benchmarks/distributed.py --nproc 3

Printed: all_reduce (float32, SUM) time and bus bandwidth of ember's all_reduce (waited on
at once, and async_op=True then wait) and of mpi4py's Allreduce on the same buffers, 4 KB to
64 MB, with the ratios (goal: at least 0.9x);
then a DDP training step of a small MLP on N ranks against one process on the same global
batch, and the overhead. Nothing is asserted.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time


def _timed(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _best_alternating(fns, repeat, rounds=5):
    """Each function's median over ``repeat`` calls, the best of ``rounds`` rounds that run
    the functions in turn (so that a noisy moment hits them all alike)."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], _timed(fn, repeat))
    return best


def _collectives(dist, MPI, ember, numpy, rank, world):
    if rank == 0:
        print(f"all_reduce (float32, SUM, in place) on {world} ranks (best of 5 rounds of the median)")
        print(f"{'size':>8} {'ember ms':>10} {'async ms':>10} {'mpi4py ms':>10} {'ember GB/s':>11} {'ratio':>6} "
              f"{'async ratio':>12}")
    comm = MPI.COMM_WORLD
    for kb in (4, 64, 1024, 16 * 1024, 64 * 1024):
        n = kb * 1024 // 4
        buf = numpy.ones(n, numpy.float32)
        t = ember.from_numpy(buf)
        repeat = 50 if kb <= 1024 else 8
        ours, later, raw = _best_alternating([lambda t=t: dist.all_reduce(t),
                                              lambda t=t: dist.all_reduce(t, async_op=True).wait(),
                                              lambda buf=buf: comm.Allreduce(MPI.IN_PLACE, buf)], repeat)
        if rank == 0:
            bus = 2 * (world - 1) / world * buf.nbytes / ours / 1e9
            print(f"{kb:>6}KB {ours * 1e3:>10.3f} {later * 1e3:>10.3f} {raw * 1e3:>10.3f} {bus:>11.2f} "
                  f"{raw / ours:>6.2f} {raw / later:>12.2f}")


def _ddp(dist, ember, rank, world):
    from ember import nn

    def model():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    batch = 64
    x, y = ember.randn(batch * world, 256), ember.randint(0, 10, (batch * world,))
    ddp = nn.parallel.DistributedDataParallel(model())
    opt = ember.optim.SGD(ddp.parameters(), lr=0.01)
    xs, ys = x[rank * batch:(rank + 1) * batch], y[rank * batch:(rank + 1) * batch]

    def step(m, o, a, b):
        o.zero_grad()
        nn.functional.cross_entropy(m(a), b).backward()
        o.step()
    distributed = _timed(lambda: step(ddp, opt, xs, ys), 20)
    dist.barrier()
    if rank == 0:
        single = model()
        sopt = ember.optim.SGD(single.parameters(), lr=0.01)
        alone = _timed(lambda: step(single, sopt, x, y), 20)
        print(f"DDP step on {world} ranks ({batch} per rank): {distributed * 1e3:.2f} ms; one process on the "
              f"global batch of {batch * world}: {alone * 1e3:.2f} ms; speed-up {alone / distributed:.2f}x")
    dist.barrier()


def main():
    if "OMPI_COMM_WORLD_SIZE" not in os.environ and "PMI_SIZE" not in os.environ:
        nproc = sys.argv[sys.argv.index("--nproc") + 1] if "--nproc" in sys.argv else "2"
        sys.exit(subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", nproc,
                                 os.path.abspath(__file__)]).returncode)
    import numpy
    from mpi4py import MPI

    import ember
    import ember.distributed as dist
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    _collectives(dist, MPI, ember, numpy, rank, world)
    _ddp(dist, ember, rank, world)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
