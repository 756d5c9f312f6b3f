"""Convolutions over 1-3 spatial dims, transposed convolutions and fold/unfold, checked
against torch on the same inputs: forward values, dtypes and shapes, gradients of input,
weight and bias, module reprs and state_dicts, and torch's error types."""

import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from conftest import assert_same, to_ember, to_torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

TOL = dict(rtol=1e-4, atol=1e-4)


def _leaf(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype, requires_grad=True)


def _compare(fe, ft, tensors, *args, **kwargs):
    """Run ``ft`` on the torch ``tensors`` (None allowed) and ``fe`` on ember copies; compare
    the results and the gradients of every tensor for the same output gradient."""
    es = [None if t is None else to_ember(t) for t in tensors]
    yt, ye = ft(*tensors, *args, **kwargs), fe(*es, *args, **kwargs)
    assert_same(ye, yt, **TOL)
    g = torch.randn_like(yt)
    yt.backward(g)
    ye.backward(to_ember(g))
    for e, t in zip(es, tensors):
        if t is not None:
            assert_same(e.grad, t.grad, **TOL)
    return ye, yt


def _raises_like(fe, ft, *args, **kwargs):
    """ember raises the exception type torch raises for the same call."""
    with pytest.raises(Exception) as te:
        ft(*args, **kwargs)
    eargs = [to_ember(a) if isinstance(a, torch.Tensor) else a for a in args]
    with pytest.raises(te.type):
        fe(*eargs, **kwargs)


# ---- convolution, functional ----------------------------------------------------------

CONV_CASES = [
    dict(),
    dict(stride=2, padding=1),
    dict(padding="same", dilation=2),
    dict(padding="valid", groups=2),
    dict(stride=(2, 1, 3), padding=(1, 0, 2), dilation=(1, 2, 1), groups=2),
    dict(padding=(3, 1, 4)),  # padding beyond the kernel's reach: borders see only zeros
    dict(padding="same"),  # even kernel: one more at the end
]
SPATIAL = {1: (9,), 2: (7, 8), 3: (5, 6, 7)}
KERNEL = {1: (3,), 2: (3, 2), 3: (3, 2, 2)}
FUNCS = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}


def _per_dim(kw, nd):
    """Tuple arguments of CONV_CASES cut to ``nd`` spatial dims."""
    return {k: (v[:nd] if isinstance(v, tuple) else v) for k, v in kw.items()}


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_matches_torch(nd, kw, bias):
    kw = _per_dim(kw, nd)
    groups = kw.get("groups", 1)
    fe, ft = FUNCS[nd]
    tensors = [_leaf(2, 4, *SPATIAL[nd]), _leaf(6, 4 // groups, *KERNEL[nd]), _leaf(6) if bias else None]
    _compare(fe, ft, tensors, **kw)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_unbatched_float64_and_node_name(nd):
    fe, ft = FUNCS[nd]
    _compare(fe, ft, [_leaf(3, *SPATIAL[nd], dtype=torch.float64), _leaf(5, 3, *KERNEL[nd], dtype=torch.float64),
                      _leaf(5, dtype=torch.float64)], stride=2, padding=1)
    ye, yt = _compare(fe, ft, [_leaf(1, 3, *SPATIAL[nd]), _leaf(5, 3, *KERNEL[nd]), _leaf(5)])
    assert type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__ == "ConvolutionBackward0"


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_an_empty_batch_with_a_bias_as_torch(nd):
    # zero gradients for weight and bias, and an empty one for the input
    fe, ft = FUNCS[nd]
    _compare(fe, ft, [_leaf(0, 4, *SPATIAL[nd]), _leaf(6, 4, *KERNEL[nd]), _leaf(6)], padding=1)


@pytest.mark.parametrize("out_channels", [6, 2])  # input gradient by scatter-add, and as a convolution
def test_conv3d_in_chunks_of_images(monkeypatch, out_channels):
    """Column buffers built per chunk of images give the same result (3 spatial dims)."""
    from ember.ops import conv
    monkeypatch.setattr(conv, "_CHUNK_BYTES", 1)
    monkeypatch.setattr(conv, "_KEEP_BYTES", 0)
    _compare(F.conv3d, TF.conv3d, [_leaf(3, 4, 4, 5, 3), _leaf(out_channels, 2, 2, 3, 2), _leaf(out_channels)],
             padding=1, groups=2)


@pytest.mark.parametrize("call", [
    lambda f, x, w: f(x, w, padding="same", stride=2),     # 'same' with a stride
    lambda f, x, w: f(x, w, padding="full"),                # unknown padding string
    lambda f, x, w: f(x, w, padding=-1),
    lambda f, x, w: f(x, w, stride=(1, 1)),                 # wrong number of values
    lambda f, x, w: f(x, w, padding=(1, 1)),
    lambda f, x, w: f(x, w, stride=0),
    lambda f, x, w: f(x, w, dilation=0),
    lambda f, x, w: f(x, w, groups=0),
    lambda f, x, w: f(x, w, groups=3),                      # channels not divisible
    lambda f, x, w: f(x[:, :2], w),                         # channel mismatch
    lambda f, x, w: f(x[0, 0], w),                          # too few input dims
    lambda f, x, w: f(x, w[0]),                             # weight of the wrong rank
    lambda f, x, w: f(x[..., :2], w),                       # kernel larger than the input
    lambda f, x, w: f(x.double(), w),                       # dtypes differ
    lambda f, x, w: f(x, w, w[0, 0, 0, 0]),                 # bias of the wrong size
])
def test_conv3d_errors_match_torch(call):
    x, w = torch.randn(2, 4, 5, 5, 5), torch.randn(6, 4, 3, 3, 3)
    with pytest.raises(Exception) as te:
        call(TF.conv3d, x, w)
    with pytest.raises(te.type):
        call(F.conv3d, to_ember(x), to_ember(w))


def test_conv_same_with_stride_message():
    x, w = ember.randn(1, 2, 5, 5, 5), ember.randn(3, 2, 3, 3, 3)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv3d(x, w, padding="same", stride=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv3d(2, 3, 3, padding="same", stride=2)


def test_conv_gradcheck_and_double_backward():
    x = ember.randn(1, 2, 4, 3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 1, 2, 2, 3, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=1, groups=2), (x, w, b))
    assert gradgradcheck(lambda x, w: F.conv3d(x, w, padding=(0, 1, 1), dilation=(1, 1, 2), groups=2), (x, w))


# ---- convolution, modules --------------------------------------------------------------

CLASSES = {1: (nn.Conv1d, tnn.Conv1d), 2: (nn.Conv2d, tnn.Conv2d), 3: (nn.Conv3d, tnn.Conv3d)}


def _copy_params(em, tm):
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("kw", [dict(padding=(2, 1, 1), stride=2, groups=2),
                                dict(padding="same", dilation=2, bias=False)])
def test_conv_module_matches_torch(nd, padding_mode, kw):
    kw = _per_dim(kw, nd)
    ce, ct = CLASSES[nd]
    tm = ct(4, 6, KERNEL[nd], padding_mode=padding_mode, **kw)
    em = ce(4, 6, KERNEL[nd], padding_mode=padding_mode, **kw)
    assert repr(em) == repr(tm)
    assert {k: tuple(v.shape) for k, v in em.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    _copy_params(em, tm)
    tx = _leaf(2, 4, *SPATIAL[nd])
    ex = to_ember(tx)
    yt, ye = tm(tx), em(ex)
    assert_same(ye, yt, **TOL)
    g = torch.randn_like(yt)
    yt.backward(g)
    ye.backward(to_ember(g))
    assert_same(ex.grad, tx.grad, **TOL)
    tparams = dict(tm.named_parameters())
    for name, ep in em.named_parameters():
        assert_same(ep.grad, tparams[name].grad, **TOL)


def test_conv_module_default_init_range():
    """kaiming-uniform(a=sqrt(5)) weight and bias within 1/sqrt(fan_in), as torch."""
    m = nn.Conv3d(4, 6, (3, 2, 2), groups=2)
    bound = 1 / (2 * 3 * 2 * 2) ** 0.5
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    assert m.weight.dtype is ember.float32 and not m.transposed


@pytest.mark.parametrize("kw", [dict(groups=0), dict(groups=3), dict(in_channels=3, groups=2),
                                dict(padding="full"), dict(padding="same", stride=2),
                                dict(padding_mode="mirror")])
def test_conv_module_errors_match_torch(kw):
    args = dict(in_channels=4, out_channels=6, kernel_size=3) | kw
    _raises_like(nn.Conv2d, tnn.Conv2d, **args)


# ---- transposed convolution ----------------------------------------------------------

TFUNCS = {1: (F.conv_transpose1d, TF.conv_transpose1d), 2: (F.conv_transpose2d, TF.conv_transpose2d),
          3: (F.conv_transpose3d, TF.conv_transpose3d)}
TRANSPOSED_CASES = [
    dict(),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 3, 1), padding=(0, 1, 1), dilation=(1, 2, 2), output_padding=(1, 2, 1), groups=2),
    dict(dilation=2, output_padding=1, padding=2),  # output padding at stride 1
    dict(groups=2, padding=1),
]


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", TRANSPOSED_CASES)
@pytest.mark.parametrize("channels", [(4, 6), (6, 2)])
def test_conv_transpose_matches_torch(nd, kw, channels):
    kw = _per_dim(kw, nd)
    groups = kw.get("groups", 1)
    cin, cout = channels
    fe, ft = TFUNCS[nd]
    tensors = [_leaf(2, cin, *SPATIAL[nd][::-1][:nd]), _leaf(cin, cout // groups, *KERNEL[nd]), _leaf(cout)]
    ye, yt = _compare(fe, ft, tensors, **kw)
    assert type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__


def test_conv_transpose_unbatched_no_bias():
    _compare(F.conv_transpose2d, TF.conv_transpose2d, [_leaf(3, 4, 5), _leaf(3, 2, 3, 3), None], stride=2)


@pytest.mark.parametrize("call", [
    lambda f, x, w: f(x, w, output_padding=1),              # not below stride or dilation
    lambda f, x, w: f(x, w, padding="same"),
    lambda f, x, w: f(x, w[:3]),                            # channel mismatch
    lambda f, x, w: f(x, w, groups=3),
    lambda f, x, w: f(x[0, 0], w),
    lambda f, x, w: f(x, w, torch.randn(5) if isinstance(x, torch.Tensor) else ember.randn(5)),
    lambda f, x, w: f(x, w, output_padding=(1, 0)),
    lambda f, x, w: f(x, w, stride=0),
])
def test_conv_transpose3d_errors_match_torch(call):
    x, w = torch.randn(2, 4, 3, 3, 3), torch.randn(4, 4, 3, 3, 3)
    with pytest.raises(Exception) as te:
        call(TF.conv_transpose3d, x, w)
    with pytest.raises(te.type):
        call(F.conv_transpose3d, to_ember(x), to_ember(w))


def test_conv_transpose_gradcheck_and_double_backward():
    x = ember.randn(1, 2, 2, 3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 1, 2, 2, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, dtype=ember.float64, requires_grad=True)
    fn = lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(lambda x, w: fn(x, w, None), (x, w))


TCLASSES = {1: (nn.ConvTranspose1d, tnn.ConvTranspose1d), 2: (nn.ConvTranspose2d, tnn.ConvTranspose2d),
            3: (nn.ConvTranspose3d, tnn.ConvTranspose3d)}


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1, groups=2, bias=False),
                                dict(stride=3, dilation=2)])
def test_conv_transpose_module_matches_torch(nd, kw):
    ce, ct = TCLASSES[nd]
    tm, em = ct(4, 6, KERNEL[nd], **kw), ce(4, 6, KERNEL[nd], **kw)
    assert repr(em) == repr(tm)
    assert {k: tuple(v.shape) for k, v in em.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    _copy_params(em, tm)
    tx = _leaf(2, 4, *SPATIAL[nd])
    _compare(em, tm, [tx])
    # output_size picks the output padding: every size in the valid range, with and without leading dims
    base = tm(tx).shape[2:]
    for extra in range(tm.stride[0]):
        size = [base[0] + extra - tm.output_padding[0]] + list(base[1:])
        assert_same(em(to_ember(tx), output_size=size), tm(tx, output_size=size), **TOL)
        assert_same(em(to_ember(tx[0]), output_size=[6] + size), tm(tx[0], output_size=[6] + size), **TOL)


@pytest.mark.parametrize("output_size", [[1, 1], [30, 30], [11]])
def test_conv_transpose_output_size_errors(output_size):
    tm = tnn.ConvTranspose2d(4, 6, 3, stride=2)
    em = nn.ConvTranspose2d(4, 6, 3, stride=2)
    x = torch.randn(1, 4, 5, 5)
    with pytest.raises(ValueError):
        tm(x, output_size=output_size)
    with pytest.raises(ValueError):
        em(to_ember(x), output_size=output_size)


def test_conv_transpose_padding_mode_error():
    _raises_like(nn.ConvTranspose2d, tnn.ConvTranspose2d, 4, 6, 3, padding_mode="reflect")


# ---- fold / unfold -------------------------------------------------------------------

BLOCK_CASES = [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
               dict(kernel_size=3, stride=2, padding=(0, 2))]


@pytest.mark.parametrize("kw", BLOCK_CASES)
@pytest.mark.parametrize("batched", [True, False])
def test_unfold_and_fold_match_torch(kw, batched):
    shape = (2, 3, 7, 8) if batched else (3, 7, 8)
    ye, yt = _compare(F.unfold, TF.unfold, [_leaf(*shape)], **kw)
    assert type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__ == "Im2ColBackward0"
    ye, yt = _compare(F.fold, TF.fold, [_leaf(*yt.shape)], (7, 8), **kw)
    assert type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__ == "Col2ImBackward0"


def test_fold_unfold_float64_gradcheck_and_double_backward():
    x = ember.randn(1, 2, 4, 5, dtype=ember.float64, requires_grad=True)
    assert gradgradcheck(lambda x: F.unfold(x, (2, 3), padding=1, stride=(1, 2)) ** 2, (x,))
    c = ember.randn(1, 6, 4, dtype=ember.float64, requires_grad=True)
    assert gradgradcheck(lambda c: F.fold(c, (4, 5), (3, 2), dilation=(1, 2), stride=(1, 2)) ** 2, (c,))


@pytest.mark.parametrize("call", [
    lambda f, x: f.unfold(x, 2, padding=-1),
    lambda f, x: f.unfold(x, 7),                 # no block fits
    lambda f, x: f.unfold(x, 0),
    lambda f, x: f.unfold(x, 2, stride=0),
    lambda f, x: f.unfold(x, 2, dilation=0),
    lambda f, x: f.unfold(x, (2, 2, 2)),
    lambda f, x: f.unfold(x[0, 0], 2),           # 2-d input
    lambda f, x: f.unfold(x.int(), 2),           # integers are not supported
    lambda f, x: f.fold(x[0], (4, 4), 2),        # 3 blocks of 5, not 9
    lambda f, x: f.fold(x, (4, 4), 2),           # 4-d input
    lambda f, x: f.fold(x[0, :, :2].reshape(2, 5), (4, 4), 2),   # 2 rows not divisible by 4
    lambda f, x: f.fold(x[0, 0, :4, :3].reshape(4, 3), (1, 1), 2),  # output smaller than a block
])
def test_fold_unfold_errors_match_torch(call):
    x = torch.randn(2, 4, 5, 5)
    with pytest.raises(Exception) as te:
        call(TF, x)
    with pytest.raises(te.type):
        call(F, to_ember(x))


@pytest.mark.parametrize("args", [dict(output_size=(4, 5), kernel_size=2, stride=2),
                                  dict(output_size=3, kernel_size=2, dilation=(1, 2), padding=1, stride=2)])
def test_fold_modules_match_torch(args):
    tm, em = tnn.Fold(**args), nn.Fold(**args)
    assert repr(em) == repr(tm) and em.state_dict().keys() == tm.state_dict().keys()
    unfold_args = {k: v for k, v in args.items() if k != "output_size"}
    tu, eu = tnn.Unfold(**unfold_args), nn.Unfold(**unfold_args)
    assert repr(eu) == repr(tu)
    tx = _leaf(2, 3, *((args["output_size"],) * 2 if isinstance(args["output_size"], int) else args["output_size"]))
    cols = _compare(eu, tu, [tx])[1]
    _compare(em, tm, [_leaf(*cols.shape)])


def test_fold_is_the_adjoint_of_unfold():
    """<unfold(x), c> == <x, fold(c)> (hand-derived identity, checked here besides torch)."""
    x, c = ember.randn(2, 3, 6, 7, dtype=ember.float64), ember.randn(2, 12, 16, dtype=ember.float64)
    lhs = float((F.unfold(x, 2, padding=1, stride=2) * c).sum())
    rhs = float((x * F.fold(c, (6, 7), 2, padding=1, stride=2)).sum())
    assert lhs == pytest.approx(rhs, rel=1e-12)
    assert to_torch(x).shape == (2, 3, 6, 7)
