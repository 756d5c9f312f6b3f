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


def expectations(world, dtypes=data.DTYPES, ops=data.ops_for):
    """``(rank, key, expected)`` for every result ``scripts/collectives.py`` (and its NCCL
    twin) saves, from the same inputs the ranks made; ``ops(dtype)``: the reductions run."""
    for dtype in dtypes:
        for shape in data.SHAPES:
            key = f"{dtype}-{'x'.join(map(str, shape))}"
            xs = [data.make(r, dtype, shape) for r in range(world)]
            for op in ops(dtype):
                expected = reference(op, xs, dtype)
                for r in range(world):
                    yield r, f"all_reduce-{op}-{key}", expected
                    yield r, f"reduce-{op}-{key}", expected if r == world - 1 else xs[r]
            blocks = [data.make(r, dtype, (world, *shape), salt=1) for r in range(world)]
            for r in range(world):
                yield r, f"broadcast-{key}", xs[1]
                yield r, f"all_gather-{key}", np.stack(xs)
                yield r, f"all_gather_into_tensor-{key}", np.stack(xs)
                if dtype != "bool":
                    yield r, f"reduce_scatter_tensor-{key}", reference("SUM", [b[r] for b in blocks], dtype)
                    yield r, f"reduce_scatter-{key}", reference("SUM", [b[r] for b in blocks], dtype)
                yield r, f"scatter-{key}", data.make(r, dtype, shape, salt=2)
                yield r, f"ring-{key}", xs[(r - 1) % world]
            yield 0, f"gather-{key}", np.stack(xs)
    rows = [data.make(r, "int64", (world * 2, 3), salt=3) for r in range(world)]
    for r in range(world):
        yield r, "all_to_all_single", np.concatenate([rows[s][2 * r:2 * r + 2] for s in range(world)])
        yield r, "all_to_all", np.stack([data.make(s, "int64", (2, 3), salt=4 + r) for s in range(world)])


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_collectives_match_numpy(world, mode, tmp_path):
    results = launched(world, mode, str(tmp_path))
    expected_all = list(expectations(world))
    expected_all += [(r, "isend_irecv", data.make((r - 1) % world, "float32", (4,), salt=5)) for r in range(world)]
    for rank, key, expected in expected_all:
        got, want = results[rank][key], data.plain(np.asarray(expected))
        np.testing.assert_array_equal(got, want, err_msg=f"rank {rank}: {key}")
        assert got.dtype == want.dtype, key
    gathered = {key for _, key, _ in expected_all if key.startswith("gather-")}
    assert all(not gathered & results[r].keys() for r in range(1, world))  # gather leaves the others alone
    assert len(expected_all) > 500
