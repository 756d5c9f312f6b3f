"""The default backend's fused kernels against eager ember and torch: forward values and
gradients of fused regions (layer_norm -> affine -> GELU -> cross-entropy, softmax,
log_softmax, sums), in float32 and float64, on awkward sizes.

Tolerances follow the issue's rule: float32 results are compared with torch's float64
result on the same workload, allowed 8x the distance of torch's own float32 result from
it (plus a floor of 1e-6 relative to the values' scale); float64 results to 1e-10."""

import operator
import threading

import numpy as np
import pytest
import torch

import ember
from ember.compiler import fusion
from ember.cpu.kernels import _runtime


def _lib_step(lib, x, t, params, *, approximate="none", ignore_index=-100, label_smoothing=0.0,
              reduction="mean"):
    F = lib.nn.functional
    lw, lb, w, b = params
    h = F.layer_norm(x, (x.shape[-1],), lw, lb)
    h = F.gelu(h * w + b, approximate=approximate)
    return F.cross_entropy(h, t, ignore_index=ignore_index, label_smoothing=label_smoothing, reduction=reduction)


def _inputs(n, c, seed, dtype, ignore_index=-100):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c)) * 2
    t = rng.integers(0, c, n)
    if n > 2:
        t[1] = ignore_index  # an ignored row
    params = [1 + 0.1 * rng.standard_normal(c), 0.1 * rng.standard_normal(c), 1 + 0.2 * rng.standard_normal(c),
              0.1 * rng.standard_normal(c)]
    return x.astype(dtype), t, [p.astype(dtype) for p in params]


def _torch_run(x, t, params, dtype, **kw):
    tx = torch.tensor(x, dtype=dtype, requires_grad=True)
    tp = [torch.tensor(p, dtype=dtype, requires_grad=True) for p in params]
    out = _lib_step(torch, tx, torch.tensor(t), tp, **kw)
    out.sum().backward()
    return [out.detach().numpy()] + [a.grad.numpy() for a in [tx] + tp]


def _ember_run(fn, x, t, params, **kw):
    ex = ember.tensor(x, requires_grad=True)
    ep = [ember.tensor(p, requires_grad=True) for p in params]
    out = fn(ex, ember.tensor(t), ep, **kw)
    out.sum().backward()
    return [out.detach().numpy()] + [a.grad.numpy() for a in [ex] + ep]


def _compiled(**kw):
    def step(x, t, params):
        return _lib_step(ember, x, t, params, **kw)
    return ember.compile(step)


def _check(ours, x, t, params, dtype_name, **kw):
    ref64 = _torch_run(x.astype(np.float64), t, [p.astype(np.float64) for p in params], torch.float64, **kw)
    if dtype_name == "float64":
        for a, b in zip(ours, ref64):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        return
    ref32 = _torch_run(x, t, params, torch.float32, **kw)
    for a, b64, b32 in zip(ours, ref64, ref32):
        scale = max(np.abs(b64).max(), 1e-30)
        tol = 8 * np.abs(b32 - b64).max() + 1e-6 * scale
        assert np.abs(a - b64).max() <= tol, (np.abs(a - b64).max(), tol)


def _compiled_against_torch64(f, arrays, rtol, atol):
    """``f(lib, *tensors)`` compiled by ember (the recording call, then a replay) against torch
    in float64: the output and every input's gradient within ``rtol``/``atol``. Returns the
    compiled function."""
    ours = [ember.tensor(a, requires_grad=True) for a in arrays]
    cf = ember.compile(lambda *xs: f(ember, *xs))
    for _ in range(2):
        for t in ours:
            t.grad = None
        out = cf(*ours)
        out.sum().backward()
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    ref = f(torch, *theirs)
    ref.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=rtol, atol=atol)
    for t, r in zip(ours, theirs):
        np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=rtol, atol=atol)
    return cf


FUSED = 1 if _runtime.enabled() else 0  # with EMBER_NUMBA=0 the default backend fuses nothing


def _fused_regions(compiled_fn) -> int:
    (entries,) = compiled_fn._ember_compiled._signatures.values()
    gm = entries[0].root.gm
    return sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target is fusion._call_region)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n,c", [(7, 13), (64, 1000), (1, 5), (33, 2)])
def test_layer_norm_affine_gelu_cross_entropy(n, c, dtype):
    x, t, params = _inputs(n, c, seed=n * c, dtype=dtype)
    step = _compiled()
    for _ in range(2):  # the recording call, then a replay through the fused kernels
        ours = _ember_run(lambda a, b, p: step(a, b, p), x, t, params)
    _check(ours, x, t, params, dtype)
    assert _fused_regions(step) == FUSED


@pytest.mark.parametrize("kw", [{"approximate": "tanh"}, {"label_smoothing": 0.1}, {"reduction": "sum"},
                                {"reduction": "none"}, {"ignore_index": 3}])
def test_options(kw):
    x, t, params = _inputs(16, 9, seed=1, dtype="float32", ignore_index=kw.get("ignore_index", -100))
    step = _compiled(**kw)
    for _ in range(2):
        ours = _ember_run(lambda a, b, p: step(a, b, p), x, t, params)
    _check(ours, x, t, params, "float32", **kw)
    assert _fused_regions(step) == FUSED


def test_softmax_log_softmax_and_row_sums_on_a_3d_input():
    rng = np.random.default_rng(5)
    data = rng.standard_normal((3, 5, 11)).astype(np.float32)

    def f(lib, x):
        F = lib.nn.functional
        s = F.softmax(x * 1.5, dim=-1)
        return (s * F.log_softmax(x, -1)).sum(-1, keepdim=True) * x.mean(-1, keepdim=True) + x.exp()

    cf = ember.compile(lambda x: f(ember, x))
    for _ in range(2):
        ex = ember.tensor(data, requires_grad=True)
        out = cf(ex)
        (out * out).sum().backward()
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    tout = f(torch, tx)
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=2e-4, atol=1e-4)
    assert _fused_regions(cf) == FUSED


def test_a_fused_gradient_becomes_the_leafs_grad_without_a_copy(monkeypatch):
    # the kernel writes each gradient into an array of its input's own shape ([2, 6, 7] here,
    # rows [12, 7] in the kernel), which the leaf then takes as it is: the engine copies a
    # gradient (numpy.array in ember.ops._helpers) only when something else may hold it
    from ember.ops import _helpers
    copies = []

    class CountingNumpy:
        def __getattr__(self, name):
            return getattr(np, name)

        def array(self, *args, **kwargs):
            copies.append(args[0].shape)
            return np.array(*args, **kwargs)

    rng = np.random.default_rng(8)
    data, scale = rng.standard_normal((2, 6, 7)).astype(np.float32), rng.standard_normal((2, 6, 7)).astype(np.float32)

    def f(lib, x, s):
        return lib.nn.functional.gelu(x * s + 1.0).exp()

    cf = ember.compile(lambda x, s: f(ember, x, s))
    for replay in (False, True):
        ex, es = ember.tensor(data, requires_grad=True), ember.tensor(scale, requires_grad=True)
        out = cf(ex, es).sum()
        if replay:
            monkeypatch.setattr(_helpers, "numpy", CountingNumpy())
        out.backward()
    tx, ts = torch.tensor(data, requires_grad=True), torch.tensor(scale, requires_grad=True)
    f(torch, tx, ts).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(es.grad.numpy(), ts.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert _fused_regions(cf) == FUSED
    if FUSED:
        assert copies == []


def test_a_fused_gelu_saves_nothing_and_differentiates_with_one_erfc_and_one_exp():
    # GELU is one op of the row program: its derivative 0.5 erfc(-x/sqrt2) + x phi(x) comes
    # from one erfc_gauss call (erfc and exp(-x^2/2) together), so the forward writes no
    # GELU value for the backward (as 1 + erf it wrote a [R, C] array, the backward read it
    # and took a second exp)
    rng = np.random.default_rng(12)
    data = (3 * rng.standard_normal((9, 31))).astype(np.float32)
    w, b = rng.standard_normal((31,)).astype(np.float32), rng.standard_normal((31,)).astype(np.float32)

    def f(lib, x, w, b):
        return lib.nn.functional.gelu(x * w + b).sum(-1)

    cf = _compiled_against_torch64(f, (data, w, b), rtol=1e-5, atol=1e-5)
    assert _fused_regions(cf) == FUSED
    if FUSED:
        (entries,) = cf._ember_compiled._signatures.values()
        (region,) = [v for k, v in vars(entries[0].root.gm).items() if k.startswith("fused_")]
        assert [v.kind for v in region.saved] == []
        assert sum(v.op == "gelu_d" for v in region.p.values) == 1
        assert not any(v.op in ("erf", "exp") for v in region.p.values)


def test_a_fused_region_is_one_compiled_node_as_torchs_without_double_backward():
    # torch.compile's output hangs on one CompiledFunctionBackward node; a gradient taken with
    # create_graph=True has a node of its own whose backward raises
    rng = np.random.default_rng(13)
    data, w = rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal(8).astype(np.float32)

    def f(lib, x, w):
        return lib.nn.functional.gelu(x * w).sum(-1)

    results = {}
    for lib, compile_ in ((ember, ember.compile), (torch, lambda fn: torch.compile(fn, backend="aot_eager"))):
        x, wt = lib.tensor(data, requires_grad=True), lib.tensor(w, requires_grad=True)
        cf = compile_(lambda x, w, lib=lib: f(lib, x, w))
        cf(x, wt)
        y = cf(x, wt)
        (gx,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        results[lib.__name__] = (y.grad_fn.name(), gx.grad_fn.name(), gx.detach().numpy())
        if lib is torch or FUSED:  # unfused (kernels off), ember replays the ops, which differentiate twice
            with pytest.raises(RuntimeError, match="does not currently support double backward"):
                gx.sum().backward()
    if FUSED:
        assert results["ember"][:2] == results["torch"][:2]
    np.testing.assert_allclose(results["ember"][2], results["torch"][2], rtol=1e-5, atol=1e-6)


def test_cross_entropy_reads_only_the_targets_column_as_torch():
    # -inf logits away from the targets (a masked vocabulary): torch's loss and gradient stay
    # finite, as the fused loop's must (a sum of logp * onehot over the row would be NaN)
    rng = np.random.default_rng(11)
    data = rng.standard_normal((6, 9)).astype(np.float32)
    target = np.array([0, 3, 8, 2, -100, 5])
    data[:, 7] = -np.inf
    data[4, 1] = -np.inf

    def f(lib, x, t):
        return lib.nn.functional.cross_entropy(x * 2.0, t)

    cf = ember.compile(lambda x, t: f(ember, x, t))
    for _ in range(2):
        ex = ember.tensor(data, requires_grad=True)
        loss = cf(ex, ember.tensor(target))
        loss.backward()
    tx = torch.tensor(data, requires_grad=True)
    tloss = f(torch, tx, torch.tensor(target))
    tloss.backward()
    assert np.isfinite(tloss.item())
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-6)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert _fused_regions(cf) == FUSED


def test_inference_without_grad_and_eager_fallback_when_kernels_are_off():
    x, t, params = _inputs(8, 6, seed=2, dtype="float32")
    ref = _lib_step(ember, ember.tensor(x), ember.tensor(t), [ember.tensor(p) for p in params])
    with ember.no_grad():
        step = _compiled()
        for _ in range(2):
            out = step(ember.tensor(x), ember.tensor(t), [ember.tensor(p) for p in params])
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5)
    from ember.cpu import kernels
    with kernels.disabled():
        step = _compiled()
        for _ in range(2):
            out = step(ember.tensor(x), ember.tensor(t), [ember.tensor(p) for p in params])
        assert _fused_regions(step) == 0
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)


def test_a_target_out_of_range_raises_the_ops_error():
    x, t, params = _inputs(8, 5, seed=4, dtype="float32")
    step = _compiled()
    step(ember.tensor(x), ember.tensor(t), [ember.tensor(p) for p in params])
    t[0] = 5
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        step(ember.tensor(x), ember.tensor(t), [ember.tensor(p) for p in params])


def test_a_lone_op_is_not_fused_and_unsupported_arguments_stay_ops():
    cf = ember.compile(lambda x: ember.nn.functional.gelu(x))
    cf(ember.randn(4, 4))
    assert _fused_regions(cf) == 0
    cs = ember.compile(lambda x: ember.softmax(x * 2, dim=0))  # not over the last dimension
    x = ember.randn(4, 3)
    np.testing.assert_allclose(cs(x).numpy(), ember.softmax(x * 2, dim=0).numpy(), rtol=1e-6)
    cs(x)
    assert _fused_regions(cs) == 0


def test_fused_calls_from_several_threads():
    x, t, params = _inputs(256, 64, seed=3, dtype="float32")
    step = _compiled()
    args = (ember.tensor(x), ember.tensor(t), [ember.tensor(p) for p in params])
    with ember.no_grad():
        expected = step(*args).item()
        step(*args)
    errors = []

    def worker():
        try:
            with ember.no_grad():
                for _ in range(10):
                    assert step(*args).item() == expected
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and _fused_regions(step) == FUSED


LOSSES_OVER_EVERY_ELEMENT = {
    "square mean": lambda lib, x, y: (x * 2 + y).square().mean(),
    "sum": lambda lib, x, y: (x.tanh() * y).sum(),
    "mse_loss": lambda lib, x, y: lib.nn.functional.mse_loss(x.sigmoid(), y),
    "mse_loss sum": lambda lib, x, y: lib.nn.functional.mse_loss(x.sigmoid(), y, reduction="sum"),
    "two losses": lambda lib, x, y: (x - y).square().mean() + lib.nn.functional.layer_norm(x, x.shape[-1:]).sum(),
}
AFTER_THE_REGION = {"two losses": ["add"]}  # arithmetic on the reduced losses: one-element ops after the loop


@pytest.mark.parametrize("shape", [(7, 13), (3, 5, 11), (1, 1)])
@pytest.mark.parametrize("loss", sorted(LOSSES_OVER_EVERY_ELEMENT))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_loss_over_every_element_joins_the_region(loss, shape, dtype):
    # a mean or sum over all elements (a training step's loss tail) is the region's row sums
    # added up after the loop; the backward spreads the loss's gradient in the same loop
    rng = np.random.default_rng(len(shape) * 10 + shape[-1])
    arrays = [rng.standard_normal(shape).astype(dtype) for _ in range(2)]
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    cf = _compiled_against_torch64(LOSSES_OVER_EVERY_ELEMENT[loss], arrays, **tol)
    (entries,) = cf._ember_compiled._signatures.values()
    ops = [n.target.__name__ for n in entries[0].root.gm.graph.nodes
           if n.op == "call_function" and n.target not in (fusion._call_region, operator.getitem)]
    if FUSED:
        assert _fused_regions(cf) == 1 and ops == AFTER_THE_REGION.get(loss, []), ops


def test_a_mean_over_every_element_of_a_region_of_symbolic_rows():
    # rows marked dynamic: one kernel serves every row count, and the mean divides by the
    # element count of each call
    def f(lib, a):
        return (a * 2 + 1).square().mean() + lib.nn.functional.mse_loss(a.tanh(), a * 0.5, reduction="sum")

    cf = ember.compile(lambda a: f(ember, a))
    for n in (5, 9, 3):
        data = np.random.default_rng(n).standard_normal((n, 7)).astype(np.float32)
        ours = ember.tensor(data, requires_grad=True)
        ember._dynamo.mark_dynamic(ours, 0)
        cf(ours).backward()
        theirs = torch.tensor(data, dtype=torch.float64, requires_grad=True)
        ref = f(torch, theirs)
        ref.backward()
        np.testing.assert_allclose(cf(ours).item(), ref.item(), rtol=1e-6)
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert _fused_regions(cf) == FUSED


def test_a_linear_bias_joins_the_loop_after_the_product():
    rng = np.random.default_rng(6)
    data = rng.standard_normal((10, 7)).astype(np.float32)
    w, b = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal(5).astype(np.float32)

    def f(lib, x, w, b):
        return lib.nn.functional.gelu(lib.nn.functional.linear(x, w, b), approximate="tanh").square().sum(-1)

    cf = _compiled_against_torch64(f, (data, w, b), rtol=1e-4, atol=1e-4)
    (entries,) = cf._ember_compiled._signatures.values()
    nodes = list(entries[0].root.gm.graph.nodes)
    linears = [n for n in nodes if n.op == "call_function" and getattr(n.target, "__name__", "") == "linear"]
    if FUSED:
        assert len(linears) == 1 and len(linears[0].args) == 2  # the product without its bias
        assert _fused_regions(cf) == 1


def test_empty_tensors_stay_as_ops():
    def f(x):
        return ember.nn.functional.softmax(x * 2, dim=-1).sum(-1)

    cf = ember.compile(f)
    for shape in ((0, 5), (3, 0)):
        x = ember.randn(*shape)
        for _ in range(2):
            np.testing.assert_array_equal(cf(x).numpy(), f(x).numpy())



@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_regions_compute_in_float32_and_round_once(dtype):
    # as torch's generated kernels: a float16/bfloat16 chain is one loop in float32 whose
    # results (and gradients) are rounded to the half type once, so they lie within one unit
    # in the last place of the exact values (eager ember rounds after every op)
    def f(lib, x):
        return ((x * 2 + 1).tanh().square().mean(-1) + x.exp().sum(-1) * 0.01).sum()

    half = getattr(ember, dtype)
    data = np.random.default_rng(9).standard_normal((8, 16)).astype(np.float32)
    x = ember.tensor(data).to(half).requires_grad_()
    exact = torch.tensor(x.detach().float().numpy(), dtype=torch.float64, requires_grad=True)
    want = f(torch, exact)
    want.backward()
    cf = ember.compile(lambda x: f(ember, x))
    for _ in range(2):
        x.grad = None
        got = cf(x)
        got.backward()
    bits = 7 if dtype == "bfloat16" else 10  # explicit mantissa bits

    def ulps(ours, best):
        best = np.asarray(best, np.float64)
        ulp = np.maximum(np.spacing(np.abs(best).astype(np.float32)).astype(np.float64) * 2.0 ** (23 - bits), 1e-30)
        return (np.abs(np.asarray(ours, np.float64) - best) / ulp).max()

    assert got.dtype is half and x.grad.dtype is half
    assert _fused_regions(cf) == FUSED
    if FUSED:
        assert ulps(got.float().item(), want.item()) <= 1 and ulps(x.grad.float().numpy(), exact.grad.numpy()) <= 1


def test_autocast_bfloat16_products_feed_a_fused_loop():
    # autocast's bfloat16 products feed a fused region that computes in float32 (before, the
    # default backend raised BackendCompilerFailed building a numba loop for bfloat16)
    def f(x, w):
        with ember.autocast("cpu", dtype=ember.bfloat16):
            h = ember.nn.functional.linear(x, w)
        return (ember.nn.functional.gelu(h) * 2).square().mean()

    x, w = ember.randn(8, 16, requires_grad=True), ember.randn(16, 16, requires_grad=True)
    want = f(x, w)
    want.backward()
    expected = [t.grad.clone() for t in (x, w)]
    cf = ember.compile(f)
    for _ in range(2):
        x.grad = w.grad = None
        got = cf(x, w)
        got.backward()
    assert got.dtype is want.dtype is ember.bfloat16
    np.testing.assert_allclose(got.float().item(), want.float().item(), rtol=2 ** -7)
    for t, g in zip((x, w), expected):
        np.testing.assert_allclose(t.grad.numpy(), g.numpy(), rtol=0.05, atol=0.05 * np.abs(g.numpy()).max())
    assert _fused_regions(cf) == FUSED


def test_tensor_keyword_arguments_fuse_too():
    rng = np.random.default_rng(7)
    data, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((6, 9), (9,), (9,)))

    def f(lib, x, w, b):
        return lib.nn.functional.silu(lib.nn.functional.layer_norm(x, (9,), weight=w, bias=b, eps=1e-3))

    cf = ember.compile(lambda x, w, b: f(ember, x, w, b))
    args = [ember.tensor(a) for a in (data, w, b)]
    for _ in range(2):
        out = cf(*args)
    ref = f(torch, *(torch.tensor(a, dtype=torch.float64) for a in (data, w, b)))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    assert _fused_regions(cf) == FUSED


def test_max_pool_moves_before_the_relu_it_reads():
    # max_pool(relu(x)) runs as relu(max_pool(x)): the same values and gradients, bit for bit,
    # with a negative window, ties and a NaN; a relu with another user and a pool that returns
    # its indices stay as recorded
    rng = np.random.default_rng(7)
    data = rng.standard_normal((3, 2, 6, 6)).astype(np.float32)
    data[0, 0, :2, :2] = -1.0  # a window with nothing positive
    data[0, 1, 2:4, 2:4] = 0.5  # a tie
    data[1, 0, 0, 0] = np.nan
    F = ember.nn.functional

    def f(x):
        kept = F.relu(x * 1.5)  # read twice: stays before the pool
        pooled, idx = F.max_pool2d(kept, 2, return_indices=True)
        return F.max_pool2d(F.relu(x), 2) + F.max_pool2d(F.relu(x - 0.25), 3, 1, 1)[..., ::2, ::2] + pooled + kept[
            ..., ::2, ::2]

    compiled = ember.compile(f)
    results = []
    for fn in (f, compiled):
        x = ember.tensor(data, requires_grad=True)
        for _ in range(2):
            x.grad = None
            out = fn(x)
            out.backward(ember.ones_like(out))
        results.append((out.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_array_equal(results[1][1], results[0][1])
    (entries,) = compiled._ember_compiled._signatures.values()
    calls = [n for n in entries[0].root.gm.graph.nodes if n.op == "call_function"]
    relus_of_pools = [n for n in calls if n.target is ember.relu and n.args[0].target is ember.nn.functional.max_pool2d]
    pools_of_relus = [n for n in calls if n.target is ember.nn.functional.max_pool2d and n.args[0].target is ember.relu]
    # without the kernels the default backend runs the graph as recorded (the third pool: kept)
    assert (len(relus_of_pools), len(pools_of_relus)) == ((2, 0) if FUSED else (0, 3))


def test_a_fused_relu_passes_nan_through_as_the_op_does():
    x = ember.tensor([[np.nan, -1.0, 0.5, -0.0, 2.0] * 3] * 4, requires_grad=True)

    def f(x):
        return ember.relu(x * 2.0) + 1.0

    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    want = torch.relu(tx * 2) + 1
    want.backward(torch.ones_like(want))  # torch's relu passes the gradient at NaN
    compiled = ember.compile(f)
    for fn in (f, compiled, compiled):
        x.grad = None
        out = fn(x)
        out.backward(ember.ones_like(out))
        np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
        np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def _regions_per_graph(compiled_fn) -> list:
    """The fused regions of each graph the compiled function recorded."""
    return [sum(1 for n in entry.root.gm.graph.nodes if n.op == "call_function" and n.target is fusion._call_region)
            for entries in compiled_fn._ember_compiled._signatures.values() for entry in entries]


SCALAR_PARAMETER = {
    "bias": lambda lib, x, b: (x * 2 + b).sum(),
    "scale and shift": lambda lib, x, b: ((x * b + b).tanh() * b).square().mean(),
    "per row": lambda lib, x, b: lib.nn.functional.softmax(x * b, -1).square().sum(-1) * b,
}


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
@pytest.mark.parametrize("case", sorted(SCALAR_PARAMETER))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_scalar_parameter_broadcast_in_a_region_gets_its_gradient(case, shape, dtype):
    # a 0-d or one-element tensor that requires grad (the bias of Linear(n, 1)): its gradient
    # is its adjoint summed over every element, per row in the loop and over the rows after
    # it (before, building the backward raised NotFusable: the compile failed)
    rng = np.random.default_rng(len(shape))
    arrays = [rng.standard_normal((7, 13)).astype(dtype), (0.5 + rng.random(shape)).astype(dtype)]
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    f = SCALAR_PARAMETER[case]
    cf = _compiled_against_torch64(f, arrays, **tol)
    eager, got = ([ember.tensor(a, requires_grad=True) for a in arrays] for _ in range(2))
    f(ember, *eager).sum().backward()
    cf(*got).sum().backward()
    for g, e in zip(got, eager):  # and against eager ember's, in the parameter's own shape
        assert g.grad.shape == e.grad.shape
        np.testing.assert_allclose(g.grad.numpy(), e.grad.numpy(), **tol)
    assert _fused_regions(cf) == FUSED


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_training_a_model_that_ends_in_linear_n_1(dtype):
    # nn.Linear(8, 1)'s bias is a one-element tensor broadcast over the [N, 1] output: its
    # gradient joins the fused loss loop; a few SGD steps compiled give eager's and torch's
    rng = np.random.default_rng(3)
    data, target = rng.standard_normal((16, 4)).astype(dtype), rng.standard_normal((16, 1)).astype(dtype)

    def train(lib, model, step):
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        x, y = lib.tensor(data), lib.tensor(target)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = step(model, x, y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().numpy() for p in model.parameters()]

    def step(lib):
        return lambda model, x, y: lib.nn.functional.mse_loss(model(x), y)

    def make(lib):
        model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 1)).to(getattr(lib, dtype))
        with lib.no_grad():
            for p, init in zip(model.parameters(), inits):
                p.copy_(lib.tensor(init))
        return model

    inits = [rng.standard_normal(s).astype(dtype) * 0.5 for s in ((8, 4), (8,), (1, 8), (1,))]
    eager = train(ember, make(ember), step(ember))
    compiled_step = ember.compile(step(ember))
    compiled = train(ember, make(ember), compiled_step)
    reference = train(torch, make(torch), step(torch))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for ours in (compiled, eager):
        np.testing.assert_allclose(ours[0], reference[0], **tol)
        for a, b in zip(ours[1], reference[1]):
            np.testing.assert_allclose(a, b, **tol)
    np.testing.assert_allclose(compiled[0], eager[0], **tol)
    assert _regions_per_graph(compiled_step) == [2 * FUSED]  # bias + ReLU, and bias + the loss


ROW_VALUES_BROADCAST = {
    "centered": lambda lib, x: ((x - x.mean(-1, keepdim=True)) * 3).sum(),
    "row term": lambda lib, x: (x * 2 + x.sum(-1, keepdim=True).exp() * 0.1).mean(),
    "both uses": lambda lib, x: (x * x.sum(-1, keepdim=True) + x.sum(-1, keepdim=True).tanh()).sum(),
}


@pytest.mark.parametrize("case", sorted(ROW_VALUES_BROADCAST))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_row_value_broadcast_over_its_row_sums_its_gradient_over_the_row(case, dtype):
    # a per-row value added to every element of its row gets one contribution per element,
    # even where that contribution is the same for the whole row (the loss's adjoint): the
    # backward counts it width times (before, once: the gradient was silently wrong)
    data = np.random.default_rng(4).standard_normal((6, 5)).astype(dtype)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    cf = _compiled_against_torch64(ROW_VALUES_BROADCAST[case], [data], **tol)
    assert _fused_regions(cf) == FUSED


NUMBERS_AMID_A_REGION = {
    "round": lambda x, a: round(a),
    "arithmetic": lambda x, a: round(a) * x.shape[0] - 1,  # operator.mul and sub of numbers: no region ops
}


@pytest.mark.parametrize("case", sorted(NUMBERS_AMID_A_REGION))
def test_a_number_computed_amid_a_region_is_defined_before_its_call(case):
    # round(a) of a float that became symbolic is a node between the region's ops (numbers do
    # not end a region): the region's call goes after it, not before its first op (before,
    # the second compiled call raised "used before it has been defined")
    def f(lib, x, a):
        return ((x * 2 + NUMBERS_AMID_A_REGION[case](x, a)).tanh() * a).sum(-1)

    data = np.random.default_rng(10).standard_normal((3, 5)).astype(np.float32)
    cf = ember.compile(lambda x, a: f(ember, x, a))
    for a in (1.0, 2.6, -1.4):
        got, eager = ember.tensor(data, requires_grad=True), ember.tensor(data, requires_grad=True)
        out = cf(got, a)
        out.sum().backward()
        want = f(ember, eager, a)
        want.sum().backward()
        theirs = torch.tensor(data, dtype=torch.float64, requires_grad=True)
        ref = f(torch, theirs, a)
        ref.sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got.grad.numpy(), eager.grad.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert _regions_per_graph(cf) == [FUSED, FUSED]


def test_a_number_read_from_the_regions_own_values_ends_it():
    # a number computed from one of the region's tensors cannot be read by the region's call
    # (the call would have to come both before and after it): the region ends before it
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(x, a):
        return (x * 2 + x.shape[0]).tanh() * a

    cf = ember.compile(f, backend=keep)
    x = ember.randn(5, 4)
    ember._dynamo.mark_dynamic(x, 0)
    cf(x, 1.0)
    cf(x, 2.6)
    gm = graphs[-1]
    (size,) = [n for n in gm.graph.nodes if n.op == "call_method" and n.target == "size"]
    product = next(n for n in gm.graph.nodes if n.target is ember.mul)
    size.replace_input_with(size.args[0], product)  # y.size(0) of y = x * 2, the region's first value
    fusion.fuse(gm)
    gm.graph.lint()
    (out,) = gm(x, 2.6)
    np.testing.assert_allclose(out.numpy(), f(x, 2.6).numpy(), rtol=1e-6)
    calls = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is fusion._call_region]
    assert len(calls) == 1 and product in calls[0].args  # fuse() called directly: with EMBER_NUMBA=0 too


def test_a_region_whose_backward_cannot_be_generated_stays_as_its_ops(monkeypatch):
    # fusion only speeds up: a backward the loop cannot compute leaves the ops as recorded
    # rather than failing the compile
    from ember.compiler.fusion import region

    def refuse(*args, **kwargs):
        raise fusion.NotFusable("no backward")

    monkeypatch.setattr(region, "gradients", refuse)
    data = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)

    def f(lib, x):
        return (x * 2 + 1).tanh().sum()

    cf = _compiled_against_torch64(f, [data], rtol=1e-5, atol=1e-6)
    assert _fused_regions(cf) == 0
