"""interpolate, Upsample layers, pixel/channel shuffles, affine_grid and grid_sample against torch."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import assert_same, to_ember

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

DTYPES = ["float32", "float64"]


def _pair(shape, dtype, seed=0, requires_grad=True):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, generator=g, dtype=getattr(torch, dtype))
    return to_ember(t, requires_grad), t.requires_grad_(requires_grad)


def _check_fwd_bwd(e_fn, t_fn, shape, dtype, seed=0):
    """Same values and same input gradient (for a random upstream gradient) as torch."""
    ex, tx = _pair(shape, dtype, seed)
    tout = t_fn(tx)
    eout = e_fn(ex)
    assert_same(eout, tout.detach())
    up = torch.randn(tout.shape, generator=torch.Generator().manual_seed(seed + 1), dtype=tout.dtype)
    tout.backward(up)
    eout.backward(to_ember(up))
    assert_same(ex.grad, tx.grad)


# ---- interpolate -----------------------------------------------------------------------------

RESIZE_4D = [dict(size=(5, 7)), dict(size=(3, 11)), dict(size=(6, 8)), dict(size=(13, 3)), dict(size=1),
             dict(scale_factor=2), dict(scale_factor=0.5), dict(scale_factor=1.7), dict(scale_factor=(1.5, 0.6)),
             dict(scale_factor=1.1), dict(scale_factor=0.34), dict(scale_factor=2.1),
             dict(scale_factor=1.7, recompute_scale_factor=True),
             dict(scale_factor=(0.34, 2.6), recompute_scale_factor=True)]


# bicubic with a kept size and a scale other than 1 is tested in test_kept_size_with_scale_gradient
# (each case runs in one dtype, alternating, so that every mode meets both)
CASES_4D = [(mode, kw, DTYPES[i % 2]) for mode in ["nearest", "nearest-exact", "bilinear", "bicubic", "area"]
            for i, kw in enumerate(RESIZE_4D) if not (mode == "bicubic" and kw == dict(scale_factor=1.1))]


@pytest.mark.parametrize("mode,kw,dtype", CASES_4D, ids=str)
def test_interpolate_4d(mode, kw, dtype):
    _check_fwd_bwd(lambda x: F.interpolate(x, mode=mode, **kw), lambda x: TF.interpolate(x, mode=mode, **kw),
                   (2, 3, 6, 8), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", [dict(size=(4, 5)), dict(size=(13, 20)), dict(scale_factor=0.3),
                                dict(scale_factor=(0.5, 1.7))], ids=str)
def test_interpolate_lanczos(kw, dtype):
    args = dict(mode="lanczos", antialias=True, **kw)
    _check_fwd_bwd(lambda x: F.interpolate(x, **args), lambda x: TF.interpolate(x, **args), (2, 2, 9, 11), dtype)


@pytest.mark.parametrize("mode,antialias", [("bicubic", False), ("bilinear", True), ("bicubic", True),
                                            ("lanczos", True)])
def test_kept_size_with_scale_gradient(mode, antialias):
    # A size kept with a scale other than 1: torch's CPU backward is not the derivative of its
    # own forward here (plain bicubic interpolates forward but copies the gradient; antialiased
    # modes copy forward but interpolate the gradient).  Ember's gradient is the derivative of
    # the forward: forward against torch, gradient by gradcheck.
    kw = dict(scale_factor=(1.1, 0.45), mode=mode, antialias=antialias)
    ex, tx = _pair((1, 2, 6, 8), "float64")
    assert_same(F.interpolate(ex, **kw), TF.interpolate(tx, **kw).detach())
    assert gradcheck(lambda v: F.interpolate(v, **kw), (ex,))


@pytest.mark.parametrize("shape,scale", [((2, 3, 7), 1.01), ((2, 3, 7), 2.1), ((1, 2, 3, 4, 5), (1.01, 2.1, 1.3))])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_1d_3d_scale_near_one_or_two(shape, scale, mode):
    # 1-d and 3-d nearest sample with 1/scale even when the size is kept or doubled (2-d
    # takes shortcuts there); torch's CPU backward takes the shortcuts, which is not the
    # derivative of its forward.  Forward against torch, gradient by gradcheck.
    ex, tx = _pair(shape, "float64")
    assert_same(F.interpolate(ex, scale_factor=scale, mode=mode),
                TF.interpolate(tx, scale_factor=scale, mode=mode).detach())
    assert gradcheck(lambda v: F.interpolate(v, scale_factor=scale, mode=mode), (ex,))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("kw", [dict(size=(3, 5)), dict(size=(9, 17)), dict(size=(1, 3)), dict(scale_factor=0.3),
                                dict(scale_factor=(1.3, 0.45)), dict(scale_factor=2.5)], ids=str)
def test_interpolate_linear_cubic_options(mode, align_corners, antialias, kw):
    args = dict(mode=mode, align_corners=align_corners, antialias=antialias, **kw)
    dtype = "float64" if antialias else "float32"
    _check_fwd_bwd(lambda x: F.interpolate(x, **args), lambda x: TF.interpolate(x, **args), (2, 2, 7, 9), dtype)


@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("nearest-exact", None), ("area", None),
                                                ("linear", False), ("linear", True)])
@pytest.mark.parametrize("kw,dtype", [(dict(size=3), "float32"), (dict(size=7), "float64"),
                                      (dict(size=13), "float32"), (dict(scale_factor=1.3), "float64"),
                                      (dict(scale_factor=0.4), "float32"), (dict(size=[5]), "float64")], ids=str)
def test_interpolate_1d(mode, align_corners, kw, dtype):
    args = dict(mode=mode, align_corners=align_corners, **kw)
    _check_fwd_bwd(lambda x: F.interpolate(x, **args), lambda x: TF.interpolate(x, **args), (2, 3, 7), dtype)


@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("nearest-exact", None), ("area", None),
                                                ("trilinear", False), ("trilinear", True)])
@pytest.mark.parametrize("kw,dtype", [(dict(size=(3, 5, 4)), "float32"), (dict(size=(7, 2, 9)), "float64"),
                                      (dict(size=(4, 5, 6)), "float32"), (dict(scale_factor=1.6), "float64"),
                                      (dict(scale_factor=(0.5, 1.3, 1.5)), "float32")], ids=str)
def test_interpolate_3d(mode, align_corners, kw, dtype):
    args = dict(mode=mode, align_corners=align_corners, **kw)
    _check_fwd_bwd(lambda x: F.interpolate(x, **args), lambda x: TF.interpolate(x, **args), (2, 2, 4, 5, 6),
                   dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("mode,kw", [("nearest", dict(scale_factor=2)), ("bilinear", dict(size=(7, 3))),
                                     ("bicubic", dict(size=(7, 3))), ("area", dict(size=(3, 4)))], ids=str)
def test_interpolate_half_precision(mode, kw, dtype):
    t = torch.randn(1, 2, 5, 6, generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype))
    assert_same(F.interpolate(to_ember(t), mode=mode, **kw), TF.interpolate(t, mode=mode, **kw))


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_keeps_uint8(mode):
    t = torch.randint(0, 255, (1, 2, 3, 4)).to(torch.uint8)
    assert_same(F.interpolate(to_ember(t), size=(5, 3), mode=mode), TF.interpolate(t, size=(5, 3), mode=mode))


@pytest.mark.parametrize("mode,kw", [("bilinear", dict(scale_factor=1.5)), ("bicubic", dict(size=(3, 5))),
                                     ("bilinear", dict(size=(3, 5), antialias=True)),
                                     ("nearest", dict(scale_factor=1.5)), ("area", dict(size=(3, 2)))])
def test_interpolate_gradcheck(mode, kw):
    x = ember.randn(1, 2, 4, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v: F.interpolate(v, mode=mode, **kw), (x,))


def test_interpolate_double_backward_matches_torch():
    ex, tx = _pair((1, 1, 3, 4), "float64")
    eg, = ember.autograd.grad(F.interpolate(ex, scale_factor=1.5, mode="bicubic").pow(2).sum(), ex,
                              create_graph=True)
    tg, = torch.autograd.grad(TF.interpolate(tx, scale_factor=1.5, mode="bicubic").pow(2).sum(), tx,
                              create_graph=True)
    eg.pow(2).sum().backward()
    tg.pow(2).sum().backward()
    assert_same(ex.grad, tx.grad)


INTERPOLATE_ERRORS = [
    ((1, 4, 4, 4), dict(size=(0, 2))),
    ((1, 4, 4, 4), dict(scale_factor=0.1, mode="bilinear")),
    ((1, 4, 4, 4), dict(size=3, mode="foo")),
    ((2, 3), dict(size=3)),
    ((2, 3, 2, 2, 2, 2), dict(size=3)),
    ((1, 4, 4, 4), dict(size=3, mode="linear")),
    ((1, 4, 4), dict(size=3, mode="bilinear")),
    ((1, 4, 4, 4, 4), dict(size=3, mode="bicubic")),
    ((1, 4, 4, 4), dict(size=(3, 3), scale_factor=2)),
    ((1, 4, 4, 4), dict()),
    ((1, 4, 4, 4), dict(size=(3.5, 3))),
    ((1, 4, 4, 4), dict(size=(3, 3, 3))),
    ((1, 4, 4, 4), dict(scale_factor=(2, 2, 2))),
    ((1, 4, 4, 4), dict(size=3, recompute_scale_factor=True)),
    ((1, 4, 4, 4), dict(size=3, align_corners=True)),
    ((1, 4, 4, 4), dict(size=3, mode="area", align_corners=False)),
    ((1, 4, 4), dict(size=3, mode="linear", antialias=True)),
    ((1, 4, 4, 4), dict(size=3, mode="nearest", antialias=True)),
    ((1, 4, 4, 4), dict(size=3, mode="lanczos")),
    ((1, 4, 4, 4), dict(size=3, mode="lanczos", antialias=True, align_corners=True)),
    ((1, 4, 4), dict(size=3, mode="lanczos")),
]


@pytest.mark.parametrize("shape,kw", INTERPOLATE_ERRORS, ids=str)
def test_interpolate_errors(shape, kw):
    t = torch.randn(*shape)
    with pytest.raises(Exception) as te:
        TF.interpolate(t, **kw)
    with pytest.raises(type(te.value)) as ee:
        F.interpolate(to_ember(t), **kw)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("mode", ["bilinear", "area", "nearest"])
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_interpolate_integer_input_rejected(mode, dtype):
    t = torch.zeros(1, 1, 4, 4, dtype=getattr(torch, dtype))
    with pytest.raises(NotImplementedError):
        TF.interpolate(t, size=3, mode=mode)
    with pytest.raises(NotImplementedError):
        F.interpolate(to_ember(t), size=3, mode=mode)


@pytest.mark.parametrize("name,kw", [("upsample", dict(scale_factor=2, mode="bilinear")),
                                     ("upsample_nearest", dict(size=(3, 5))),
                                     ("upsample_bilinear", dict(scale_factor=1.5))])
def test_deprecated_upsample_functions(name, kw):
    ex, tx = _pair((1, 2, 3, 4), "float32", requires_grad=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(TF, name)(tx, **kw)
    with pytest.warns(UserWarning, match="deprecated"):
        got = getattr(F, name)(ex, **kw)
    assert_same(got, expected)


# ---- Upsample layers ---------------------------------------------------------------------------

UPSAMPLE_LAYERS = [
    ("Upsample", dict(scale_factor=2)),
    ("Upsample", dict(size=(3, 5), mode="bilinear")),
    ("Upsample", dict(scale_factor=(1.5, 2), mode="bicubic", align_corners=True)),
    ("Upsample", dict(scale_factor=1.5, mode="nearest", recompute_scale_factor=True)),
    ("Upsample", dict(size=4, mode="nearest-exact")),
    ("UpsamplingNearest2d", dict(scale_factor=2)),
    ("UpsamplingNearest2d", dict(size=(5, 3))),
    ("UpsamplingBilinear2d", dict(scale_factor=2.5)),
    ("UpsamplingBilinear2d", dict(size=(5, 3))),
]


@pytest.mark.parametrize("name,kw", UPSAMPLE_LAYERS, ids=str)
def test_upsample_layers(name, kw):
    em, tm = getattr(ember.nn, name)(**kw), getattr(torch.nn, name)(**kw)
    assert repr(em) == repr(tm)
    for attr in ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"):
        assert getattr(em, attr) == getattr(tm, attr)
    assert em.state_dict().keys() == tm.state_dict().keys()
    _check_fwd_bwd(em, tm, (2, 3, 4, 5), "float32")


# ---- pixel and channel shuffles ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((18, 2, 3), 3), ((2, 3, 4, 2, 1), 2), ((1, 5, 2, 2), 1)])
def test_pixel_shuffle_and_unshuffle(shape, r, dtype):
    _check_fwd_bwd(lambda x: F.pixel_shuffle(x, r), lambda x: TF.pixel_shuffle(x, r), shape, dtype)
    *b, c, h, w = shape
    ushape = tuple(b) + (c // (r * r), h * r, w * r)
    _check_fwd_bwd(lambda x: F.pixel_unshuffle(x, r), lambda x: TF.pixel_unshuffle(x, r), ushape, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,g", [((2, 6, 3, 4), 2), ((2, 6, 3, 4), 3), ((1, 8, 5), 4), ((2, 6, 2, 1, 2), 6)])
def test_channel_shuffle(shape, g, dtype):
    _check_fwd_bwd(lambda x: F.channel_shuffle(x, g), lambda x: TF.channel_shuffle(x, g), shape, dtype)


SHUFFLE_ERRORS = [
    ("pixel_shuffle", (4, 4), 2), ("pixel_shuffle", (1, 5, 4, 4), 2), ("pixel_shuffle", (1, 4, 4, 4), 0),
    ("pixel_unshuffle", (1, 4, 5, 4), 2), ("pixel_unshuffle", (1, 4, 4, 5), 2), ("pixel_unshuffle", (4, 4), 2),
    ("pixel_unshuffle", (1, 4, 4, 4), -1), ("channel_shuffle", (1, 5, 4, 4), 2), ("channel_shuffle", (2, 4), 2),
    ("channel_shuffle", (1, 4, 3), 0),
]


@pytest.mark.parametrize("name,shape,arg", SHUFFLE_ERRORS, ids=str)
def test_shuffle_errors(name, shape, arg):
    t = torch.randn(*shape)
    with pytest.raises(RuntimeError) as te:
        getattr(TF, name)(t, arg)
    with pytest.raises(RuntimeError) as ee:
        getattr(F, name)(to_ember(t), arg)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("name,arg,shape", [("PixelShuffle", 2, (1, 8, 2, 3)), ("PixelUnshuffle", 3, (2, 1, 6, 3)),
                                            ("ChannelShuffle", 2, (2, 4, 3, 3))])
def test_shuffle_layers(name, arg, shape):
    em, tm = getattr(ember.nn, name)(arg), getattr(torch.nn, name)(arg)
    assert repr(em) == repr(tm)
    assert em.state_dict().keys() == tm.state_dict().keys()
    _check_fwd_bwd(em, tm, shape, "float32")


# ---- affine_grid and grid_sample -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3), (2, 3, 4, 2, 3)], ids=str)
def test_affine_grid(size, align_corners, dtype):
    d = len(size) - 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's warning for unit sizes with align_corners
        _check_fwd_bwd(lambda t: F.affine_grid(t, size, align_corners=align_corners),
                       lambda t: TF.affine_grid(t, size, align_corners=align_corners), (2, d, d + 1), dtype)


AFFINE_ERRORS = [((1, 2, 3), (1, 1, 2)), ((1, 3, 3), (1, 1, 2, 2)), ((1, 2, 3), (1, 1, 0, 2)),
                 ((1, 2, 3), (1, 1, 2, 2, 2)), ((2, 2, 3), (1, 1, 3, 2))]


@pytest.mark.parametrize("theta_shape,size", AFFINE_ERRORS, ids=str)
def test_affine_grid_errors(theta_shape, size):
    t = torch.randn(*theta_shape)
    with pytest.raises(Exception) as te:
        TF.affine_grid(t, size, align_corners=False)
    with pytest.raises(type(te.value)) as ee:
        F.affine_grid(to_ember(t), size, align_corners=False)
    assert str(ee.value) == str(te.value).replace("torch.Size", "ember.Size")


def test_affine_grid_warnings_and_integer_theta():
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="unit-size grids"):
        F.affine_grid(ember.zeros(1, 2, 3), (1, 1, 1, 2), align_corners=True)
    with pytest.raises(ValueError, match="floating point type"):
        F.affine_grid(ember.zeros(1, 2, 3, dtype=ember.int64), (1, 1, 2, 2), align_corners=False)


def _grid_pair(shape, dtype, seed):
    # points spread past the borders, so that padding modes matter
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(*shape, generator=g, dtype=getattr(torch, dtype)) * 2.6 - 1.3
    return to_ember(t, True), t.requires_grad_(True)


def _check_grid_sample(ishape, gshape, dtype, **kw):
    ex, tx = _pair(ishape, dtype, 0)
    eg, tg = _grid_pair(gshape, dtype, 1)
    tout = TF.grid_sample(tx, tg, **kw)
    eout = F.grid_sample(ex, eg, **kw)
    assert_same(eout, tout.detach())
    up = torch.randn(tout.shape, generator=torch.Generator().manual_seed(2), dtype=tout.dtype)
    tout.backward(up)
    eout.backward(to_ember(up))
    assert_same(ex.grad, tx.grad)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else {}
    assert_same(eg.grad, tg.grad, **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
def test_grid_sample_4d(mode, padding_mode, align_corners, dtype):
    _check_grid_sample((2, 3, 5, 6), (2, 4, 7, 2), dtype, mode=mode, padding_mode=padding_mode,
                       align_corners=align_corners)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
def test_grid_sample_5d(mode, padding_mode, align_corners, dtype):
    _check_grid_sample((2, 2, 3, 4, 5), (2, 3, 2, 4, 3), dtype, mode=mode, padding_mode=padding_mode,
                       align_corners=align_corners)


@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
@pytest.mark.parametrize("ishape,gshape", [((1, 1, 1, 4), (1, 2, 3, 2)), ((1, 2, 1, 1, 3), (1, 2, 1, 2, 3))],
                         ids=str)
def test_grid_sample_unit_sizes(ishape, gshape, padding_mode):
    _check_grid_sample(ishape, gshape, "float64", padding_mode=padding_mode, align_corners=True)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_gradcheck(mode):
    x = ember.randn(1, 2, 3, 4, dtype=ember.float64, requires_grad=True)
    g = (ember.rand(1, 2, 3, 2, dtype=ember.float64) * 2.2 - 1.1).requires_grad_()
    assert gradcheck(lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode="border", align_corners=False), (x, g))


@pytest.mark.parametrize("mode,padding_mode", [("bilinear", "zeros"), ("bicubic", "reflection"), ("nearest", "border")])
def test_grid_sample_double_backward_matches_torch(mode, padding_mode):
    ex, tx = _pair((1, 2, 3, 4), "float64")
    eg, tg = _grid_pair((1, 2, 3, 2), "float64", 1)
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=False)
    egrads = ember.autograd.grad(F.grid_sample(ex, eg, **kw).pow(2).sum(), (ex, eg), create_graph=True)
    tgrads = torch.autograd.grad(TF.grid_sample(tx, tg, **kw).pow(2).sum(), (tx, tg), create_graph=True)
    (egrads[0].pow(2).sum() + egrads[1].pow(2).sum()).backward()
    (tgrads[0].pow(2).sum() + tgrads[1].pow(2).sum()).backward()
    assert_same(ex.grad, tx.grad)
    assert_same(eg.grad, tg.grad)


def test_grid_sample_gradgradcheck():
    x = ember.randn(1, 1, 3, 3, dtype=ember.float64, requires_grad=True)
    g = (ember.rand(1, 2, 2, 2, dtype=ember.float64) * 2 - 1).requires_grad_()
    assert gradgradcheck(lambda a, b: F.grid_sample(a, b, align_corners=False), (x, g))


def test_affine_grid_then_grid_sample_identity():
    x = ember.randn(2, 3, 4, 5)
    theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 2)
    grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=False)
    assert_same(F.grid_sample(x, grid, align_corners=False), torch.from_numpy(np.array(x.numpy())))


def test_grid_sample_warns_without_align_corners():
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 1, 2))


GRID_ERRORS = [
    ((1, 4, 4, 4), (1, 3, 3, 2), dict(mode="x")),
    ((1, 4, 4, 4), (1, 3, 3, 2), dict(padding_mode="x")),
    ((1, 4, 4, 4), (2, 3, 3, 2), {}),
    ((1, 4, 4, 4), (1, 3, 3, 3), {}),
    ((1, 4, 4, 4), (1, 3, 3, 3, 3), {}),
    ((1, 2, 3, 3, 3), (1, 3, 3, 3, 3), dict(mode="bicubic")),
    ((1, 4, 0, 4), (1, 3, 3, 2), {}),
    ((4, 4, 4), (1, 3, 3, 2), {}),
    ((1, 4, 4), (1, 3, 2), {}),
]


@pytest.mark.parametrize("ishape,gshape,kw", GRID_ERRORS, ids=str)
def test_grid_sample_errors(ishape, gshape, kw):
    ti, tg = torch.randn(*ishape), torch.randn(*gshape)
    with pytest.raises(Exception) as te:
        TF.grid_sample(ti, tg, align_corners=False, **kw)
    with pytest.raises(type(te.value)) as ee:
        F.grid_sample(to_ember(ti), to_ember(tg), align_corners=False, **kw)
    assert str(ee.value) == str(te.value)


def test_grid_sample_dtype_errors():
    for ti, tg, err in [(torch.randn(1, 1, 2, 2), torch.zeros(1, 1, 1, 2, dtype=torch.float64), RuntimeError),
                        (torch.zeros(1, 1, 2, 2, dtype=torch.int64), torch.zeros(1, 1, 1, 2, dtype=torch.int64),
                         NotImplementedError)]:
        with pytest.raises(err):
            TF.grid_sample(ti, tg, align_corners=False)
        with pytest.raises(err):
            F.grid_sample(to_ember(ti), to_ember(tg), align_corners=False)
