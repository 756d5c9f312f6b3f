"""The one place that imports mpi4py: MPI is initialised on first use, never at
``import ember``, and only inside a launch (a singleton MPI start outside ``mpiexec``
would hide the user's mistake of running a multi-process script as one process)."""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback

__all__ = ["available", "launched_by_mpi", "mpi", "install_abort_hook", "set_open_mpi_defaults"]

# Variables a process started by an MPI launcher finds: Open MPI, MPICH/Hydra, PMIx (srun --mpi=pmix).
_LAUNCH_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS")

LAUNCH_HINT = ("start the processes with `ember-run --nproc-per-node N script.py` (or "
               "`python -m ember.distributed.run ...`, or `mpiexec -n N python script.py`)")


def available() -> bool:
    """Whether mpi4py can be imported (without importing it, which would start MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def launched_by_mpi() -> bool:
    return any(v in os.environ for v in _LAUNCH_VARIABLES)


# Open MPI's parameters ember sets before MPI starts, unless the environment sets them:
# MPI_Iallreduce (all_reduce with async_op=True, DDP's buckets) on libnbc's ring. libnbc's own
# choice for fewer than 4 ranks, or an in-place buffer (ember's always is), is a binomial
# reduce to rank 0 and broadcast back: two hops in turn, 0.3 to 0.75 times the speed of the
# blocking MPI_Allreduce on 2 ranks from 4 KB to 16 MB; the ring (each rank reduces a slice,
# then the slices go round) runs at 0.8 to 1.0 times it (benchmarks/NOTES.md).
# MPICH reads none of these.
_OPEN_MPI_DEFAULTS = {"OMPI_MCA_coll_libnbc_iallreduce_algorithm": "1"}


def set_open_mpi_defaults() -> None:
    """Put ember's Open MPI parameters in this process's environment where it has none of
    its own; effective only before MPI starts (ember-run's ranks call it before the script,
    which may import mpi4py itself; ``mpi()`` calls it too)."""
    for name, value in _OPEN_MPI_DEFAULTS.items():
        os.environ.setdefault(name, value)


_MPI = None


def mpi():
    """mpi4py's MPI module (MPI_Init_thread runs on the first call)."""
    global _MPI
    # kept after the first call: every collective asks for it, and an import statement
    # costs about a microsecond even when the module is loaded
    if _MPI is None:
        if "mpi4py.MPI" not in sys.modules:  # MPI reads its parameters once, as it starts
            set_open_mpi_defaults()
        from mpi4py import MPI
        _MPI = MPI
    return _MPI


_hook_installed = False


def install_abort_hook(rank: int) -> None:
    """Make an uncaught exception on one rank end the whole job: print the traceback with
    the rank, then MPI_Abort, so that the other ranks do not wait in their next collective
    until the timeout."""
    global _hook_installed
    if _hook_installed:
        return
    _hook_installed = True
    previous = sys.excepthook

    def hook(kind, value, tb):
        try:
            text = "".join(traceback.format_exception(kind, value, tb))
            sys.stderr.write(f"[rank {rank}] uncaught exception, aborting the MPI job:\n{text}")
            sys.stderr.flush()
            sys.stdout.flush()
        finally:
            if issubclass(kind, (KeyboardInterrupt, SystemExit)):
                previous(kind, value, tb)
            mpi().COMM_WORLD.Abort(1)

    sys.excepthook = hook
