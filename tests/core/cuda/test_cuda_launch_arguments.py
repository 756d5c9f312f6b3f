"""Every launcher's arguments against its kernel's C signature, on the CPU: the launchers
run on a stand-in for cupy (numpy arrays under a cupy-named type) with the kernel lookup
replaced by a recorder, and each launch must pass as many arguments as the ``extern "C"``
function declares, each of the declared kind: an array of the pointer's element dtype (or
a null pointer), a numpy scalar of the value's C type, and a grid and block of ints. NVRTC
checks the sources; this checks the calls into them."""

import re
import sys
import types

import numpy as np
import pytest
from _cupy_stand_in import CUPY, wrap
from _cupy_stand_in import fake as _fake

from ember.cuda import kernels
from ember.cuda.kernels import attention, conv, dropout, embedding, loss, norm, optim, pool, rnn, softmax
from ember.ops.pool import _Geom

_CUPY = types.ModuleType("cupy")
for _name in dir(CUPY):
    if not _name.startswith("__"):
        setattr(_CUPY, _name, getattr(CUPY, _name))
_CUPY.empty = wrap(np.zeros)  # the recorder runs no kernel: products of what it "wrote" stay finite

# C type of a value argument -> numpy scalar type; of a pointer's element -> numpy dtype
_VALUES = {"long long": np.int64, "int": np.int32, "float": np.float32, "double": np.float64,
           "unsigned long long": np.uint64}
_ELEMENTS = {"float": "float32", "double": "float64", "__half": "float16", "__nv_bfloat16": "bfloat16",
             "long long": "int64", "unsigned long long": "uint64", "short": "int16", "int": "int32",
             "unsigned int": "uint32", "bool": "bool"}
DTYPES = ["float32", "float64", "float16", "bfloat16"]


def _signatures():
    found = {}
    for source in kernels.sources().values():
        for name, params in re.findall(r'extern "C" __global__ void (\w+)\(([^)]*)\)', source.source):
            kinds = []
            for param in params.split(","):
                ctype = " ".join(param.replace("const", " ").split()[:-1]) if "*" not in param else \
                    " ".join(param.replace("const", " ").replace("*", " ").split()[:-1])
                kinds.append(("pointer" if "*" in param else "value", ctype))
            found[name] = kinds
    return found


SIGNATURES = _signatures()


@pytest.fixture
def launches(monkeypatch):
    """Runs the launchers on the stand-in; records (family, name, grid, block, args)."""
    monkeypatch.setitem(sys.modules, "cupy", _CUPY)
    seen = []

    def function(family, name):
        assert name in kernels.sources()[family].names, name

        def launch(grid, block, args):
            seen.append((family, name, grid, block, args))
            _check(name, grid, block, args)
        return launch
    monkeypatch.setattr(kernels, "function", function)
    return seen


def _check(name, grid, block, args):
    assert isinstance(grid, tuple) and isinstance(block, tuple) and 1 <= len(grid) <= 3 and len(block) == 1
    assert all(isinstance(v, int) and v >= 1 for v in grid + block), (grid, block)
    kinds = SIGNATURES[name]
    assert len(args) == len(kinds), f"{name}: {len(args)} arguments for {len(kinds)} parameters"
    for i, (arg, (kind, ctype)) in enumerate(zip(args, kinds)):
        where = f"{name} argument {i} ({kind} {ctype})"
        if kind == "pointer":
            if isinstance(arg, np.ndarray):
                assert type(arg).__module__.startswith("cupy"), where
                assert arg.dtype == np.dtype(_ELEMENTS[ctype]), f"{where}: {arg.dtype}"
                assert arg.flags.c_contiguous, where
            else:
                assert type(arg) is np.uint64 and arg == 0, f"{where}: {arg!r}"
        else:
            assert type(arg) is _VALUES[ctype], f"{where}: {type(arg).__name__}"


def _rand(*shape, dtype="float32"):
    return _fake(np.random.default_rng(0).standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_loss_launchers(launches, dtype):
    x = _rand(5, 7, dtype=dtype)
    t = _fake(np.array([0, 6, 2, -100, 3]))
    w = _rand(7, dtype=dtype)
    for weight in (None, w):
        _, lse, wt = loss.cross_entropy_forward(x, t, weight, -100, 0.1)
        loss.cross_entropy_backward(_rand(5, dtype=dtype), x, lse, t, weight, None, -100, 0.1)
        loss.cross_entropy_backward(_fake(np.array(2.0, dtype)), x, lse, t, weight, _fake(wt.sum()), -100, 0.0)
    loss.nll_grad(t, _rand(5, dtype=dtype), 7)
    loss.nll_grad(_fake(np.zeros((2, 1, 4), np.int64)), _rand(2, 1, 4, dtype=dtype), 3)
    assert [n for _, n, *_ in launches].count(f"cross_entropy_forward_{dtype}") == 2
    assert launches[0][2] == (5,)  # one block per row


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_launcher(launches, dtype):
    for scale, padding in ((False, None), (True, 2)):
        out = embedding.backward(_rand(4, 3, dtype=dtype), _fake(np.array([1, 2, 2, 0], np.int32)), 10, padding, scale)
        assert out.shape == (10, 3) and out.dtype == np.dtype(dtype)  # summed in float32, rounded once
    assert len(launches) == 2


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_launchers(launches, dtype):
    x = _rand(3, 5, dtype=dtype)
    dropout.apply(x, 0.3, 1 / 0.7, 2 ** 63 + 5, 17)
    dropout.mask((3, 5, 1), np.dtype(dtype), 0.3, 1 / 0.7, 1, 0)
    dropout.apply_alpha(x, 0.3, 1.1, 0.5, 0.2, 1, 4)
    dropout.words(9, 1, 2)
    assert [launch[2] for launch in launches] == [(1,)] * 4  # groups of four: a few, one block
    dropout.apply(_rand(0, dtype=dtype), 0.3, 1.0, 1, 0)  # nothing to draw: no launch
    assert len(launches) == 4


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pool_launchers(launches, nd, dtype):
    size = (7, 6, 5)[:nd]
    geo = _Geom(size, (3,) * nd, (2,) * nd, (1,) * nd, (1,) * nd, True)
    x = _rand(2, 3, *size, dtype=dtype)
    for arg_dtype in ("int16", "int64"):
        vals, arg, idx = pool.max_forward(x, geo, np.dtype(arg_dtype), arg_dtype == "int64")
        assert vals.shape == (2, 3) + geo.out and arg.dtype == np.dtype(arg_dtype)
        assert (idx is None) == (arg_dtype == "int16")
        pool.max_backward(_rand(*vals.shape, dtype=dtype), arg, geo)
    pool.avg_forward(x, geo, 9.0)
    pool.avg_backward(_rand(2, 3, *geo.out, dtype=dtype), geo, _fake(np.ones(geo.out, dtype)))
    assert len(launches) == 6


@pytest.mark.parametrize("dtype", DTYPES)
def test_rnn_launchers(launches, dtype):
    b, h = 3, 5

    def r(*shape):
        return _rand(*shape, dtype=dtype)
    rnn.lstm_forward_step(r(b, 4 * h), r(b, 4 * h), r(1, 4 * h), r(b, h), r(b, h), r(b, h), r(b, h))
    rnn.lstm_backward_step(r(b, h), r(b, h), r(b, h), r(b, 4 * h), r(b, h), r(b, h), r(b, 4 * h))
    rnn.gru_forward_step(r(b, 3 * h), r(1, 3 * h), r(1, 3 * h), r(b, 3 * h), r(b, h), r(b, 2 * h), r(b, h), r(b, h),
                         r(b, h))
    rnn.gru_backward_step(r(b, h), r(b, h), r(b, h), r(b, 2 * h), r(b, h), r(b, h), r(b, h), r(b, 3 * h), r(b, 3 * h))
    names = [f"{cell}_{d}_{dtype}" for cell in ("lstm", "gru") for d in ("forward", "backward")]
    assert [n for _, n, *_ in launches] == names


@pytest.mark.parametrize("dtype", DTYPES)
def test_optimizer_launchers(launches, dtype):
    params = [_rand(3, dtype=dtype), _rand(optim.CHUNK + 1, dtype=dtype), _rand(0, dtype=dtype)]
    optim.adam([(p, _rand(*p.shape, dtype=dtype), _rand(*p.shape, dtype=dtype), _rand(*p.shape, dtype=dtype), None, 2)
                for p in params], lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1, amsgrad=False,
               decoupled_weight_decay=True)
    for momentum in (0.0, 0.9):
        optim.sgd([(p, _rand(*p.shape, dtype=dtype), _rand(*p.shape, dtype=dtype) if momentum else None, True)
                   for p in params], lr=0.1, momentum=momentum, dampening=0.0, weight_decay=0.0, nesterov=False,
                  maximize=True)
    assert [launch[2] for launch in launches] == [(3,)] * 3  # chunks: 1 + 2 (the empty tensor has none)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_and_norm_launchers(launches, dtype):
    x, g = _rand(4, 6, dtype=dtype), _rand(4, 6, dtype=dtype)
    for log in (False, True):
        softmax.forward(x, 1, log)
        softmax.backward(g, x, 0, log)
    w, b = _rand(6, dtype=dtype), _rand(6, dtype=dtype)
    _, mean, _, rstd = norm.rows_forward(x, w, b, 1e-5)
    norm.rows_backward(g, x, w, mean, rstd, rstd, True, True)
    _, rstd = norm.rms_forward(x, None, 1e-6)
    norm.rms_backward(g, x, None, rstd, True, False)
    assert len(launches) == 4 + 1 + 2 + 1 + 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_launchers(launches, dtype):
    x, b = _rand(2, 4, 7, 6, dtype=dtype), _rand(6, dtype=dtype)
    geo = dict(stride=(2, 1), pad=((1, 1), (0, 1)), dilation=(1, 2), groups=2)
    w = _rand(6, 2, 3, 3, dtype=dtype)
    out, kept = conv.forward(x, w, b, keep=True, **geo)
    assert out.shape == (2, 6, 4, 3) and isinstance(kept, conv.Columns)
    g = _rand(*out.shape, dtype=dtype)
    assert conv.input_grad(g, w, x.shape, **geo).shape == x.shape
    assert conv.weight_grad(x, g, w.shape, kept=kept, **geo).shape == w.shape
    conv.weight_grad(x, g, w.shape, **geo)  # the columns rebuilt
    assert [n for _, n, *_ in launches] == [f"{k}_{dtype}" for k in ("im2col", "col2im", "im2col")]
    # depthwise: 4 channels, 2 outputs each
    del launches[:]
    wd = _rand(8, 1, 3, 3, dtype=dtype)
    depth = dict(stride=(1, 2), pad=((1, 1), (1, 1)), dilation=(1, 1), groups=4)
    out, kept = conv.forward(x, wd, None, keep=True, **depth)
    assert kept is None
    g = _rand(*out.shape, dtype=dtype)
    conv.input_grad(g, wd, x.shape, **depth)
    conv.weight_grad(x, g, wd.shape, **depth)
    assert [n for _, n, *_ in launches] == [f"depthwise_{k}_{dtype}" for k in ("forward", "input_grad", "weight_grad")]
    assert launches[-1][2:4] == ((8 * 9,), (conv.REDUCE_BLOCK,))  # a block per filter tap
    # 1-d as 2-d of height 1, and an empty batch (no launch)
    del launches[:]
    out, _ = conv.forward(_rand(2, 3, 9, dtype=dtype), _rand(4, 3, 2, dtype=dtype), None, (2,), ((1, 0),), (1,), 1)
    assert out.shape == (2, 4, 5) and len(launches) == 1
    out, _ = conv.forward(_rand(0, 3, 5, 5, dtype=dtype), _rand(4, 3, 3, 3, dtype=dtype), None, (1, 1),
                          ((0, 0), (0, 0)), (1, 1), 1)
    assert out.shape == (0, 4, 3, 3) and len(launches) == 1
    # 3-d
    x3, w3 = _rand(2, 4, 5, 6, 3, dtype=dtype), _rand(6, 2, 2, 3, 2, dtype=dtype)
    geo3 = dict(stride=(1, 2, 1), pad=((1, 0), (1, 1), (0, 0)), dilation=(2, 1, 1), groups=2)
    out, kept = conv.forward(x3, w3, None, keep=True, **geo3)
    assert out.shape == (2, 6, 4, 3, 2)
    g = _rand(*out.shape, dtype=dtype)
    assert conv.input_grad(g, w3, x3.shape, **geo3).shape == x3.shape
    assert conv.weight_grad(x3, g, w3.shape, kept=kept, **geo3).shape == w3.shape
    assert [n for _, n, *_ in launches[1:]] == [f"{k}_{dtype}" for k in ("im2col", "col2im")]


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_launchers(launches, dtype):
    q, k, v = _rand(2, 3, 19, 8, dtype=dtype), _rand(2, 3, 21, 8, dtype=dtype), _rand(1, 3, 21, 5, dtype=dtype)
    masks = [None, _fake(np.random.default_rng(1).random((19, 21)) > 0.5), _rand(3, 1, 21, dtype=dtype)]
    for mask in masks:
        float_mask = mask is not None and mask.dtype != np.bool_
        out, lse = attention.forward(q, k, v, mask, mask is None, 0.3)
        assert out.shape == (2, 3, 19, 5) and lse.shape == (2, 3, 19)
        assert out.dtype == np.dtype(dtype) and lse.dtype == (np.float64 if dtype == "float64" else np.float32)
        dq, dk, dv, ds = attention.backward(_rand(*out.shape, dtype=dtype), q, k, v, _rand(*out.shape, dtype=dtype),
                                            lse, mask, mask is None, 0.3, float_mask)
        assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == (2, 3, 21, 5)  # broadcast value
        assert (ds is None) != float_mask and (ds is None or ds.shape == (2, 3, 19, 21))
    bq, bk = attention.TILES[dtype]
    names = [n for _, n, *_ in launches]
    assert names == [f"attention_{k}_{dtype}" for k in ("forward", "backward_kv", "backward_q")] * 3
    grids = [launch[2] for launch in launches[:3]]
    assert grids == [(6 * -(-19 // bq),), (6 * -(-21 // bk),), (6 * -(-19 // bq),)]
    assert all(launch[3] == (attention.THREADS,) for launch in launches)
    del launches[:]  # with dropout: the probability, its scale and the Philox stream
    out, lse = attention.forward(q, k, v, None, False, 0.3, 0.1, 2 ** 64 - 1, 5)
    attention.backward(_rand(*out.shape, dtype=dtype), q, k, v, out, lse, None, False, 0.3, False, 0.1, 2 ** 64 - 1, 5)
    assert len(launches) == 3
    del launches[:]
    attention.forward(_rand(2, 0, 4, dtype=dtype), _rand(2, 3, 4, dtype=dtype), _rand(2, 3, 4, dtype=dtype), None,
                      False, 0.5)
    assert not launches  # no query rows: nothing to launch
