"""Without a GPU: the default backend picks the generated CUDA kernels for cupy arrays, and
those kernels compute what eager ember computes. numpy stands in for cupy (the region's
test for a cupy array answers yes, its array module is numpy) and the host stands in for
the GPU (``_host_emulation`` compiles each generated kernel as C++ and runs it with one
thread per block), so the whole path runs: the backend's choice of device, the region's
choice of kernels at call time, the launch arguments, the per-row results, the column
sums, the mean over the targets not ignored, and the backward."""

import numpy as np
import pytest
from _fused_programs import PROGRAMS, _args

import ember
from ember.compiler import backends, fusion
from ember.compiler.fusion import cuda_run
from ember.compiler.fusion import region as region_module
from ember.compiler.fusion.cuda_codegen import ElementwiseKernel, RowKernel

host = pytest.importorskip("_host_emulation")
pytestmark = pytest.mark.skipif(host.COMPILER is None, reason="needs g++ to run the kernels' code on the host")


@pytest.fixture
def numpy_as_cupy(monkeypatch):
    launched = []

    def run(kernel, *args):
        launched.append(kernel)
        return host.run(kernel, *args)

    monkeypatch.setattr(region_module, "on_cuda", lambda a: isinstance(a, np.ndarray))
    monkeypatch.setattr(region_module, "cupy_module", lambda: np)
    monkeypatch.setattr(cuda_run, "run", run)
    return launched


def _outputs_and_grads(fn, args):
    out = fn(*args)
    outs = out if isinstance(out, tuple) else (out,)
    total = sum((o * (k + 1)).sum() for k, o in enumerate(outs))
    total.backward()
    grads = [a.grad.numpy().copy() for a in args if isinstance(a, ember.Tensor) and a.requires_grad]
    return [o.detach().numpy() for o in outs], grads


def _regions(compiled):
    entries = [e for es in compiled._ember_compiled._signatures.values() for e in es]
    gm = entries[-1].root.gm
    return [v for k, v in gm.__dict__.items() if k.startswith("fused_")]


def test_the_backend_fuses_for_cuda_inputs(numpy_as_cupy):
    assert backends.example_device([ember.ones(2), 3]) == "cuda"
    compiled = ember.compile(PROGRAMS["softmax_ce"])
    for _ in range(2):  # the recording call runs eagerly, the replay through the region
        compiled(*_args("softmax_ce"))
    (region,) = _regions(compiled)
    assert region.forward_kernel is None and region.backward_kernel is None  # no numba for a cuda graph
    assert numpy_as_cupy and all(isinstance(k, (ElementwiseKernel, RowKernel)) for k in numpy_as_cupy)


def test_numpy_arrays_keep_the_numba_kernels():
    assert backends.example_device([ember.ones(2), 3]) == "cpu"
    assert not region_module.on_cuda(np.ones(2))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_generated_kernels_match_eager(name, dtype, numpy_as_cupy):
    program = PROGRAMS[name]
    compiled = ember.compile(program)
    # the recording call, then replays; a changing float records anew with it symbolic, and
    # that recording's first replay is checked against eager before it runs fused
    for call in range(2 if name != "symbolic_scalar" else 4):
        args = _args(name, dtype=dtype)
        if name == "symbolic_scalar":
            args[1] = (0.75, 1.25, 0.5, 2.0)[call]
        ours = _outputs_and_grads(compiled, args)
        eager_args = _args(name, dtype=dtype)
        if name == "symbolic_scalar":
            eager_args[1] = args[1]
        theirs = _outputs_and_grads(program, eager_args)
        tol = dict(rtol=2e-4, atol=2e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
        for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
            np.testing.assert_allclose(a, b, **tol)
    regions = _regions(compiled)
    assert regions and all(r.forward_kernel is None for r in regions)
    assert len(numpy_as_cupy) >= 2 * len(regions)  # forward and backward, through the CUDA path


def test_a_target_out_of_range_raises_on_the_cuda_path_too(numpy_as_cupy):
    compiled = ember.compile(PROGRAMS["softmax_ce"])
    x, t = _args("softmax_ce")
    compiled(x, t)
    t = ember.tensor(np.where(np.arange(len(t)) == 0, 500, t.numpy()))
    with pytest.raises(IndexError, match="Target 500 is out of bounds"):
        compiled(x, t)


def test_fuse_for_cuda_needs_no_numba(numpy_as_cupy, monkeypatch):
    from ember.cpu.kernels import _runtime
    monkeypatch.setattr(_runtime, "enabled", lambda: False)
    compiled = ember.compile(PROGRAMS["gelu_mlp"])
    compiled(*_args("gelu_mlp"))
    ours = _outputs_and_grads(compiled, _args("gelu_mlp"))
    theirs = _outputs_and_grads(PROGRAMS["gelu_mlp"], _args("gelu_mlp"))
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    assert any(n.target is fusion._call_region for r in [compiled] for es in r._ember_compiled._signatures.values()
               for e in es for n in e.root.gm.graph.nodes)

