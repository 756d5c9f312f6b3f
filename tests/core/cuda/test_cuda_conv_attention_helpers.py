"""The Python side of the convolution and attention kernels, on the CPU: the convolution's
geometry and output sizes against torch, the image chunks, the depthwise choice, and the
attention's broadcasting plan (its mask strides address the element broadcasting gives)
and grid arithmetic."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from ember.cuda.kernels import attention, conv
from ember.ops.conv import _out_size

GEOMETRIES = [((9, 8), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
              ((13, 11), (3, 2), (2, 1), ((1, 1), (0, 0)), (1, 2)),
              ((7, 17), (2, 5), (3, 2), ((0, 1), (2, 2)), (2, 1)),  # 'same'-style: one more after than before
              ((1, 1), (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1)),
              ((17,), (4,), (3,), ((2, 2),), (2,)),
              ((5, 7, 6), (2, 3, 3), (1, 2, 1), ((1, 0), (1, 1), (0, 2)), (2, 1, 2))]


@pytest.mark.parametrize("size,k,s,pad,d", GEOMETRIES, ids=str)
def test_conv_geometry_and_output_size_as_torch(size, k, s, pad, d):
    nd = len(size)
    geo = conv.geometry((2, 3) + size, (4, 3) + k, s, pad, d)
    x = torch.zeros((2, 3) + size)
    padded = TF.pad(x, [v for lo_hi in reversed(pad) for v in lo_hi])
    out = getattr(TF, f"conv{nd}d")(padded, torch.zeros((4, 3) + k), stride=s, dilation=d)
    lead = (1,) * (3 - nd)
    assert geo.out == (geo.OD, geo.OH, geo.OW) == lead + tuple(out.shape[2:])
    assert (geo.kd, geo.kh, geo.kw) == lead + k and (geo.sd, geo.sh, geo.sw) == lead + s
    assert (geo.dd, geo.dh, geo.dw) == lead + d
    assert (geo.pd, geo.ph, geo.pw) == (0,) * (3 - nd) + tuple(lo for lo, _ in pad)
    assert (geo.D, geo.H, geo.W) == lead + size
    for n, kk, ss, (lo, hi), dd, o in zip(size, k, s, pad, d, out.shape[2:]):
        assert conv.out_size(n, kk, ss, lo, hi, dd) == _out_size(n, kk, ss, lo, hi, dd) == o
    args = geo.args()
    assert len(args) == 18 and all(type(a) is np.int64 for a in args)
    # the output gradient's size, when given, is taken as it is (a transposed convolution's padded input)
    assert conv.geometry((2, 3) + size, (4, 3) + k, s, pad, d, out.shape[2:]) == geo


def test_conv_image_chunks_bound_the_columns():
    assert conv.chunks(0, 100) == []
    assert conv.chunks(5, 100, limit=1000) == [(0, 5)]
    assert conv.chunks(5, 100, limit=250) == [(0, 2), (2, 4), (4, 5)]
    assert conv.chunks(3, 10 ** 12, limit=1000) == [(0, 1), (1, 2), (2, 3)]  # at least one image a chunk
    for n, per, limit in itertools.product((1, 7, 64), (1, 333, 4096), (1000, 1 << 20)):
        parts = conv.chunks(n, per, limit)
        assert parts[0][0] == 0 and parts[-1][1] == n and all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
        assert all(hi - lo == 1 or (hi - lo) * per <= limit for lo, hi in parts)


def test_conv_depthwise_choice_and_guards():
    assert conv.depthwise((2, 8, 5, 5), (8, 1, 3, 3), 8)
    assert conv.depthwise((2, 8, 5, 5), (24, 1, 3, 3), 8)  # a channel multiplier of 3
    assert not conv.depthwise((2, 8, 5, 5), (8, 2, 3, 3), 4)  # two channels a group: dense
    assert not conv.depthwise((2, 1, 5, 5), (4, 1, 3, 3), 1)  # one group: dense
    assert conv.applies(3) and conv.applies(4) and conv.applies(5) and not conv.applies(6)
    x = np.zeros((1, 2, 3, 3), np.float32)
    assert not conv.accepts(x, x) and not attention.accepts(x, x, x)  # numpy stays on its own path


MASKS = [(None, (2, 3)), ((19, 21), (2, 3)), ((2, 1, 19, 21), (2, 3)), ((3, 1, 21), (2, 3)), ((21,), (2, 3)),
         ((2, 3, 1, 1), (2, 3)), ((19, 1), (3,)), ((4, 19, 21), (4,)), ((), ())]


@pytest.mark.parametrize("mshape,lead", MASKS, ids=str)
def test_attention_plan_addresses_the_broadcast_mask(mshape, lead):
    L, S, E, Ev = 19, 21, 8, 5
    p = attention.plan(lead + (L, E), lead + (S, E), lead + (S, Ev), mshape)
    full_lead = lead if mshape is None else tuple(np.broadcast_shapes(lead, tuple(mshape[:-2])))
    assert p.lead == full_lead and (p.L, p.S, p.E, p.Ev) == (L, S, E, Ev)
    assert (p.batch, p.heads) == ((1, 1) + full_lead)[-2:]
    if mshape is None:
        assert p.mask_strides == (0, 0, 0, 0)
        return
    mask = np.random.default_rng(0).standard_normal(mshape)
    want = np.broadcast_to(mask, full_lead + (L, S)).reshape(p.batch, p.heads, L, S)
    flat = mask.reshape(-1)  # the kernel reads the mask made contiguous in its own shape
    b, h, i, j = np.indices((p.batch, p.heads, L, S))
    sb, sh, sl, ss = p.mask_strides
    np.testing.assert_array_equal(flat[b * sb + h * sh + i * sl + j * ss], want)


def test_attention_plan_refuses_what_the_kernels_do_not_take():
    assert attention.plan((2, 3, 4, 5, 8), (2, 3, 4, 5, 8), (2, 3, 4, 5, 8)) is None  # three leading dims
    assert attention.plan((2, 5, 8), (2, 6, 8), (2, 6, 4), (3, 5, 6)) is None  # the mask's batch does not broadcast
    assert attention.plan((5, 8), (6, 8), (6, 4), (5, 7)) is None  # nor its keys
    assert attention.plan((5, 129), (6, 129), (6, 4)) is None  # head dim above E_MAX
    assert attention.plan((5, 8), (6, 8), (6, 129)) is None
    assert attention.plan((5, 0), (6, 0), (6, 4)) is None
    assert attention.plan((5, 128), (6, 128), (6, 128)) is not None
    assert attention.plan((2, 1, 5, 8), (1, 3, 6, 8), (2, 3, 6, 4)).lead == (2, 3)  # leading dims broadcast


def test_attention_grid_and_shared_memory():
    assert attention.blocks(0, 16, 6) == 0
    assert attention.blocks(1, 16, 6) == 6
    assert attention.blocks(17, 16, 6) == 12
    assert attention.blocks(32, 16, 1) == 2
    for dtype, (bq, bk) in attention.TILES.items():
        for kernel in ("forward", "backward_kv", "backward_q"):
            assert 0 < attention.shared_bytes(kernel, dtype) <= attention.SHARED_LIMIT
        assert 1 <= bq <= attention.THREADS and 1 <= bk <= attention.THREADS  # one thread per row's softmax
