"""Edges where real PyTorch programs met ember first: masks from Python lists, indexing
errors in torch's words, gather with a smaller index, loss targets of the wrong dtype,
gradients exactly at kinks, and activations asked to work in place. Each against torch."""

import numpy as np
import pytest
import torch
from conftest import assert_same, to_ember

import ember


def _both(fn, **tolerance):
    """fn(lib) for torch and ember; their exceptions, or results compared."""
    results = []
    for lib in (torch, ember):
        try:
            results.append(fn(lib))
        except Exception as e:  # noqa: BLE001  (the exception itself is compared)
            results.append(e)
    t, e = results
    if isinstance(t, Exception):
        assert type(e) is type(t), f"torch raised {type(t).__name__}: {t}; ember gave {e!r}"
        assert str(e) == str(t)
    else:
        assert not isinstance(e, Exception), f"ember raised {e!r}; torch gave {t}"
        assert_same(e, t, **tolerance)


@pytest.mark.parametrize("index", [[True, False, True], [False, False, False], [True, 0, 1], [2, 0]])
def test_list_index(index):
    _both(lambda lib: lib.arange(6.0).reshape(3, 2)[index])


@pytest.mark.parametrize("code", [
    "x[:, :, 0]", "x[0, 0, 0]", "x[5]", "x[:, 7]", "x[-9]", "x[lib.tensor([5])]", "x[[0, 5]]",
    "x[lib.tensor([[True, False]])]", "x[:, lib.tensor([True, False])]", "x[..., 0, 1, 2]",
])
def test_indexing_errors_in_torchs_words(code):
    _both(lambda lib: eval(code, {"lib": lib, "x": lib.arange(6.0).reshape(2, 3)}))


@pytest.mark.parametrize("code", ["x[5] = 1", "x[lib.tensor([5])] = 1", "x[lib.tensor([True])] = 1",
                                  "x[:, :, 1] = 0"])
def test_setitem_errors_in_torchs_words(code):
    def run(lib):
        x = lib.arange(6.0).reshape(2, 3)
        exec(code, {"lib": lib, "x": x})
        return x
    _both(run)


def test_gather_with_an_index_smaller_than_the_input():
    def run(lib):
        x = lib.arange(12.0).reshape(3, 4).requires_grad_()
        out = lib.gather(x, 1, lib.tensor([[0, 3], [2, 0]]))
        (out * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return out.detach(), x.grad
    _both(run)
    _both(lambda lib: lib.gather(lib.zeros(3, 4), 1, lib.tensor([[0], [1], [2], [0]])))


@pytest.mark.parametrize("input_shape,target", [
    ((4, 3), "[0., 1., 2., 1.]"), ((4, 3), "[0, 1, 2, 1], dtype=lib.int32"), ((3,), "1."), ((4, 3), "[0., 1.]"),
    ((4, 3), "[[0., 1.], [1., 0.]]"),
])
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_class_index_targets_of_the_wrong_dtype_or_shape(loss, input_shape, target):
    _both(lambda lib: getattr(lib.nn.functional, loss)(lib.ones(input_shape), eval(f"lib.tensor({target})",
                                                                                    {"lib": lib})))


def test_probability_targets_promote_with_the_input():
    probs = torch.softmax(torch.randn(4, 3, dtype=torch.float64), 1)
    logits = torch.randn(4, 3)
    # a float64 result of float32 log-probabilities: float32's rounding bounds the difference
    _both(lambda lib: lib.nn.functional.cross_entropy(*(to_ember(t) if lib is ember else t for t in (logits, probs)),
                                                      label_smoothing=0.1), rtol=1e-6, atol=1e-6)


def _grads(fn, *values):
    def run(lib):
        xs = [lib.tensor(v, requires_grad=True) for v in values]
        fn(lib, *xs).sum().backward()
        return tuple(x.grad for x in xs)
    return run


def test_pow_gradients_at_zero_to_the_zero():
    _both(_grads(lambda lib, a, b: a ** b, [0.0, 2.0, 3.0, 0.0, 0.0], [0.0, 0.0, 2.0, 2.0, 0.5]))


@pytest.mark.parametrize("name,args", [("hardtanh", ()), ("hardtanh", (-2.0, 0.5)), ("relu6", ()),
                                       ("hardsigmoid", ()), ("hardswish", ())])
def test_gradients_exactly_at_the_kinks(name, args):
    points = [-3.0, -2.0, -1.0, 0.0, 0.5, 1.0, 3.0, 6.0, 7.0]
    _both(_grads(lambda lib, x: getattr(lib.nn.functional, name)(x, *args), points))


@pytest.mark.parametrize("name,args", [
    ("relu", ()), ("leaky_relu", (0.2,)), ("elu", ()), ("hardtanh", ()), ("relu6", ()), ("silu", ()),
    ("hardswish", ()), ("hardsigmoid", ()), ("selu", ()), ("celu", (0.5,)), ("mish", ()), ("rrelu", ()),
    ("threshold", (0.5, -1.0)),
])
def test_activations_work_in_place_when_asked(name, args):
    def run(lib):
        x = lib.tensor([-3.0, -1.0, 0.0, 2.0, 7.0])
        out = getattr(lib.nn.functional, name)(x, *args, inplace=True)
        assert out is x
        leaf = lib.tensor([-3.0, -1.0, 0.5, 2.0, 7.0], requires_grad=True)
        y = leaf * 1
        getattr(lib.nn.functional, name)(y, *args, inplace=True).sum().backward()
        return x, leaf.grad
    _both(run)


@pytest.mark.parametrize("name,args", [("elu_", ()), ("hardtanh_", ()), ("leaky_relu_", ()), ("rrelu_", ()),
                                       ("threshold_", (0.5, -1.0)), ("celu_", ()), ("selu_", ())])
def test_in_place_spellings(name, args):
    def run(lib):
        x = lib.tensor([-3.0, -1.0, 0.0, 2.0, 7.0])
        getattr(lib.nn.functional, name)(x, *args)
        return x
    _both(run)


@pytest.mark.parametrize("module", ["ReLU6", "Hardtanh", "SELU", "CELU", "Hardswish", "Hardsigmoid", "Mish"])
def test_activation_modules_in_place(module):
    def run(lib):
        x = lib.tensor([-3.0, -1.0, 0.0, 2.0, 7.0])
        getattr(lib.nn, module)(inplace=True)(x)
        return x
    _both(run)


@pytest.mark.parametrize("code", ["lib.linalg.norm(x, dim=(0, 3))", "lib.linalg.matrix_norm(x, dim=(0, 3))",
                                  "lib.linalg.norm(x, ord=2, dim=(-3, 0))"])
def test_matrix_norm_dims_out_of_range(code):
    _both(lambda lib: eval(code, {"lib": lib, "x": lib.ones(2, 3)}))


def test_view_dtype_reads_the_same_bytes_as_torch():
    values = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    e, t = ember.tensor(values), torch.tensor(values)
    for name in ("int32", "int16", "uint8", "float16", "bfloat16", "float64"):
        got, want = e.view(getattr(ember, name)), t.view(getattr(torch, name))
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[6:] == str(want.dtype)[6:]
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    shared = e.view(ember.int32)
    shared[0, 0] = 0
    assert e[0, 0].item() == 0.0  # the same memory
    for bad in (lambda L, x: x[:, :3].view(L.float64), lambda L, x: x.t().view(L.int16),
                lambda L, x: x[0, 0].view(L.int16)):
        with pytest.raises(RuntimeError) as t_err:
            bad(torch, t)
        with pytest.raises(RuntimeError) as e_err:
            bad(ember, e)
        assert str(e_err.value).split(" to view")[0] == str(t_err.value).split(" to view")[0]


@pytest.mark.parametrize("call", [
    lambda L, out: L.maximum(L.tensor([1.0, 5.0]), L.tensor([3.0, 2.0]), out=out),
    lambda L, out: L.minimum(L.tensor([1.0, 5.0]), L.tensor([3.0, 2.0]), out=out),
    lambda L, out: L.zeros(2, out=out),
    lambda L, out: L.ones(2, out=out),
    lambda L, out: L.full((2,), 7.0, out=out),
])
def test_out_is_written_as_torch(call):
    e_out, t_out = ember.empty(2), torch.empty(2)
    assert call(ember, e_out) is e_out and call(torch, t_out) is t_out
    assert e_out.tolist() == t_out.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "bool"])
def test_sign_and_the_gradient_of_abs_at_nan_infinity_and_zero(dtype):
    # torch's sign is (x > 0) - (x < 0): 0 at NaN, where numpy's sign gives NaN
    values = [float("nan"), float("-inf"), -2.0, -0.0, 0.0, 3.0, float("inf")]
    if dtype == "int64":
        values = [-3, 0, 5]
    elif dtype == "bool":
        values = [True, False]
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    e = to_ember(t)
    assert_same(e.sign(), t.sign())
    assert_same(ember.sgn(e), torch.sgn(t))
    if dtype in ("float32", "float64"):
        tx, ex = t.clone().requires_grad_(), e.clone().requires_grad_()
        tx.abs().sum().backward()
        ex.abs().sum().backward()
        assert_same(ex.grad, tx.grad)


def test_nan_and_inf_results_come_without_numpy_warnings():
    # torch gives them silently; numpy's RuntimeWarnings must not reach the user from ember's ops
    import importlib
    import warnings

    import ember._numpy_warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        importlib.reload(ember._numpy_warnings)  # its filter in front of "always", as at import
        assert_same(ember.zeros(0, 4).mean(), torch.zeros(0, 4).mean())
        assert_same(ember.zeros(0, 4).mean(0), torch.zeros(0, 4).mean(0))
        assert_same(ember.log(ember.tensor([-1.0, 0.0])), torch.log(torch.tensor([-1.0, 0.0])))
        assert_same(ember.tensor([1.0, 0.0]) / ember.tensor([0.0, 0.0]),
                    torch.tensor([1.0, 0.0]) / torch.tensor([0.0, 0.0]))
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("n", [7, 300 * 301])  # numpy's path, and the kernel's
def test_relu_passes_the_gradient_where_its_input_is_nan(n):
    # torch's threshold_backward zeroes the gradient only where the result is <= 0
    values = torch.tensor([float("nan"), -1.0, -0.0, 0.0, 2.0, float("inf"), float("-inf")] * (n // 7 + 1))[:n]
    t = values.clone().requires_grad_()
    e = to_ember(values).requires_grad_()
    g = torch.arange(n, dtype=torch.float32)
    t.relu().backward(g)
    e.relu().backward(to_ember(g))
    assert_same(e.grad, t.grad)
