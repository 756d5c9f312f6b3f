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
from test_dist_collectives import reference

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
    results, world = launched(mode, str(tmp_path)), 2
    checked = 0

    def same(rank, key, expected):
        nonlocal checked
        expected = data.plain(np.asarray(expected))
        np.testing.assert_array_equal(results[rank][key], expected, err_msg=f"rank {rank}: {key}")
        checked += 1

    for dtype in [d for d in data.DTYPES if d != "bfloat16"]:
        for shape in data.SHAPES:
            key = f"{dtype}-{'x'.join(map(str, shape))}"
            xs = [data.make(r, dtype, shape) for r in range(world)]
            ops = [op for op in data.ops_for(dtype) if op not in ("BAND", "BOR", "BXOR")]
            for op in ops if not dtype.startswith("complex") else [o for o in ops if o != "PRODUCT"]:
                expected = reference(op, xs, dtype)
                for r in range(world):
                    same(r, f"all_reduce-{op}-{key}", expected)
                    same(r, f"reduce-{op}-{key}", expected if r == world - 1 else xs[r])
            blocks = [data.make(r, dtype, (world, *shape), salt=1) for r in range(world)]
            for r in range(world):
                same(r, f"broadcast-{key}", xs[1])
                same(r, f"all_gather-{key}", np.stack(xs))
                same(r, f"all_gather_into_tensor-{key}", np.stack(xs))
                if dtype != "bool":
                    same(r, f"reduce_scatter_tensor-{key}", reference("SUM", [b[r] for b in blocks], dtype))
                    same(r, f"reduce_scatter-{key}", reference("SUM", [b[r] for b in blocks], dtype))
                same(r, f"scatter-{key}", data.make(r, dtype, shape, salt=2))
                same(r, f"ring-{key}", xs[(r - 1) % world])
            same(0, f"gather-{key}", np.stack(xs))
    rows = [data.make(r, "int64", (world * 2, 3), salt=3) for r in range(world)]
    for r in range(world):
        same(r, "all_to_all_single", np.concatenate([rows[s][2 * r:2 * r + 2] for s in range(world)]))
        same(r, "all_to_all", np.stack([data.make(s, "int64", (2, 3), salt=4 + r) for s in range(world)]))
    assert checked > 500


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
