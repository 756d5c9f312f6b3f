"""On a GPU: ember.compile's generated CUDA kernels against eager ember on cuda and against
the CPU (eager), forward values and gradients, for the programs of ``_fused_programs``,
in float32 and float64. Run where ``ember.cuda.is_available()``."""

import numpy as np
import pytest
from _fused_programs import PROGRAMS, _args

import ember
from ember.compiler import fusion

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-12)}
FLOATS = (0.75, 1.25, 0.5, 2.0)  # the symbolic scalar's values, one per call


def _run(fn, name, dtype, device, call):
    args = _args(name, dtype=dtype, device=device)
    if name == "symbolic_scalar":
        args[1] = FLOATS[call]
    out = fn(*args)
    outs = out if isinstance(out, tuple) else (out,)
    sum((o * (k + 1)).sum() for k, o in enumerate(outs)).backward()
    grads = [a.grad for a in args if isinstance(a, ember.Tensor) and a.requires_grad]
    return [t.detach().cpu().numpy() for t in (*outs, *grads)]


def _fused(compiled):
    return [n for es in compiled._ember_compiled._signatures.values() for e in es
            for n in e.root.gm.graph.nodes if n.op == "call_function" and n.target is fusion._call_region]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_on_cuda_matches_eager_on_cuda_and_the_cpu(name, dtype):
    compiled = ember.compile(PROGRAMS[name])
    for call in range(4 if name == "symbolic_scalar" else 2):  # recordings, then fused replays
        ours = _run(compiled, name, dtype, "cuda", call)
        eager_cuda = _run(PROGRAMS[name], name, dtype, "cuda", call)
        eager_cpu = _run(PROGRAMS[name], name, dtype, "cpu", call)
        for a, b, c in zip(ours, eager_cuda, eager_cpu):
            np.testing.assert_allclose(a, b, **TOL[dtype])
            np.testing.assert_allclose(a, c, **TOL[dtype])
    assert _fused(compiled), "the cuda graph was not fused"


def test_cuda_regions_compile_no_numba_kernels():
    compiled = ember.compile(PROGRAMS["layer_norm_ce"])
    for call in range(2):
        _run(compiled, "layer_norm_ce", "float32", "cuda", call)
    regions = [v for es in compiled._ember_compiled._signatures.values() for e in es
               for k, v in e.root.gm.__dict__.items() if k.startswith("fused_")]
    assert regions and all(r.forward_kernel is None and r._cuda for r in regions)


def test_a_target_out_of_range_raises_on_cuda():
    compiled = ember.compile(PROGRAMS["softmax_ce"])
    x, t = _args("softmax_ce", device="cuda")
    compiled(x, t)
    bad = t.clone()
    bad[0] = 500
    with pytest.raises(IndexError, match="Target 500 is out of bounds"):
        compiled(x, bad)


def test_many_rows_and_a_wide_row():
    # more rows than one launch covers per block, and a row wider than a block (1024 threads)
    def f(x, w, b):
        return ember.nn.functional.gelu(x * w + b).sum(-1)

    rng = np.random.default_rng(0)
    for shape in ((70000, 3), (5, 5000)):
        data = [rng.standard_normal(s).astype("float32") for s in (shape, shape[-1:], shape[-1:])]
        compiled = ember.compile(f)
        for _ in range(2):
            args = [ember.tensor(a, device="cuda", requires_grad=True) for a in data]
            out = compiled(*args)
            out.sum().backward()
        ref = [ember.tensor(a, requires_grad=True) for a in data]
        f(*ref).sum().backward()
        np.testing.assert_allclose(out.detach().cpu().numpy(), f(*ref).detach().numpy(), rtol=1e-4, atol=1e-4)
        for a, r in zip(args, ref):
            np.testing.assert_allclose(a.grad.cpu().numpy(), r.grad.numpy(), rtol=1e-3, atol=1e-3)
