"""ember.func.vmap against torch.func.vmap: batching rules of every family, in_dims/out_dims,
nesting, chunking, randomness, the per-example loop fallback, errors, and the
compositions users write (per-example gradients, ensembles, batched Jacobians)."""

import warnings

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def to(L, a):
    if isinstance(a, np.ndarray):
        return L.tensor(a)
    if isinstance(a, (list, tuple)):
        return type(a)(to(L, x) for x in a)
    if isinstance(a, dict):
        return {k: to(L, v) for k, v in a.items()}
    return a


def assert_same(e, t, atol=1e-5):
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t)
        for a, b in zip(e, t):
            assert_same(a, b, atol)
        return
    if isinstance(t, dict):
        assert set(e) == set(t)
        for k in t:
            assert_same(e[k], t[k], atol)
        return
    assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().numpy().astype(np.float64), t.detach().numpy().astype(np.float64),
                               rtol=1e-4, atol=atol)


def check(fn, *args, in_dims=0, out_dims=0, **vmap_kwargs):
    """vmap(fn(L, ...)) in both libraries on the same inputs: equal results, and no
    per-example fallback warning from ember (the op has a batching rule)."""
    t = tf.vmap(lambda *a: fn(torch, *a), in_dims=in_dims, out_dims=out_dims, **vmap_kwargs)(*to(torch, args))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        e = ef.vmap(lambda *a: fn(ember, *a), in_dims=in_dims, out_dims=out_dims, **vmap_kwargs)(*to(ember, args))
    assert_same(e, t)


X = f32(5, 3, 4)
CASES = {
    # elementwise, with broadcasting between batched and unbatched operands
    "unary": (lambda L, a: (a.sin() * 2 + 1).exp().clamp(max=3.0), X),
    "binary_broadcast": (lambda L, a, b: L.where(a > 0, a * b, a - b), X, f32(4)),
    "rank_mismatch": (lambda L, a, b: a + b, f32(5, 4), f32(3, 4)),
    "activations": (lambda L, a: (L.nn.functional.gelu(a), L.nn.functional.silu(a), L.relu(a), L.sigmoid(a),
                                  L.nn.functional.softplus(a), L.nn.functional.leaky_relu(a, 0.1)), X),
    "dtype_casts": (lambda L, a: ((a > 0).float() + a.double(), L.zeros_like(a), L.full_like(a, 2.0)), X),
    "masked_fill": (lambda L, a: a.masked_fill(a < 0, 0.5), X),
    # reductions and dimension ops
    "sum_all": (lambda L, a: (a.sum(), a.mean(), a.amax(), a.std(), a.prod()), X),
    "sum_dims": (lambda L, a: (a.sum(-1), a.mean((0, 1)), a.var(0, keepdim=True), a.logsumexp(1), a.norm(dim=1)), X),
    "max_min": (lambda L, a: (a.max(), a.max(1), a.min(0, keepdim=True), a.argmax(), a.argmin(1)), X),
    "sort_topk": (lambda L, a: (a.sort(-1), a.topk(2, dim=0), a.argsort(1, descending=True), a.median(1)), X),
    "cumulative": (lambda L, a: (a.cumsum(1), a.cumprod(0), a.cummax(1), L.logcumsumexp(a, 0)), X),
    "softmax": (lambda L, a: (L.softmax(a, -1), L.log_softmax(a, 0)), X),
    "median_quantile": (lambda L, a: (a.median(), L.quantile(a, 0.3, dim=1)), X),
    "any_all": (lambda L, a: ((a > 0).any(), (a > 0).all(1)), X),
    # shapes
    "view_reshape": (lambda L, a: (a.view(12), a.reshape(2, -1), a.flatten(), a.unflatten(1, (2, 2))), X),
    "permute_transpose": (lambda L, a: (a.permute(1, 0), a.t(), a.transpose(0, 1), a.mT, a.movedim(0, 1)), X),
    "squeeze_unsqueeze": (lambda L, a: (a.unsqueeze(0).unsqueeze(-1).squeeze(), a[:1].squeeze(0), a.unsqueeze(1)), X),
    "expand_repeat": (lambda L, a: (a[:, :1].expand(3, 4), a.repeat(2, 1), a.expand(2, 3, 4), a.tile((2,))), X),
    "cat_stack_split": (lambda L, a, b: (L.cat([a, b], 0), L.stack([a, b], -1), a.split(2, 1), a.chunk(3, 0),
                                         a.unbind(1)), X, f32(3, 4)),
    "flip_roll_diag": (lambda L, a: (a.flip(0), a.roll(1, 1), a.roll(2), a.diagonal(), L.tril(a), a[:3, :3].trace()),
                       X),
    "narrow_select": (lambda L, a: (a.narrow(1, 1, 2), a.select(0, 2), a.diff(dim=1)), X),
    # indexing
    "getitem_basic": (lambda L, a: (a[0], a[:, 1:3], a[..., None, -1], a[1, ::2]), X),
    "getitem_advanced": (lambda L, a: (a[[0, 2]], a[:, [1, 3]], a[[0, 1], [1, 2]]), X),
    "getitem_separated": (lambda L, a: (a[[0, 1], :, [1, 0]], a[:, [0, 2], 1]), f32(5, 2, 3, 2)),
    "gather_scatter": (lambda L, a, i: (a.gather(1, i), L.zeros_like(a).scatter(1, i, a[:, :2]),
                                        a.index_select(1, L.tensor([3, 0])), a.take_along_dim(i, 1)),
                       X, rng.integers(0, 4, (5, 3, 2))),
    "index_unbatched": (lambda L, a, i: (a.gather(1, i), a.scatter_add(1, i, a[:, :2])), X,
                        rng.integers(0, 4, (3, 2))),
    "setitem": (lambda L, a, v: (lambda c: (c.__setitem__((slice(None), 0), v), c)[1])(a.clone()), X, f32(5, 3)),
    "inplace": (lambda L, a, b: a.clone().mul_(2).add_(b), X, f32(4)),
    # products
    "matmul_forms": (lambda L, a, b, v: (a @ b, v @ b, v @ v, a @ v[:4][:, None], L.mm(a, b), L.mv(a, v[:4]),
                                         L.dot(v, v), L.outer(v, v[:2])), X, f32(4, 2), f32(5, 4)),
    "einsum_bmm": (lambda L, a, b: (L.einsum("ij,jk->ik", a, b), L.einsum("ij,ij", a, a),
                                    L.bmm(a[None], b[None])), X, f32(4, 2)),
    "linear_addmm": (lambda L, a, w, b: (L.nn.functional.linear(a, w, b), L.addmm(b, a[:2, :4], w.T)),
                     X, f32(6, 4), f32(6)),
    # convolution and pooling
    "conv2d": (lambda L, x, w, b: (L.nn.functional.conv2d(x, w, b, padding=1),
                                   L.nn.functional.conv2d(x[0], w, stride=2)), f32(3, 2, 3, 6, 6), f32(4, 3, 3, 3),
               f32(4)),
    "conv1d_pool": (lambda L, x, w: L.nn.functional.max_pool1d(L.nn.functional.conv1d(x, w), 2),
                    f32(3, 2, 3, 9), f32(4, 3, 3)),
    "pool2d": (lambda L, x: (L.nn.functional.max_pool2d(x, 2), L.nn.functional.avg_pool2d(x, 3, 1, 1),
                             L.nn.functional.adaptive_avg_pool2d(x, 1),
                             L.nn.functional.interpolate(x, scale_factor=2, mode="bilinear")), f32(3, 2, 3, 6, 6)),
    # normalization
    "norms": (lambda L, x, w, b: (L.nn.functional.layer_norm(x, (6,), w, b), L.nn.functional.group_norm(x, 1),
                                  L.nn.functional.batch_norm(x, None, None, training=True),
                                  L.nn.functional.instance_norm(x)), f32(3, 2, 4, 6), f32(6), f32(6)),
    "batch_norm_eval": (lambda L, x, m, v: L.nn.functional.batch_norm(x, m, v, training=False),
                        f32(3, 2, 4, 5), f32(4), np.abs(f32(4)) + 0.5),
    # losses: reduced per example
    "regression_losses": (lambda L, a, b: (L.nn.functional.mse_loss(a, b),
                                           L.nn.functional.l1_loss(a, b, reduction="sum"),
                                           L.nn.functional.smooth_l1_loss(a, b, reduction="none"),
                                           L.nn.functional.binary_cross_entropy_with_logits(a, (b > 0).float()),
                                           L.nn.functional.kl_div(a.log_softmax(-1), b.softmax(-1),
                                                                  reduction="batchmean")), X, f32(5, 3, 4)),
    "class_losses": (lambda L, x, y, w: (L.nn.functional.cross_entropy(x, y), L.nn.functional.nll_loss(x, y, w),
                                         L.nn.functional.cross_entropy(x, y, ignore_index=1, reduction="sum"),
                                         L.nn.functional.cross_entropy(x, y, label_smoothing=0.1),
                                         L.nn.functional.nll_loss(x, y, reduction="none"),
                                         L.nn.functional.cross_entropy(x, x.softmax(-1), reduction="none")),
                     f32(5, 6, 4), rng.integers(0, 4, (5, 6)), np.abs(f32(4)) + 0.1),
    "class_loss_one_example": (lambda L, x, y: L.nn.functional.cross_entropy(x, y), f32(5, 4),
                               rng.integers(0, 4, (5,))),
}


# the in_dims of the cases whose inputs are not all mapped at dimension 0
IN_DIMS = {
    "binary_broadcast": (0, None), "rank_mismatch": (0, None), "cat_stack_split": (0, None),
    "gather_scatter": (0, 0), "index_unbatched": (0, None), "setitem": (0, 0), "inplace": (0, None),
    "matmul_forms": (0, None, 0), "einsum_bmm": (0, None), "linear_addmm": (0, None, None),
    "conv2d": (0, None, None), "conv1d_pool": (0, None), "norms": (0, None, None),
    "batch_norm_eval": (0, None, None), "class_losses": (0, 0, None)
}


@pytest.mark.parametrize("name", CASES)
def test_batching_rule(name):
    fn, *args = CASES[name]
    check(fn, *args, in_dims=IN_DIMS.get(name, 0))


def test_in_dims_out_dims_and_nesting():
    a, b = f32(3, 4, 5), f32(5, 4)
    check(lambda L, x, y: x * y, a, f32(4, 5), in_dims=(2, 1), out_dims=1)
    check(lambda L, x, y: (x @ y, x.sum()), a, b, in_dims=(0, None), out_dims=(1, 0))
    check(lambda L, d: d["x"] + d["y"], {"x": a, "y": np.swapaxes(a, 0, 1).copy()}, in_dims=({"x": 0, "y": 1},))
    inner = (lambda L: lambda x, y: x * y.sum())
    t = tf.vmap(tf.vmap(inner(torch), in_dims=(0, None)), in_dims=(None, 0))(torch.tensor(a), torch.tensor(b))
    e = ef.vmap(ef.vmap(inner(ember), in_dims=(0, None)), in_dims=(None, 0))(ember.tensor(a), ember.tensor(b))
    assert_same(e, t)
    t = tf.vmap(tf.vmap(lambda x: x.softmax(-1) @ x.T))(torch.tensor(a))
    e = ef.vmap(ef.vmap(lambda x: x.softmax(-1) @ x.T))(ember.tensor(a))
    assert_same(e, t)


def test_chunk_size_gives_the_same_result():
    a = f32(7, 3)
    t = tf.vmap(lambda x: (x.exp().sum(), x * 2), chunk_size=3, out_dims=(0, 1))(torch.tensor(a))
    e = ef.vmap(lambda x: (x.exp().sum(), x * 2), chunk_size=3, out_dims=(0, 1))(ember.tensor(a))
    assert_same(e, t)


def test_unbatched_output_is_expanded_and_out_dims_none():
    a = f32(4, 3)
    t = tf.vmap(lambda x: (x.new_ones(2), x.sum()), out_dims=(0, 0))(torch.tensor(a))
    e = ef.vmap(lambda x: (x.new_ones(2), x.sum()), out_dims=(0, 0))(ember.tensor(a))
    assert_same(e, t)
    e = ef.vmap(lambda x, y: y * 2, in_dims=(0, None), out_dims=None)(ember.tensor(a), ember.ones(3))
    assert e.tolist() == [2.0, 2.0, 2.0]


def test_randomness_modes():
    a = ember.zeros(4, 1000)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ef.vmap(lambda x: x + ember.rand_like(x))(a)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ef.vmap(lambda x: ember.nn.functional.dropout(x))(a)
    same = ef.vmap(lambda x: x + ember.rand_like(x), randomness="same")(a)
    assert (same == same[0]).all() and same.shape == (4, 1000)
    different = ef.vmap(lambda x: x + ember.randn(1000), randomness="different")(a)
    assert not (different == different[0]).all() and abs(different.mean().item()) < 0.1
    dropped = ef.vmap(lambda x: ember.nn.functional.dropout(x + 1, 0.5), randomness="same")(a)
    assert (dropped == dropped[0]).all() and 0.4 < (dropped[0] == 0).float().mean().item() < 0.6
    dropped = ef.vmap(lambda x: ember.nn.functional.dropout(x + 1, 0.5), randomness="different")(a)
    assert not (dropped == dropped[0]).all()
    with pytest.raises(RuntimeError, match="randomness"):
        ef.vmap(lambda x: x, randomness="sometimes")(a)


def test_op_without_rule_runs_per_example_with_one_warning():
    a = f32(4, 6)
    expected = tf.vmap(lambda x: torch.kron(x[:2], x[2:4]))(torch.tensor(a))
    with pytest.warns(UserWarning, match="no batching rule for kron"):
        got = ef.vmap(lambda x: ember.kron(x[:2], x[2:4]))(ember.tensor(a))
    assert_same(got, expected)


@pytest.mark.parametrize("call,error,match", [
    (lambda: ef.vmap(lambda x: x.item())(ember.ones(3)), RuntimeError, r"\.item\(\)"),
    (lambda: ef.vmap(lambda x: 1 if x > 0 else 0)(ember.ones(3)), RuntimeError, "data-dependent control flow"),
    (lambda: ef.vmap(lambda x, y: x + y)(ember.ones(3), ember.ones(4)), ValueError, "same size in the mapped"),
    (lambda: ef.vmap(lambda x: x, in_dims=2)(ember.ones(3, 2)), ValueError, "in_dim=2"),
    (lambda: ef.vmap(lambda x: x, in_dims=None)(ember.ones(3)), ValueError, "at least one input"),
    (lambda: ef.vmap(lambda x: 3.0)(ember.ones(3)), ValueError, "must only return Tensors"),
    (lambda: ef.vmap(lambda x, y: y.add_(x), in_dims=(0, None))(ember.ones(3), ember.ones(3)), RuntimeError,
     "inplace arithmetic"),
])
def test_errors_as_torch(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_torch_raises_the_same_errors():
    with pytest.raises(RuntimeError, match=r"\.item\(\)"):
        tf.vmap(lambda x: x.item())(torch.ones(3))
    with pytest.raises(ValueError, match="same size in the mapped"):
        tf.vmap(lambda x, y: x + y)(torch.ones(3), torch.ones(4))
    with pytest.raises(RuntimeError):  # torch's message differs with the shapes; the type is the same
        tf.vmap(lambda x, y: y.add_(x), in_dims=(0, None))(torch.ones(3), torch.ones(3))


# ---- the compositions of torch.func's tutorials -----------------------------------------

def _mlp_params(L):
    g = np.random.default_rng(3)
    return {"0.weight": L.tensor(g.standard_normal((8, 4)).astype(np.float32)),
            "0.bias": L.tensor(g.standard_normal(8).astype(np.float32)),
            "2.weight": L.tensor(g.standard_normal((3, 8)).astype(np.float32)),
            "2.bias": L.tensor(g.standard_normal(3).astype(np.float32))}


def _mlp(L):
    return L.nn.Sequential(L.nn.Linear(4, 8), L.nn.Tanh(), L.nn.Linear(8, 3))


def test_per_example_gradients_of_a_model():
    x, y = f32(6, 4), rng.integers(0, 3, 6)
    results = []
    for L, F in ((torch, tf), (ember, ef)):
        model, params = _mlp(L), _mlp_params(L)

        def loss(p, xi, yi, L=L, F=F, model=model):
            out = F.functional_call(model, p, (xi.unsqueeze(0),))
            return L.nn.functional.cross_entropy(out, yi.unsqueeze(0))
        results.append(F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, L.tensor(x), L.tensor(y)))
    assert_same(results[1], results[0])
    # and they are the rows of the per-example loop
    model, params = _mlp(torch), _mlp_params(torch)
    row = tf.grad(lambda p: torch.nn.functional.cross_entropy(tf.functional_call(model, p, (torch.tensor(x[2:3]),)),
                                                              torch.tensor(y[2:3])))(params)
    assert_same({k: v[2] for k, v in results[1].items()}, row)


def test_model_ensemble_with_stacked_states():
    x = f32(5, 4)
    results = []
    for L, F in ((torch, tf), (ember, ef)):
        L.manual_seed(0)
        models = [_mlp(L) for _ in range(3)]
        for m, seed in zip(models, range(3)):
            g = np.random.default_rng(seed)
            for p in m.parameters():
                p.data = L.tensor(g.standard_normal(tuple(p.shape)).astype(np.float32))
        params, buffers = F.stack_module_state(models)
        base = models[0]
        results.append(F.vmap(lambda p, b, xs, F=F, base=base: F.functional_call(base, (p, b), (xs,)),
                              in_dims=(0, 0, None))(
            params, buffers, L.tensor(x)))
    assert_same(results[1], results[0])


def test_ensemble_of_convolutions():
    x, w, b = f32(2, 3, 5, 5), f32(4, 6, 3, 3, 3), f32(4, 6)
    check(lambda L, wi, bi, xs: L.nn.functional.conv2d(xs, wi, bi, padding=1), w, b, x, in_dims=(0, 0, None))


def test_batched_jacobians_and_hessians():
    x = f32(4, 3)

    def f(L):
        return lambda v: (v.sin() * v.sum()).tanh()
    assert_same(ef.vmap(ef.jacrev(f(ember)))(ember.tensor(x)), tf.vmap(tf.jacrev(f(torch)))(torch.tensor(x)))
    assert_same(ef.vmap(ef.hessian(lambda v: (v.exp() * v).sum()))(ember.tensor(x)),
                tf.vmap(tf.hessian(lambda v: (v.exp() * v).sum()))(torch.tensor(x)), atol=1e-4)
    assert_same(ef.vmap(ef.jacfwd(f(ember)))(ember.tensor(x)), tf.vmap(tf.jacfwd(f(torch)))(torch.tensor(x)))


def test_batch_norm_modules_under_vmap():
    x = f32(3, 4, 2, 5)
    model = ember.nn.BatchNorm1d(2)
    with pytest.raises(RuntimeError, match="running_mean or running_var"):
        ef.vmap(model)(ember.tensor(x))
    ef.replace_all_batch_norm_modules_(model)
    tmodel = torch.nn.BatchNorm1d(2)
    tf.replace_all_batch_norm_modules_(tmodel)
    assert_same(ef.vmap(model)(ember.tensor(x)), tf.vmap(tmodel)(torch.tensor(x)))


def test_gradients_flow_through_vmap():
    a = f32(4, 3)
    e, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ef.vmap(lambda x: (x.sin() * x).sum())(e).sum().backward()
    tf.vmap(lambda x: (x.sin() * x).sum())(t).sum().backward()
    assert_same(e.grad, t.grad)


def _custom_functions(L, calls):
    class Square(L.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, w):
            return x * x * w

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return 2 * x * w * g, x * x * g

    class Cube(L.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * g

        @staticmethod
        def vmap(info, in_dims, x):
            calls.append((info.batch_size, in_dims))
            return Cube.apply(x), in_dims[0]

    class NoRule(L.autograd.Function):
        @staticmethod
        def forward(x):
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g
    return Square, Cube, NoRule


def test_custom_functions_under_vmap():
    a, w = f32(4, 3), f32(3)
    results = {}
    for L, F in ((torch, tf), (ember, ef)):
        calls = []
        Square, Cube, NoRule = _custom_functions(L, calls)
        x, wt = L.tensor(a, requires_grad=True), L.tensor(w, requires_grad=True)
        out = F.vmap(Square.apply, in_dims=(0, None))(x, wt)
        out.sum().backward()  # after vmap returned: the backward re-enters the level
        results[L] = (out, x.grad, wt.grad,
                      F.vmap(F.grad(lambda v, Cube=Cube: Cube.apply(v).sum()))(L.tensor(a)),
                      F.vmap(F.vmap(Square.apply, in_dims=(0, None)), in_dims=(0, None))(L.tensor(a)[None], wt))
        assert calls and calls[0] == (4, (0,))
        with pytest.raises(RuntimeError, match="vmap staticmethod or set generate_vmap_rule=True"):
            F.vmap(NoRule.apply)(L.tensor(a))
    assert_same(results[ember], results[torch])
