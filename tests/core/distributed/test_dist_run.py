"""The launcher: ``python -m ember.distributed.run`` (ember-run) starts one MPI world with
torchrun's variables, the container flags and OMP_NUM_THREADS=1, also through a hostfile."""

import re
import subprocess
import sys

import pytest
from mpilaunch import SCRIPTS, rank_env

# the thread counts the launcher sets to 1 unless they are set
THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def launch(*flags, timeout=120):
    # without the Open MPI variables the tests' own launches set: the launcher must pass them itself
    env = {k: v for k, v in rank_env().items() if not k.startswith("OMPI_") and k not in THREADS}
    command = [sys.executable, "-m", "ember.distributed.run", *flags, str(SCRIPTS / "launched.py"), "a", "--b"]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("how", ["flags", "hostfile"])
def test_launcher_sets_torchruns_variables(how, tmp_path):
    if how == "flags":
        done = launch("--nproc-per-node", "3", "--nnodes", "1", "--master_port", "29511")
    else:
        hosts = tmp_path / "hosts"
        hosts.write_text("localhost slots=3\n")
        done = launch("--nproc_per_node=3", "--hostfile", str(hosts), "--master-port", "29511")
    assert done.returncode == 0, done.stdout + done.stderr
    # mpiexec merges the ranks' stdout: a line and its newline may arrive apart, so find the records
    # OMP_NUM_THREADS and the BLAS thread counts 1
    lines = sorted(re.findall(r"\d+\|3\|\d+\|3\|127\.0\.0\.1\|29511\|1\|1\|1\|True\|3\.0\|a\|--b", done.stdout))
    assert lines == [f"{r}|3|{r}|3|127.0.0.1|29511|1|1|1|True|3.0|a|--b" for r in range(3)], done.stdout
    assert "OMP_NUM_THREADS=1" in done.stderr


def test_launcher_keeps_the_users_thread_count_and_passes_exit_codes(tmp_path):
    env = {**{k: v for k, v in rank_env().items() if not k.startswith("OMPI_")}, "OMP_NUM_THREADS": "2"}
    script = tmp_path / "fails.py"
    script.write_text("import os, sys\nprint(os.environ['OMP_NUM_THREADS'])\nsys.exit(3)\n")
    done = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", str(script)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.stdout.split() == ["2", "2"] and done.returncode != 0
    assert "OMP_NUM_THREADS=1" not in done.stderr


def test_launcher_refuses_elastic_flags():
    for flags in (["--nnodes", "2"], ["--max-restarts", "3"]):
        done = launch(*flags, "--nproc-per-node", "2", timeout=60)
        assert done.returncode != 0 and "ember-run:" in done.stderr


def test_a_pytorch_ddp_script_runs_unmodified_through_the_launcher_and_compat(tmp_path):
    import pathlib

    import torch
    program = pathlib.Path(__file__).parents[2] / "integration" / "programs" / "ddp_ready.py"
    env = {k: v for k, v in rank_env().items() if not k.startswith("OMPI_")}
    env["OUT"] = str(tmp_path / "model.pt")
    done = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", "-m",
                           "ember.compat", str(program)], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("rank 0 of 2 on cpu"), done.stdout
    state = torch.load(tmp_path / "model.pt", weights_only=True)
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_the_installed_ember_run_console_script(tmp_path):
    """The ``ember-run`` entry point pip installs next to the interpreter, called directly."""
    import pathlib
    script = pathlib.Path(sys.executable).parent / "ember-run"
    assert script.is_file(), f"{script} is missing: install ember-core (pip install -e packages/core)"
    env = {k: v for k, v in rank_env().items() if not k.startswith("OMPI_") and k not in THREADS}
    done = subprocess.run([str(script), "--nproc-per-node", "2", "--master-port", "29512", str(SCRIPTS / "launched.py"),
                           "a", "--b"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = sorted(re.findall(r"\d+\|2\|\d+\|2\|127\.0\.0\.1\|29512\|1\|1\|1\|True\|1\.0\|a\|--b", done.stdout))
    assert lines == [f"{r}|2|{r}|2|127.0.0.1|29512|1|1|1|True|1.0|a|--b" for r in range(2)], done.stdout


def test_ranks_start_mpi_with_embers_open_mpi_parameters_unless_set(tmp_path):
    """async all_reduce's algorithm (libnbc's ring): set by ember-run's ranks before the script
    (which here starts MPI itself, through mpi4py), and by ember before it starts MPI under a
    plain mpiexec; a value in the environment is kept."""
    from mpilaunch import mpirun
    script = tmp_path / "parameters.py"
    script.write_text("import os, sys\n"
                      "if sys.argv[1] == 'mpi4py':\n    from mpi4py import MPI\n"
                      "else:\n    import ember.distributed as dist\n    dist.init_process_group('mpi')\n"
                      "print('algorithm', os.environ.get('OMPI_MCA_coll_libnbc_iallreduce_algorithm'))\n")
    env = {k: v for k, v in rank_env().items() if not k.startswith("OMPI_")}
    done = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2", str(script),
                           "mpi4py"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split().count("algorithm") == 2 and done.stdout.split().count("1") == 2, done.stdout
    done = mpirun(2, str(script), "ember")  # an absolute path: the helper's folder does not apply
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split().count("1") == 2, done.stdout
    done = mpirun(2, str(script), "ember", env={"OMPI_MCA_coll_libnbc_iallreduce_algorithm": "2"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split().count("2") == 2 and "1" not in done.stdout.split(), done.stdout
