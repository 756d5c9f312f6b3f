"""ember.nn.functional against torch.nn.functional on the same inputs: values, gradients,
dtypes and errors; gradcheck in float64; dropout statistics."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import assert_same, to_ember

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


def _pair(*shape, dtype=torch.float32, low=None):
    t = torch.randn(*shape, dtype=dtype) if low is None else torch.rand(*shape, dtype=dtype) * (1 - 2 * low) + low
    t.requires_grad_()
    return t, to_ember(t)


def _check(e_out, t_out, e_inputs, t_inputs, rtol=1e-5, atol=1e-5):
    assert_same(e_out, t_out, rtol, atol)
    g = torch.randn_like(t_out)
    t_out.backward(g)
    e_out.backward(to_ember(g))
    for e, t in zip(e_inputs, t_inputs):
        if t is not None and t.requires_grad:
            assert e.grad is not None
            assert_same(e.grad, t.grad, rtol, atol)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    np.random.seed(0)
    ember.manual_seed(0)


# ---- linear and convolution ---------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape, bias):
    tx, ex = _pair(*shape)
    tw, ew = _pair(3, 4)
    tb, eb = _pair(3) if bias else (None, None)
    _check(F.linear(ex, ew, eb), TF.linear(tx, tw, tb), [ex, ew, eb], [tx, tw, tb])


def test_linear_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x5 and 4x4\)"):
        F.linear(ember.randn(3, 5), ember.randn(4, 4))
    with pytest.raises(RuntimeError):
        F.linear(ember.randn(3, 4), ember.randn(2, 4, dtype=ember.float64))


CONV_CASES = [
    dict(),
    dict(stride=2, padding=1),
    dict(padding="same", dilation=2),
    dict(padding="valid"),
    dict(groups=2, padding=(1, 0)),
    dict(stride=(2, 1), dilation=(1, 2), padding=2),
    dict(padding=(3, 4)),  # padding beyond the kernel's reach: borders see only zeros
    dict(groups=2, dilation=(2, 1), padding=(2, 1)),
]


@pytest.mark.parametrize("kw", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(kw, bias):
    tx, ex = _pair(2, 4, 9, 8)
    tw, ew = _pair(6, 4 // kw.get("groups", 1), 3, 3)
    tb, eb = _pair(6) if bias else (None, None)
    _check(F.conv2d(ex, ew, eb, **kw), TF.conv2d(tx, tw, tb, **kw), [ex, ew, eb], [tx, tw, tb], 1e-4, 1e-4)


@pytest.mark.parametrize("out_channels", [6, 2])  # input gradient by scatter-add, and as a convolution
def test_conv2d_in_chunks_of_images(monkeypatch, out_channels):
    """Column buffers are built per chunk of images and reused: tiny chunks give the same result."""
    from ember.ops import conv
    monkeypatch.setattr(conv, "_CHUNK_BYTES", 1)
    monkeypatch.setattr(conv, "_KEEP_BYTES", 0)
    tx, ex = _pair(5, 4, 7, 6)
    tw, ew = _pair(out_channels, 2, 3, 2)
    tb, eb = _pair(out_channels)
    _check(F.conv2d(ex, ew, eb, padding=1, groups=2), TF.conv2d(tx, tw, tb, padding=1, groups=2),
           [ex, ew, eb], [tx, tw, tb], 1e-4, 1e-4)


def test_conv2d_bias_is_part_of_the_node():
    x, w, b = ember.randn(1, 2, 4, 4), ember.randn(3, 2, 3, 3, requires_grad=True), ember.randn(3, requires_grad=True)
    assert type(F.conv2d(x, w, b).grad_fn).__name__ == "ConvolutionBackward0"


def test_conv2d_same_even_kernel_and_unbatched():
    tx, ex = _pair(3, 7, 6)
    tw, ew = _pair(2, 3, 4, 2)
    _check(F.conv2d(ex, ew, padding="same"), TF.conv2d(tx, tw, padding="same"), [ex, ew], [tx, tw], 1e-4, 1e-4)


def test_conv1d():
    tx, ex = _pair(2, 3, 11)
    tw, ew = _pair(4, 3, 3)
    tb, eb = _pair(4)
    _check(F.conv1d(ex, ew, eb, stride=2, padding=1), TF.conv1d(tx, tw, tb, stride=2, padding=1),
           [ex, ew, eb], [tx, tw, tb], 1e-4, 1e-4)


def test_conv2d_float64_dtype():
    x, w = ember.randn(1, 2, 5, 5, dtype=ember.float64), ember.randn(3, 2, 3, 3, dtype=ember.float64)
    assert F.conv2d(x, w).dtype is ember.float64
    assert F.conv2d(x.float(), w.float()).dtype is ember.float32


def test_conv2d_errors():
    x, w = ember.randn(2, 3, 5, 5), ember.randn(4, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"expected input\[2, 4, 5, 5\] to have 3 channels, but got 4"):
        F.conv2d(ember.randn(2, 4, 5, 5), w)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(ember.randn(2, 3, 2, 2), w)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(x, w, padding="same", stride=2)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        F.conv2d(x.double(), w)
    with pytest.raises(RuntimeError, match=r"Input type \(double\) and bias type \(float\)"):
        F.conv2d(x.double(), w.double(), ember.randn(4))
    with pytest.raises(RuntimeError, match="Expected 3D"):
        F.conv2d(ember.randn(5, 5), w)


def test_conv2d_gradcheck_and_double_backward():
    x = ember.randn(1, 2, 5, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 1, 3, 2, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, dtype=ember.float64, requires_grad=True)
    fn = lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, padding=1, dilation=(1, 2), groups=2), (x, w))
    assert gradgradcheck(lambda x, w, b: F.conv2d(x, w, b, padding=(3, 1), groups=2), (x, w, b))


# ---- pooling ------------------------------------------------------------------------

POOL_CASES = [
    ("max_pool2d", dict(kernel_size=2)),
    ("max_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max_pool2d", dict(kernel_size=(3, 2), stride=1, dilation=(2, 1))),
    ("max_pool2d", dict(kernel_size=2, stride=2)),
    ("avg_pool2d", dict(kernel_size=2)),
    ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ("avg_pool2d", dict(kernel_size=2, divisor_override=3)),
    ("adaptive_avg_pool2d", dict(output_size=(3, 5))),
    ("adaptive_avg_pool2d", dict(output_size=1)),
    ("adaptive_avg_pool2d", dict(output_size=(None, 4))),
]


@pytest.mark.parametrize("name,kw", POOL_CASES)
def test_pool2d(name, kw):
    tx, ex = _pair(2, 3, 9, 8)
    _check(getattr(F, name)(ex, **kw), getattr(TF, name)(tx, **kw), [ex], [tx])


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
def test_pool2d_unbatched_and_1d(name):
    tx, ex = _pair(3, 6, 6)
    _check(getattr(F, name)(ex, 2), getattr(TF, name)(tx, 2), [ex], [tx])
    n1 = name.replace("2d", "1d")
    tx, ex = _pair(2, 3, 9)
    _check(getattr(F, n1)(ex, 3, 2), getattr(TF, n1)(tx, 3, 2), [ex], [tx])


def test_max_pool_ties_go_to_first_and_indices():
    x = torch.tensor([[[[1.0, 1.0, 0.0], [1.0, 0.0, 2.0], [2.0, 2.0, 2.0]]]], requires_grad=True)
    ex = to_ember(x)
    _check(F.max_pool2d(ex, 2, 1), TF.max_pool2d(x, 2, 1), [ex], [x])
    tx = torch.randn(2, 3, 9, 8)
    tv, ti = TF.max_pool2d(tx, 3, 2, 1, return_indices=True)
    ev, ei = F.max_pool2d(to_ember(tx), 3, 2, 1, return_indices=True)
    assert_same(ev, tv)
    assert_same(ei, ti)


def test_max_pool_nan_propagates():
    t = torch.tensor([[[[1.0, float("nan")], [3.0, 2.0]]]])
    assert np.isnan(F.max_pool2d(to_ember(t), 2).item())
    assert np.isnan(TF.max_pool2d(t, 2).item())


def test_pool_errors():
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(ember.randn(2, 3, 5, 5), 7)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(ember.randn(2, 3, 5, 5), 3, padding=2)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.avg_pool2d(ember.randn(5, 5), 2)


def test_pool_gradcheck():
    x = ember.randn(1, 2, 5, 6, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), (x,))
    assert gradcheck(lambda x: F.max_pool2d(x, 2), (x,))
    assert gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool2d(x, (3, 4)), (x,))
    assert gradgradcheck(lambda x: F.max_pool2d(x, 2, 1), (x,))
    assert gradgradcheck(lambda x: F.avg_pool2d(x, 2, 1, 1), (x,))


# ---- normalisation ------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (3, 3, 4, 5)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(shape, training):
    tx, ex = _pair(*shape)
    tw, ew = _pair(3)
    tb, eb = _pair(3)
    trm, trv = torch.randn(3), torch.rand(3) + 0.5
    erm, erv = to_ember(trm), to_ember(trv)
    _check(F.batch_norm(ex, erm, erv, ew, eb, training=training, momentum=0.3, eps=1e-3),
           TF.batch_norm(tx, trm, trv, tw, tb, training=training, momentum=0.3, eps=1e-3),
           [ex, ew, eb], [tx, tw, tb], 1e-4, 1e-4)
    assert_same(erm, trm)
    assert_same(erv, trv)


def test_batch_norm_no_affine_no_stats():
    tx, ex = _pair(4, 3, 2, 2)
    _check(F.batch_norm(ex, None, None, training=True), TF.batch_norm(tx, None, None, training=True), [ex], [tx],
           1e-4, 1e-4)


def test_batch_norm_errors():
    with pytest.raises(RuntimeError, match="running_mean should contain 5 elements not 4"):
        F.batch_norm(ember.rand(3, 5), ember.zeros(4), ember.ones(4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(ember.rand(1, 5), None, None, training=True)


@pytest.mark.parametrize("norm_shape", [(6,), (3, 6)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(norm_shape, affine):
    tx, ex = _pair(4, 3, 6)
    tw, ew = _pair(*norm_shape) if affine else (None, None)
    tb, eb = _pair(*norm_shape) if affine else (None, None)
    _check(F.layer_norm(ex, norm_shape, ew, eb), TF.layer_norm(tx, norm_shape, tw, tb),
           [ex, ew, eb], [tx, tw, tb], 1e-4, 1e-4)


def test_layer_norm_error():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        F.layer_norm(ember.rand(3, 5), (4,))


def test_norm_gradcheck():
    x = ember.randn(4, 3, 2, dtype=ember.float64, requires_grad=True)
    w = ember.randn(3, dtype=ember.float64, requires_grad=True)
    b = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    rm, rv = ember.randn(3, dtype=ember.float64), ember.rand(3, dtype=ember.float64) + 0.5
    assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=False), (x, w, b))
    lw = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    lb = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (3, 2), w, b), (x, lw, lb))
    assert gradgradcheck(lambda x, w: F.layer_norm(x, (2,), w[0]), (x, lw))
    assert gradgradcheck(lambda x, w: F.batch_norm(x, None, None, w, None, training=True), (x, w))


# ---- losses -------------------------------------------------------------------------

CE_CASES = [dict(), dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=1), dict(label_smoothing=0.2),
            dict(weight=True, ignore_index=2, label_smoothing=0.1), dict(weight=True, reduction="none"),
            dict(weight=True)]


def _loss_kwargs(kw, n_classes):
    tkw = dict(kw)
    if kw.get("weight"):
        tkw["weight"] = torch.rand(n_classes) + 0.1
    ekw = {k: (to_ember(v) if isinstance(v, torch.Tensor) else v) for k, v in tkw.items()}
    return tkw, ekw


@pytest.mark.parametrize("kw", CE_CASES)
@pytest.mark.parametrize("shape", [(6, 5), (4, 5, 3)])
def test_cross_entropy(kw, shape):
    tx, ex = _pair(*shape)
    tt = torch.randint(0, 5, (shape[0],) + shape[2:])
    tkw, ekw = _loss_kwargs(kw, 5)
    _check(F.cross_entropy(ex, to_ember(tt), **ekw), TF.cross_entropy(tx, tt, **tkw), [ex], [tx])


@pytest.mark.parametrize("kw", [kw for kw in CE_CASES if "label_smoothing" not in kw])
def test_nll_loss(kw):
    tx = torch.randn(6, 5).log_softmax(1).detach().requires_grad_()
    ex = to_ember(tx)
    tt = torch.randint(0, 5, (6,))
    tkw, ekw = _loss_kwargs(kw, 5)
    _check(F.nll_loss(ex, to_ember(tt), **ekw), TF.nll_loss(tx, tt, **tkw), [ex], [tx])


def test_cross_entropy_probabilities_and_unbatched():
    tx, ex = _pair(6, 5)
    tt = torch.randn(6, 5).softmax(1)
    _check(F.cross_entropy(ex, to_ember(tt), label_smoothing=0.1), TF.cross_entropy(tx, tt, label_smoothing=0.1),
           [ex], [tx])
    tx, ex = _pair(5)
    _check(F.cross_entropy(ex, ember.tensor(3)), TF.cross_entropy(tx, torch.tensor(3)), [ex], [tx])


def test_cross_entropy_all_ignored_is_nan():
    x, t = torch.randn(3, 4), torch.full((3,), -100)
    assert np.isnan(F.cross_entropy(to_ember(x), to_ember(t)).item())
    assert np.isnan(TF.cross_entropy(x, t).item())


def test_loss_errors():
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.cross_entropy(ember.randn(3, 5), ember.tensor([0, 1, 7]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"):
        F.cross_entropy(ember.randn(3, 5), ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.nll_loss(ember.randn(3, 5), ember.tensor([0, 1, 2.0]))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.mse_loss(ember.randn(3), ember.randn(3), reduction="avg")
    with pytest.raises(ValueError, match="that is different to the input size"):
        F.binary_cross_entropy(ember.rand(3, 5), ember.rand(3, 4))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(ember.rand(3, 5), ember.rand(3, 4))
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(ember.randn(3, 1), ember.randn(3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
def test_regression_losses(name, reduction):
    tx, ex = _pair(4, 3)
    tt, et = _pair(4, 3)
    _check(getattr(F, name)(ex, et, reduction=reduction), getattr(TF, name)(tx, tt, reduction=reduction),
           [ex, et], [tx, tt])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction, weighted):
    tx, ex = _pair(4, 3, low=0.05)
    tt, et = _pair(4, 3, low=0.0)
    tw = torch.rand(3) if weighted else None
    _check(F.binary_cross_entropy(ex, et, None if tw is None else to_ember(tw), reduction=reduction),
           TF.binary_cross_entropy(tx, tt, tw, reduction=reduction), [ex, et], [tx, tt])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_with_logits(reduction, weighted):
    tx, ex = _pair(4, 3)
    tt, et = _pair(4, 3, low=0.0)
    tw, tpw = (torch.rand(3), torch.rand(3) * 3) if weighted else (None, None)
    _check(F.binary_cross_entropy_with_logits(ex, et, None if tw is None else to_ember(tw), reduction=reduction,
                                              pos_weight=None if tpw is None else to_ember(tpw)),
           TF.binary_cross_entropy_with_logits(tx, tt, tw, reduction=reduction, pos_weight=tpw), [ex, et], [tx, tt])


def test_bce_saturates_like_torch():
    x, t = torch.tensor([0.0, 1.0, 0.5]), torch.tensor([1.0, 0.0, 1.0])
    assert_same(F.binary_cross_entropy(to_ember(x), to_ember(t), reduction="none"),
                TF.binary_cross_entropy(x, t, reduction="none"))


def test_loss_gradcheck():
    x = ember.randn(4, 3, 2, dtype=ember.float64, requires_grad=True)
    t = ember.tensor([[0, 1], [2, -100], [1, 1], [0, 2]])
    w = ember.rand(3, dtype=ember.float64) + 0.1
    assert gradcheck(lambda x: F.cross_entropy(x, t, weight=w, label_smoothing=0.2), (x,))
    assert gradcheck(lambda x: F.cross_entropy(x, t, reduction="none"), (x,))
    assert gradgradcheck(lambda x: F.cross_entropy(x, t, weight=w), (x,))
    assert gradcheck(lambda x: F.nll_loss(x, t, reduction="sum"), (x,))
    p = (ember.rand(3, 2, dtype=ember.float64) * 0.8 + 0.1).requires_grad_()
    y = ember.rand(3, 2, dtype=ember.float64).requires_grad_()
    assert gradcheck(lambda p, y: F.binary_cross_entropy(p, y), (p, y))
    z = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    pw = ember.rand(2, dtype=ember.float64) + 0.5
    assert gradcheck(lambda z, y: F.binary_cross_entropy_with_logits(z, y, pos_weight=pw), (z, y))
    assert gradgradcheck(lambda z: F.binary_cross_entropy_with_logits(z, y.detach()), (z,))


# ---- activations and dropout --------------------------------------------------------

@pytest.mark.parametrize("name,kw", [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("relu", {}), ("tanh", {}),
                                     ("sigmoid", {}), ("softmax", {"dim": 1}), ("log_softmax", {"dim": 0}),
                                     ("silu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
                                     ("softplus", {"beta": 2.0})])
def test_activations(name, kw):
    tx, ex = _pair(5, 4)
    _check(getattr(F, name)(ex, **kw), getattr(TF, name)(tx, **kw), [ex], [tx])


def test_gelu_gradcheck_and_dtype():
    x = ember.randn(6, dtype=ember.float64, requires_grad=True)
    assert gradcheck(F.gelu, (x,))
    assert gradgradcheck(lambda x: F.gelu(x, approximate="tanh"), (x,))
    assert F.gelu(ember.randn(3)).dtype is ember.float32


def test_dropout_statistics():
    ember.manual_seed(1)
    x = ember.ones(200, 500)
    p = 0.3
    y = F.dropout(x, p)
    kept = (y != 0).float().mean().item()
    assert abs(kept - (1 - p)) < 0.01
    vals = y.numpy()[y.numpy() != 0]
    np.testing.assert_allclose(vals, 1 / (1 - p), rtol=1e-6)
    assert abs(y.mean().item() - 1.0) < 0.02
    assert y.dtype is ember.float32
    assert F.dropout(x, p, training=False) is x
    assert (F.dropout(x, 1.0) == 0).all().item()


def test_dropout_gradient_uses_mask_and_seed_reproduces():
    x = ember.randn(50, 40, requires_grad=True)
    ember.manual_seed(3)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    mask = (y.detach() != 0).float()
    np.testing.assert_allclose(x.grad.numpy(), (mask * 2).numpy())
    ember.manual_seed(3)
    np.testing.assert_array_equal(F.dropout(x, 0.5).detach().numpy(), y.detach().numpy())


def test_dropout2d_zeroes_whole_channels():
    y = F.dropout2d(ember.ones(20, 30, 3, 3), 0.5).numpy()
    per_channel = y.reshape(20, 30, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert 0.35 < (per_channel[..., 0] == 0).mean() < 0.65


def test_dropout_errors():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(ember.ones(3), 1.5)


def test_one_hot_and_pad():
    t = torch.tensor([0, 2, 1])
    assert_same(F.one_hot(to_ember(t), 4), TF.one_hot(t, 4))
    tx, ex = _pair(2, 3, 4)
    _check(F.pad(ex, (1, 2, 0, 1), value=0.5), TF.pad(tx, (1, 2, 0, 1), value=0.5), [ex], [tx])


def test_float32_stays_float32():
    x = ember.randn(2, 3, 8, 8)
    w = ember.randn(4, 3, 3, 3)
    for out in (F.conv2d(x, w), F.max_pool2d(x, 2), F.avg_pool2d(x, 2), F.adaptive_avg_pool2d(x, 3),
                F.batch_norm(x, None, None, training=True), F.layer_norm(x, (8,)), F.gelu(x), F.dropout(x),
                F.cross_entropy(x.flatten(1)[:, :5], ember.tensor([0, 1])), F.linear(x, ember.randn(2, 8))):
        assert out.dtype is ember.float32
        assert out._data.dtype == np.float32


# enough channels that a mask constant along a dim by chance is out of reach (below 1e-12)
@pytest.mark.parametrize("shape", [(6, 12, 50), (40, 50), (6, 12, 4, 5, 6), (8, 12, 3, 3)])
def test_dropout2d_drops_along_torchs_dims_with_its_warnings(shape):
    ey, ty = [], []
    for lib, f, out in ((ember, F, ey), (torch, TF, ty)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = f.dropout2d(lib.ones(shape), 0.5).numpy()
        out.append([str(m.message) for m in w])
        out.append([bool((y == y[(slice(None),) * d + (slice(0, 1),)]).all()) for d in range(len(shape))])
    assert ey == ty  # the warnings, and the dims along which the mask is constant


def test_dropout2d_of_one_dim_raises_as_torch():
    with pytest.raises(RuntimeError) as theirs, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        TF.dropout2d(torch.ones(7))
    with pytest.raises(RuntimeError, match=theirs.value.args[0]), pytest.warns(UserWarning, match="1-D input"):
        F.dropout2d(ember.ones(7))


def test_one_hot_of_an_empty_tensor_needs_num_classes_as_torch():
    with pytest.raises(RuntimeError) as theirs:
        TF.one_hot(torch.tensor([], dtype=torch.int64))
    with pytest.raises(RuntimeError, match=theirs.value.args[0]):
        F.one_hot(ember.tensor([], dtype=ember.int64))
    assert F.one_hot(ember.tensor([], dtype=ember.int64), 3).shape == TF.one_hot(torch.tensor([]).long(), 3).shape
