"""Every collective on 2 and 3 MPI ranks, sync and async, and isend/irecv, against numpy
references built here from the same inputs (scripts/data.py) the ranks used."""

import functools
import importlib.util

import numpy as np
import pytest
from mpilaunch import SCRIPTS, mpirun

spec = importlib.util.spec_from_file_location("dist_data", SCRIPTS / "data.py")
data = importlib.util.module_from_spec(spec)
spec.loader.exec_module(data)


def reference(op, xs, dtype):
    world = len(xs)
    if dtype == "bool":
        stack = np.stack(xs)
        if op in ("SUM", "MAX", "BOR"):
            return stack.any(0)
        if op in ("PRODUCT", "MIN", "BAND"):
            return stack.all(0)
        return np.bitwise_xor.reduce(stack, 0)
    wide = np.stack([x.astype(np.complex128 if dtype.startswith("complex") else
                              np.int64 if dtype.startswith("int") else np.float64) for x in xs])
    # the dtype the ranks divide in for AVG (float16 and bfloat16 are reduced in float32)
    acc = np.float32 if dtype in ("float16", "bfloat16") else data.np_dtype(dtype)
    value = {"SUM": lambda: wide.sum(0), "PRODUCT": lambda: wide.prod(0), "MIN": lambda: wide.min(0),
             "MAX": lambda: wide.max(0), "PREMUL_SUM": lambda: (wide * 0.5).sum(0),
             "AVG": lambda: wide.sum(0) // world if dtype.startswith("int") else wide.sum(0).astype(acc) / world,
             "BAND": lambda: np.bitwise_and.reduce(wide, 0), "BOR": lambda: np.bitwise_or.reduce(wide, 0),
             "BXOR": lambda: np.bitwise_xor.reduce(wide, 0)}[op]()
    return np.asarray(value).astype(data.np_dtype(dtype))


@functools.cache
def launched(world, mode, tmp):
    done = mpirun(world, "collectives.py", tmp, mode)
    assert done.returncode == 0, done.stdout + done.stderr
    return [dict(np.load(f"{tmp}/rank{r}.npz")) for r in range(world)]


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_collectives_match_numpy(world, mode, tmp_path):
    results = launched(world, mode, str(tmp_path))
    plain = data.plain
    checked = 0

    def same(rank, key, expected):
        nonlocal checked
        got = results[rank][key]
        np.testing.assert_array_equal(got, plain(np.asarray(expected)), err_msg=f"rank {rank}: {key}")
        assert got.dtype == plain(np.asarray(expected)).dtype, key
        checked += 1

    for dtype in data.DTYPES:
        for shape in data.SHAPES:
            key = f"{dtype}-{'x'.join(map(str, shape))}"
            xs = [data.make(r, dtype, shape) for r in range(world)]
            for op in data.ops_for(dtype):
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
            assert all(f"gather-{key}" not in results[r] for r in range(1, world))
    rows = [data.make(r, "int64", (world * 2, 3), salt=3) for r in range(world)]
    for r in range(world):
        same(r, "all_to_all_single", np.concatenate([rows[s][2 * r:2 * r + 2] for s in range(world)]))
        same(r, "all_to_all", np.stack([data.make(s, "int64", (2, 3), salt=4 + r) for s in range(world)]))
        same(r, "isend_irecv", data.make((r - 1) % world, "float32", (4,), salt=5))
    assert checked > 500
