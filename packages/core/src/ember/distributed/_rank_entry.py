"""What ember-run's mpiexec starts on every rank: torchrun's variables from MPI's, then the
user's script as ``__main__`` (or a module with -m, or a program with --no-python)."""

from __future__ import annotations

import os
import runpy
import sys


def _first(*names, default=None):
    for n in names:
        if n in os.environ:
            return os.environ[n]
    return default


def rank_variables() -> dict:
    """RANK and friends from the launcher's own variables (Open MPI, MPICH/Hydra, PMIx)."""
    rank = _first("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", default="0")
    size = _first("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", default="1")
    local = _first("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", default=rank)
    local_size = _first("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", default=size)
    node = str(int(rank) // max(int(local_size), 1))
    return {"RANK": rank, "WORLD_SIZE": size, "LOCAL_RANK": local, "LOCAL_WORLD_SIZE": local_size,
            "ROLE_RANK": rank, "ROLE_WORLD_SIZE": size, "GROUP_RANK": node, "ROLE_NAME": "default",
            "GROUP_WORLD_SIZE": str(int(size) // max(int(local_size), 1))}


def main(argv) -> None:
    os.environ.update(rank_variables())
    from ._mpi import set_open_mpi_defaults
    set_open_mpi_defaults()  # before the script, which may start MPI by importing mpi4py itself
    mode = "script"
    if argv and argv[0] in ("-m", "--no-python"):
        mode, argv = argv[0], argv[1:]
    if mode == "--no-python":
        os.execvp(argv[0], argv)
    sys.argv = list(argv)
    if mode == "-m":
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
