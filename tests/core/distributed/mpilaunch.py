"""Start a script under ``mpiexec -n N`` (Open MPI from the system) with the flags a container
needs, bounded by a timeout so that a hang fails the test instead of stopping the suite."""

import os
import pathlib
import subprocess
import sys

import ember

SCRIPTS = pathlib.Path(__file__).parent / "scripts"
# where ember is imported from, so that the ranks import the same checkout
EMBER_ROOT = str(pathlib.Path(ember.__file__).resolve().parents[1])


def rank_env(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([EMBER_ROOT, *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("OMP_NUM_THREADS", "1")
    # unbuffered, print() writes its text and its newline separately, and mpiexec interleaves
    # the ranks' writes within a line; buffered, each flush is a whole line
    env.pop("PYTHONUNBUFFERED", None)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_btl="self,vader", OMPI_MCA_btl_vader_single_copy_mechanism="none")
    env.update(extra or {})
    return env


def mpirun(n, script, *args, timeout=120, env=None):
    """Run ``scripts/<script>`` on ``n`` ranks; the finished process (stdout and stderr as text)."""
    command = ["mpiexec", "-n", str(n), sys.executable, str(SCRIPTS / script), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=rank_env(env))
