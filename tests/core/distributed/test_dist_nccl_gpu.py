"""NCCL on two GPUs: every collective of ``scripts/nccl_collectives.py`` on cuda tensors in a
"nccl" group under ``mpiexec -n 2``, sync and async, against the numpy references of the
MPI tests, and a DDP step on cuda parameters against the averaged gradient computed here.
Runs where cupy has NCCL and ``ember.cuda.device_count() >= 2`` (NCCL refuses two ranks on
one device)."""

import functools
import importlib.util

import numpy as np
import pytest
from mpilaunch import SCRIPTS, mpirun
from test_dist_collectives import expectations

import ember
import ember.distributed as dist

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not dist.is_nccl_available() or ember.cuda.device_count() < 2,
                                 reason="needs cupy with NCCL and two CUDA GPUs")]

spec = importlib.util.spec_from_file_location("dist_data", SCRIPTS / "data.py")
data = importlib.util.module_from_spec(spec)
spec.loader.exec_module(data)


@functools.cache
def launched(mode, tmp):
    done = mpirun(2, "nccl_collectives.py", tmp, mode, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return [dict(np.load(f"{tmp}/rank{r}.npz")) for r in range(2)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_nccl_collectives_match_numpy(mode, tmp_path):
    results = launched(mode, str(tmp_path))
    expected_all = list(expectations(2, data.NCCL_DTYPES, data.nccl_ops))
    for rank, key, expected in expected_all:
        np.testing.assert_array_equal(results[rank][key], data.plain(np.asarray(expected)),
                                      err_msg=f"rank {rank}: {key}")
    assert len(expected_all) > 500


def test_ddp_on_cuda_parameters_averages_over_nccl(tmp_path):
    results = launched("sync", str(tmp_path))
    w, b = results[0]["ddp-weight"], results[0]["ddp-bias"]
    grads_w, grads_b = [], []
    for r in range(2):
        np.testing.assert_array_equal(results[r]["ddp-weight"], w)  # rank 0's parameters everywhere
        x = data.make(r, "float32", (5, 4), salt=6).astype(np.float64)
        y = x @ w.T + b
        grads_w.append(2 * y.T @ x)
        grads_b.append(2 * y.sum(0))
    for r in range(2):
        np.testing.assert_allclose(results[r]["ddp-weight-grad"], np.mean(grads_w, 0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(results[r]["ddp-bias-grad"], np.mean(grads_b, 0), rtol=1e-5, atol=1e-5)
