"""Convolutions over 1, 2 or 3 spatial dims (torch.nn.functional.conv1d/2d/3d,
conv_transpose1d/2d/3d, unfold, fold) as a few large matrix products.

The input is unfolded with a strided view (no Python loop over pixels) into a column
matrix ``[C*prod(k), N*prod(out)]`` and multiplied by the weight matrix ``[O, C*prod(k)]``.
The gradients are the same products transposed, plus a col2im that adds the columns back
with one loop over the kernel offsets.  Three ops close the family under
differentiation, so double backward works: the convolution (y = conv(x, w)), its input
gradient (a transposed convolution of the output gradient) and its weight gradient;
each one's gradient rule is written with the other two.  A transposed convolution is the
input-gradient kernel run forward.  Every kernel works on any number of spatial dims.

For numpy float32/float64 arrays the three array kernels run as compiled kernels
(``cpu/kernels/conv.py``: columns built per cache-sized block beside the products, direct
depthwise convolution; below ``KERNEL_MIN_MACS``, the forward as one product, its
columns kept for the weight gradient, or as direct passes when none are kept, and the
stride-1 input gradient as one product and a flat col2im), and dense 3x3 stride-1 2-d
convolutions over enough tiles as Winograd F(2x2, 3x3) (``cpu/kernels/winograd.py``, all
three: forward and both gradients); the numpy code here is their reference. cupy
float32/float64 arrays with 1 or 2 spatial dims take the CUDA kernels for all three
(``cuda/kernels/conv.py``: im2col and col2im around cuBLAS products, direct depthwise
kernels); 3-d convolutions and other dtypes run the code here on cupy.
"""

from __future__ import annotations

import itertools
import math

from .._autocast import autocast_op
from .._blas import matmul as blas_matmul
from .._memory_format import keep_format
from .._tensor import Tensor, _make
from ..backends import NUMPY, backend_of_array
from ..cpu import kernels
from ..cuda.kernels import conv as cuda_conv
from ._helpers import _ndarray, be, check_same_device, needs_grad, record

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


# ---- array kernels (pad: one (low, high) pair per spatial dim) ---------------------------

def _pad(xp, x, pad):
    if not any(lo or hi for lo, hi in pad):
        return x
    return xp.pad(x, ((0, 0), (0, 0)) + tuple(pad))


def _windows(xp, xpad, ksize, stride, dilation, osize):
    """View ``[N, C, *out, *k]`` of the receptive fields of a padded input."""
    strides = xpad.strides
    sp = strides[2:]
    return xp.lib.stride_tricks.as_strided(
        xpad, xpad.shape[:2] + tuple(osize) + tuple(ksize),
        strides[:2] + tuple(a * s for a, s in zip(sp, stride)) + tuple(a * d for a, d in zip(sp, dilation)))


def _cols(xp, xpad, ksize, stride, dilation, osize):
    """The column matrix ``[C*prod(k), N*prod(out)]`` (one copy of the strided view)."""
    nd = len(ksize)
    win = _windows(xp, xpad, ksize, stride, dilation, osize)
    n, c = xpad.shape[:2]
    perm = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd))
    return win.transpose(perm).reshape(c * math.prod(ksize), n * math.prod(osize))


def _out_size(h, k, stride, pad0, pad1, dil):
    return (h + pad0 + pad1 - dil * (k - 1) - 1) // stride + 1


def _scatter_offsets(xp, dx, dcols, ksize, stride, dilation, osize):
    """Add ``dcols`` ``[C, *k, N, *out]`` onto ``dx`` ``[N, C, *padded]``: for each kernel
    offset, the strided slice of the padded input it met (col2im)."""
    for idx in itertools.product(*(range(k) for k in ksize)):
        sl = tuple(slice(i * d, i * d + s * (o - 1) + 1, s) for i, d, s, o in zip(idx, dilation, stride, osize))
        dx[(slice(None), slice(None)) + sl] += dcols[(slice(None),) + idx].swapaxes(0, 1)


def _crop(xp, x, pad, size):
    """``x`` ``[N, C, *padded]`` without its padding (``size`` the unpadded spatial shape)."""
    if not any(lo or hi for lo, hi in pad):
        return x
    inner = tuple(slice(lo, lo + s) for (lo, _), s in zip(pad, size))
    return xp.ascontiguousarray(x[(slice(None), slice(None)) + inner])


# ---- stride 1: columns from contiguous slices of the flattened image ----------------
#
# With the padded image flattened to [N, C, prod(padded)], the input that kernel offset k
# meets at output position o sits at flat(o) + flat(k * dilation): for each offset, one
# contiguous slice of length L = OD0 * prod(padded[1:]).  Outputs are computed on rows as
# wide as the padded image in every dim but the first (the extra positions are cropped
# when the result is written out), so the flat image gets some slack at its end.  Stacking
# the prod(k) slices gives the column matrix [prod(k)*C, L] of an image by plain row
# copies (no gather); one matrix product per chunk of images does the rest.  Chunks bound
# the temporary memory, and small ones keep the column buffer in cache and out of the
# allocator's fresh (page-faulting) mappings.  The input gradient is itself such a
# convolution (of the output gradient, with the kernel flipped and its channel axes
# swapped) when that is the cheaper route.

_CHUNK_BYTES = 8 << 20
# Columns up to this size are kept from the forward for the weight gradient (small
# images, where rebuilding them costs more than the product); larger ones are rebuilt.
_KEEP_BYTES = 64 << 20


class _Shift:
    """Geometry of a stride-1 convolution on the flattened padded image."""

    __slots__ = ("padded", "osize", "rows", "length", "offsets", "slack", "crop")

    def __init__(self, xshape, wshape, pad, dilation):
        ksize = wshape[2:]
        self.padded = tuple(s + lo + hi for s, (lo, hi) in zip(xshape[2:], pad))
        self.osize = tuple(p - d * (k - 1) for p, d, k in zip(self.padded, dilation, ksize))
        flat = [math.prod(self.padded[i + 1:]) for i in range(len(ksize))]
        self.rows = (self.osize[0],) + self.padded[1:]        # the computed positions
        self.length = self.osize[0] * flat[0]
        self.offsets = [sum(i * d * f for i, d, f in zip(idx, dilation, flat))
                        for idx in itertools.product(*(range(k) for k in ksize))]
        self.slack = sum((k - 1) * d * f for k, d, f in zip(ksize[1:], dilation[1:], flat[1:]))
        self.crop = (slice(None),) * 3 + tuple(slice(0, o) for o in self.osize[1:])


def _padded_flat(xp, x, pad, geo):
    """``x`` [N, C, *size] zero-padded and flattened to [N, C, prod(padded) + slack]."""
    n, c = x.shape[:2]
    size = math.prod(geo.padded)
    if geo.slack == 0 and not any(lo or hi for lo, hi in pad):
        return x.reshape(n, c, size)
    flat = xp.zeros((n, c, size + geo.slack), dtype=x.dtype)
    inner = tuple(slice(lo, lo + s) for (lo, _), s in zip(pad, x.shape[2:]))
    flat[:, :, :size].reshape((n, c) + geo.padded)[(slice(None), slice(None)) + inner] = x
    return flat


def _chunks(n, rows, length, itemsize):
    step = max(1, _CHUNK_BYTES // max(1, rows * length * itemsize))
    return [(b, min(n, b + step)) for b in range(0, n, step)]


def _shift_cols(xp, xs, offsets, length, buf=None):
    """[prod(k)*C, B*L]: the slices of ``xs`` [B, C, prod(padded) + slack], offsets
    outermost, images side by side (so that a chunk is one large matrix product, not one
    per image); written into ``buf`` when it has the right size."""
    b, c = xs.shape[:2]
    shape = (len(offsets) * c, b, length)
    cols = buf.reshape(shape) if buf is not None and buf.size == shape[0] * b * length else \
        xp.empty(shape, dtype=xs.dtype)
    for k, off in enumerate(offsets):
        cols[k * c:(k + 1) * c] = xs[:, :, off:off + length].transpose(1, 0, 2)
    return cols.reshape(shape[0], b * length)


def _weight_matrix(xp, w):
    """[O, C, *k] -> [O, prod(k)*C], matching the row order of _shift_cols."""
    o, c = w.shape[:2]
    perm = (0,) + tuple(range(2, w.ndim)) + (1,)
    return xp.ascontiguousarray(w.transpose(perm)).reshape(o, w.size // o)


def _shift_fwd(xp, x, w, bias, pad, dilation, groups, keep_cols=False):
    """The convolution (plus ``bias`` [O] when given), and the columns (when wanted and
    small enough) for _shift_dw."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kk = math.prod(w.shape[2:])
    geo = _Shift(x.shape, w.shape, pad, dilation)
    flat = _padded_flat(xp, x, pad, geo)
    out = xp.empty((n, o) + geo.osize, dtype=x.dtype)
    og = o // groups
    keep = keep_cols and kk * c * n * geo.length * x.itemsize <= _KEEP_BYTES
    bshape = (og,) + (1,) * (1 + len(geo.osize))
    kept = []
    for gi in range(groups):
        wm = _weight_matrix(xp, w[gi * og:(gi + 1) * og])
        b = None if bias is None else bias[gi * og:(gi + 1) * og].reshape(bshape)
        buf = None
        for lo, hi in _chunks(n, kk * cg, geo.length, x.itemsize):
            buf = _shift_cols(xp, flat[lo:hi, gi * cg:(gi + 1) * cg], geo.offsets, geo.length, None if keep else buf)
            res = blas_matmul(wm, buf).reshape((og, hi - lo) + geo.rows)[geo.crop]
            target = out[lo:hi, gi * og:(gi + 1) * og].swapaxes(0, 1)
            if b is None:
                target[...] = res
            else:
                xp.add(res, b, out=target)
            if keep:
                kept.append(buf)
    return out, kept


def _shift_dx(xp, g, w, xshape, pad, dilation, groups):
    """The input gradient: a convolution of ``g`` by the flipped, channel-swapped kernel
    when the input has at least as many channels as the output (its columns are then the
    smaller matrix), else the columns' gradient added back slice by slice."""
    if xshape[1] >= w.shape[0]:
        return _shift_dx_as_conv(xp, g, w, xshape, pad, dilation, groups)
    n, c = xshape[:2]
    o, cg = w.shape[:2]
    kk = math.prod(w.shape[2:])
    geo = _Shift(xshape, w.shape, pad, dilation)
    size = math.prod(geo.padded)
    dx = xp.zeros((n, c, size + geo.slack), dtype=g.dtype)
    og = o // groups
    for gi in range(groups):
        wmt = xp.ascontiguousarray(_weight_matrix(xp, w[gi * og:(gi + 1) * og]).T)   # [prod(k)*cg, og]
        for lo, hi in _chunks(n, kk * cg, geo.length, g.itemsize):
            gm = _grad_rows(xp, g[lo:hi, gi * og:(gi + 1) * og], geo)
            dcols = blas_matmul(wmt, gm).reshape(kk * cg, hi - lo, geo.length)
            target = dx[lo:hi, gi * cg:(gi + 1) * cg]
            for k, off in enumerate(geo.offsets):
                target[:, :, off:off + geo.length] += dcols[k * cg:(k + 1) * cg].transpose(1, 0, 2)
    dx = dx[:, :, :size].reshape((n, c) + geo.padded)
    return xp.ascontiguousarray(_crop(xp, dx, pad, xshape[2:]))


def _shift_dx_as_conv(xp, g, w, xshape, pad, dilation, groups):
    """The input gradient as a convolution of ``g`` with the flipped, channel-swapped
    kernel, padded so that its output covers exactly the unpadded input."""
    c = xshape[1]
    o, cg = w.shape[:2]
    ksize = w.shape[2:]
    og = o // groups
    wt = w.reshape((groups, og, cg) + ksize).swapaxes(1, 2).reshape((c, og) + ksize)
    wt = wt[(slice(None), slice(None)) + (slice(None, None, -1),) * len(ksize)]
    tpad = tuple((d * (k - 1) - lo, d * (k - 1) - hi) for d, k, (lo, hi) in zip(dilation, ksize, pad))
    dx, _ = _shift_fwd(xp, g, wt, None, tuple((max(0, lo), max(0, hi)) for lo, hi in tpad), dilation, groups)
    if min(min(p) for p in tpad) < 0:  # padding beyond the kernel's reach: those outputs see only zeros
        dx = xp.ascontiguousarray(dx[(slice(None), slice(None)) + tuple(
            slice(max(0, -lo), max(0, -lo) + s) for (lo, _), s in zip(tpad, xshape[2:]))])
    return dx


def _grad_rows(xp, g, geo):
    """``g`` [B, O, *out] as [O, B*L]: widened to the computed positions with zeros (the
    cropped positions add nothing), channels outermost."""
    b, o = g.shape[:2]
    rows = xp.empty((o, b) + geo.rows, dtype=g.dtype)
    for i in range(1, len(geo.rows)):
        if geo.rows[i] != geo.osize[i]:
            rows[(slice(None),) * (2 + i) + (slice(geo.osize[i], None),)] = 0
    rows[geo.crop] = g.swapaxes(0, 1)
    return rows.reshape(o, b * geo.length)


def _shift_dw(xp, x, g, wshape, pad, dilation, groups, kept_cols=None):
    n, c = x.shape[:2]
    o, cg = wshape[:2]
    ksize = tuple(wshape[2:])
    kk = math.prod(ksize)
    geo = _Shift(x.shape, wshape, pad, dilation)
    flat = None if kept_cols else _padded_flat(xp, x, pad, geo)
    og = o // groups
    nd = len(ksize)
    parts = []
    kept = iter(kept_cols or ())
    for gi in range(groups):
        dwm = None
        buf = None
        for lo, hi in _chunks(n, kk * cg, geo.length, x.itemsize):
            cols = next(kept, None)
            if cols is None:
                cols = buf = _shift_cols(xp, flat[lo:hi, gi * cg:(gi + 1) * cg], geo.offsets, geo.length, buf)
            part = blas_matmul(_grad_rows(xp, g[lo:hi, gi * og:(gi + 1) * og], geo), cols.T)
            dwm = part if dwm is None else xp.add(dwm, part, out=dwm)
        if dwm is None:  # an empty batch
            dwm = xp.zeros((og, kk * cg), dtype=g.dtype)
        parts.append(dwm.reshape((og,) + ksize + (cg,)).transpose((0, 1 + nd) + tuple(range(1, 1 + nd))))
    return xp.ascontiguousarray(parts[0] if groups == 1 else xp.concatenate(parts, 0))


# ---- any stride: a column matrix --------------------------------------------------

# Below this many multiply-adds a dense convolution runs faster as one large product on
# all BLAS threads (``kernels.conv.forward_whole``, its columns kept for the weight
# gradient when it takes one; the stride-1 input gradient as one product and a flat
# col2im, ``input_grad_flat``) than blocked on single-threaded products (measured:
# LeNet's 32->64 layer on 13x13 2.8x slower forward, ResNet-18 at batch 1 1.3-1.6x; from
# ResNet-18's batch-8 layers on, the blocked kernels win). Depthwise always wins.
KERNEL_MIN_MACS = 400_000_000


def _kernels_pay(n, out_positions, wshape, groups) -> bool:
    o, cg = wshape[:2]
    if groups > 1 and cg == 1:
        return True
    return n * out_positions * o * cg * math.prod(wshape[2:]) >= KERNEL_MIN_MACS


def _whole_cols_bytes(x, w, stride, pad, dilation, groups):
    """Bytes of the whole batch's column matrices (kernels.conv.forward_whole_kept)."""
    osize = tuple(_out_size(h, k, s, lo, hi, d) for h, k, s, (lo, hi), d in zip(x.shape[2:], w.shape[2:], stride,
                                                                                  pad, dilation))
    return x.shape[0] * math.prod(osize) * math.prod(w.shape[1:]) * x.itemsize


def _winograd(x, wshape, stride, pad, dilation, groups, out_hw):
    """Whether the compiled Winograd kernels take this convolution (``out_hw`` its output
    size, whose tiles must be enough to repay the weight's transform)."""
    return (kernels.winograd.applies(x.ndim, wshape, stride, pad, dilation, groups)
            and kernels.winograd.pays(x.shape[0], *out_hw))


def _conv_fwd(xp, x, w, bias, stride, pad, dilation, groups, keep_cols=False):
    """The convolution plus ``bias`` (None or [O]), and (when ``keep_cols``) its column
    matrices for the weight gradient."""
    if cuda_conv.applies(x.ndim) and cuda_conv.accepts(x, w, bias):
        return cuda_conv.forward(x, w, bias, stride, pad, dilation, groups, keep_cols)
    if kernels.accepts(x, w) and (bias is None or kernels.accepts(x, bias)):
        if x.ndim == 4 and _winograd(x, w.shape, stride, pad, dilation, groups,  # ndim first: out size below
                                     [h + lo + hi - 2 for h, (lo, hi) in zip(x.shape[2:], pad)]):
            return kernels.winograd.forward(x, w, bias, pad), None
        if not keep_cols and kernels.conv.direct_pays(x.ndim, w.shape, groups):
            return kernels.conv.forward_direct(x, w, bias, stride, pad, dilation, groups), None
        if _kernels_pay(x.shape[0], math.prod(x.shape[2:]) // math.prod(stride), w.shape, groups):
            return kernels.conv.forward(x, w, bias, stride, pad, dilation, groups), None
        if not keep_cols:
            return kernels.conv.forward_whole(x, w, bias, stride, pad, dilation, groups), None
        if _whole_cols_bytes(x, w, stride, pad, dilation, groups) <= _KEEP_BYTES:
            return kernels.conv.forward_whole_kept(x, w, bias, stride, pad, dilation, groups)
    if all(s == 1 for s in stride):
        return _shift_fwd(xp, x, w, bias, pad, dilation, groups, keep_cols)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    ksize = w.shape[2:]
    osize = tuple(_out_size(h, k, s, lo, hi, d) for h, k, s, (lo, hi), d in zip(x.shape[2:], ksize, stride, pad,
                                                                                  dilation))
    xpad = _pad(xp, x, pad)
    og = o // groups
    outs, kept = [], []
    for gi in range(groups):
        xs = xpad if groups == 1 else xpad[:, gi * cg:(gi + 1) * cg]
        cols = _cols(xp, xs, ksize, stride, dilation, osize)
        wm = w[gi * og:(gi + 1) * og].reshape(og, cols.shape[0])
        outs.append(blas_matmul(wm, cols))                                # [og, N*prod(out)]
        if keep_cols:
            kept.append(cols)
    out = outs[0] if groups == 1 else xp.concatenate(outs, 0)
    if bias is not None:
        out += bias.reshape(o, 1)
    return xp.ascontiguousarray(out.reshape((o, n) + osize).swapaxes(0, 1)), kept


def _conv_dx(xp, g, w, xshape, stride, pad, dilation, groups):
    """Gradient of conv with respect to its input (a transposed convolution of ``g``)."""
    if cuda_conv.applies(len(xshape)) and cuda_conv.accepts(g, w):
        return cuda_conv.input_grad(g, w, xshape, stride, pad, dilation, groups)
    if kernels.accepts(g, w):
        if _winograd(g, w.shape, stride, pad, dilation, groups, xshape[2:]):
            return kernels.winograd.input_grad(g, w, tuple(xshape), pad)
        if _kernels_pay(g.shape[0], math.prod(g.shape[2:]), w.shape, groups):
            return kernels.conv.input_grad(g, w, tuple(xshape), stride, pad, dilation, groups)
        if xshape[1] < w.shape[0] and kernels.conv.flat_input_grad_applies(len(xshape), stride):
            # where the numpy path would add its columns back slice by slice
            return kernels.conv.input_grad_flat(g, w, tuple(xshape), pad, dilation, groups)
    if all(s == 1 for s in stride):
        return _shift_dx(xp, g, w, xshape, pad, dilation, groups)
    n, c = xshape[:2]
    o, cg = w.shape[:2]
    ksize = w.shape[2:]
    osize = g.shape[2:]
    og = o // groups
    gm = g.swapaxes(0, 1).reshape(o, n * math.prod(osize))
    dx = xp.zeros((n, c) + tuple(s + lo + hi for s, (lo, hi) in zip(xshape[2:], pad)), dtype=g.dtype)
    for gi in range(groups):
        wm = w[gi * og:(gi + 1) * og].reshape(og, cg * math.prod(ksize))
        dcols = blas_matmul(wm.T, gm[gi * og:(gi + 1) * og]).reshape((cg,) + ksize + (n,) + osize)
        _scatter_offsets(xp, dx[:, gi * cg:(gi + 1) * cg], dcols, ksize, stride, dilation, osize)
    return _crop(xp, dx, pad, xshape[2:])


def _conv_dw(xp, x, g, wshape, stride, pad, dilation, groups, kept_cols=None):
    """Gradient of conv with respect to its weight (reusing the forward's columns if kept)."""
    if cuda_conv.applies(x.ndim) and cuda_conv.accepts(x, g):
        kept = kept_cols if isinstance(kept_cols, cuda_conv.Columns) else None
        return cuda_conv.weight_grad(x, g, wshape, stride, pad, dilation, groups, kept)
    if kept_cols is not None and not isinstance(kept_cols, list):  # kept by forward_whole_kept
        if kernels.accepts(x, g):
            return kernels.conv.weight_grad_kept(g, kept_cols, tuple(wshape), groups)
        kept_cols = None  # the kernels were switched off since the forward
    if kernels.accepts(x, g) and _winograd(x, wshape, stride, pad, dilation, groups, g.shape[2:]):
        return kernels.winograd.weight_grad(x, g, pad)
    if kernels.accepts(x, g) and _kernels_pay(g.shape[0], math.prod(g.shape[2:]), wshape, groups):
        return kernels.conv.weight_grad(x, g, tuple(wshape), stride, pad, dilation, groups)
    if all(s == 1 for s in stride):
        return _shift_dw(xp, x, g, wshape, pad, dilation, groups, kept_cols)
    n = x.shape[0]
    o, cg = wshape[:2]
    ksize = tuple(wshape[2:])
    osize = g.shape[2:]
    og = o // groups
    xpad = _pad(xp, x, pad) if not kept_cols else None
    gm = g.swapaxes(0, 1).reshape(o, n * math.prod(osize))
    parts = []
    for gi in range(groups):
        if kept_cols:
            cols = kept_cols[gi]
        else:
            xs = xpad if groups == 1 else xpad[:, gi * cg:(gi + 1) * cg]
            cols = _cols(xp, xs, ksize, stride, dilation, osize)
        parts.append(blas_matmul(gm[gi * og:(gi + 1) * og], cols.T))
    dw = parts[0] if groups == 1 else xp.concatenate(parts, 0)
    return dw.reshape(wshape)


# ---- differentiable ops ------------------------------------------------------------

def _conv(x, w, b, stride, pad, dilation, groups):
    """y = conv(x, w) + b as one node (b may be None), as torch records it."""
    grad = needs_grad(x, w, b)
    # the weight gradient multiplies by the same columns: keep them rather than unfold twice
    arr, cols = _conv_fwd(be(x).xp, x._data, w._data, None if b is None else b._data, stride, pad, dilation,
                          groups, keep_cols=grad and w._requires_grad)
    r = _make(arr.astype(x._data.dtype, copy=False), x.dtype)  # numpy multiplies bfloat16 into float32
    if grad:
        record("ConvolutionBackward0", _conv_rule, (x, w, b), r,
               (x, w, b is not None and b._requires_grad, stride, pad, dilation, groups, cols,
                (x._requires_grad, w._requires_grad)))
    return r


def _bias_grad(g):
    from .reduction import sum as _sum
    return _sum(g, (0,) + tuple(range(2, g.ndim)))


def _xp(arr):
    """The array module of a raw array (rules' array forms get arrays, not tensors)."""
    return NUMPY.xp if type(arr) is _ndarray else backend_of_array(arr).xp


def _bias_grad_array(g):
    if kernels.accepts(g):
        return kernels.conv.bias_grad(g)
    return g.sum(axis=(0,) + tuple(range(2, g.ndim)))


def _conv_rule(g, x, w, bias_req, stride, pad, dilation, groups, cols, wanted):
    gx = _conv_input_grad(g, w, tuple(x.shape), stride, pad, dilation, groups) if x._requires_grad else None
    gw = _conv_weight_grad(x, g, tuple(w.shape), stride, pad, dilation, groups, cols) if w._requires_grad else None
    return gx, gw, (_bias_grad(g) if bias_req else None)


def _conv_rule_arrays(g, x, w, bias_req, stride, pad, dilation, groups, cols, wanted):
    xp = _xp(g)
    gx = _conv_dx(xp, g, w, x.shape, stride, pad, dilation, groups) if wanted[0] else None
    gw = _conv_dw(xp, x, g, w.shape, stride, pad, dilation, groups, cols) if wanted[1] else None
    return gx, gw, (_bias_grad_array(g) if bias_req else None)


_conv_rule.on_arrays = _conv_rule_arrays


def _conv_input_grad(g, w, xshape, stride, pad, dilation, groups, name="ConvolutionBackwardBackward0"):
    r = _make(_conv_dx(be(g).xp, g._data, w._data, xshape, stride, pad, dilation, groups).astype(
        g._data.dtype, copy=False), g.dtype)
    if needs_grad(g, w):
        record(name, _input_grad_rule, (g, w), r, (g, w, stride, pad, dilation, groups))
    return r


def _input_grad_rule(gg, g, w, stride, pad, dilation, groups):
    # r = conv^T(g; w): linear in g (adjoint of conv) and in w
    d_g = _conv(gg, w, None, stride, pad, dilation, groups) if g._requires_grad else None
    d_w = _conv_weight_grad(gg, g, tuple(w.shape), stride, pad, dilation, groups) if w._requires_grad else None
    return d_g, d_w


def _conv_weight_grad(x, g, wshape, stride, pad, dilation, groups, kept_cols=None):
    r = _make(_conv_dw(be(x).xp, x._data, g._data, wshape, stride, pad, dilation, groups, kept_cols).astype(
        x._data.dtype, copy=False), x.dtype)
    if needs_grad(x, g):
        record("ConvolutionBackwardBackward1", _weight_grad_rule, (x, g), r, (x, g, stride, pad, dilation, groups))
    return r


def _weight_grad_rule(gg, x, g, stride, pad, dilation, groups):
    d_x = _conv_input_grad(g, gg, tuple(x.shape), stride, pad, dilation, groups) if x._requires_grad else None
    d_g = _conv(x, gg, None, stride, pad, dilation, groups) if g._requires_grad else None
    return d_x, d_g


def _conv_t(x, w, b, out_shape, stride, pad, dilation, groups):
    """y = conv^T(x, w) + b as one node: the input gradient of the convolution (weight
    ``[C_in, C_out/groups, *k]``) whose input has ``out_shape``."""
    xp = be(x).xp
    arr = _conv_dx(xp, x._data, w._data, out_shape, stride, pad, dilation, groups)
    if b is not None:
        arr += b._data.reshape((-1,) + (1,) * (arr.ndim - 2))
    r = _make(arr.astype(x._data.dtype, copy=False), x.dtype)
    if needs_grad(x, w, b):
        record("ConvolutionBackward0", _conv_t_rule, (x, w, b), r,
               (x, w, b is not None and b._requires_grad, stride, pad, dilation, groups,
                (x._requires_grad, w._requires_grad)))
    return r


def _conv_t_rule(g, x, w, bias_req, stride, pad, dilation, groups, wanted):
    # y = A_w^T x, with A_w the convolution by w: dx = A_w g, dw = weight gradient of A_w at input g
    gx = _conv(g, w, None, stride, pad, dilation, groups) if x._requires_grad else None
    gw = _conv_weight_grad(g, x, tuple(w.shape), stride, pad, dilation, groups) if w._requires_grad else None
    return gx, gw, (_bias_grad(g) if bias_req else None)


def _conv_t_rule_arrays(g, x, w, bias_req, stride, pad, dilation, groups, wanted):
    xp = _xp(g)
    gx = _conv_fwd(xp, g, w, None, stride, pad, dilation, groups)[0] if wanted[0] else None
    gw = _conv_dw(xp, g, x, w.shape, stride, pad, dilation, groups) if wanted[1] else None
    return gx, gw, (_bias_grad_array(g) if bias_req else None)


_conv_t_rule.on_arrays = _conv_t_rule_arrays


# ---- argument checks ---------------------------------------------------------------

def _expand(v, nd, name):
    """An int or a sequence of ``nd`` ints as a tuple of ``nd`` ints (torch's error else)."""
    if isinstance(v, (tuple, list)):
        vals = tuple(int(a) for a in v)
        if len(vals) == 1:
            vals = vals * nd
    else:
        vals = (int(v),) * nd
    if len(vals) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} values to match the "
                           f"convolution dimensions, but got {name}={list(vals)}")
    return vals


def _same_pad(k, d):
    total = d * (k - 1)
    return total // 2, total - total // 2


def _check_common(input, weight, bias, nd, name, groups):
    """The checks shared by convolutions and transposed convolutions; returns whether the
    input is unbatched."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not isinstance(weight, Tensor):
        raise TypeError(f"{name}(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    if weight.ndim < 3:
        raise RuntimeError(f"weight should have at least three dimensions, got a {weight.ndim}-d weight of size "
                           f"{list(weight.shape)}")
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional weight for {name}, but got weight of size "
                           f"{list(weight.shape)}")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(input.shape)}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({_tname(input)}) and bias type ({_tname(bias)}) should be the same")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"expected scalar type {_long(input)} but found {_long(weight)}")
    check_same_device(input, weight, name)
    if bias is not None:
        check_same_device(input, bias, name)
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    return input.ndim == nd + 1


def _check_groups(x, weight, bias, groups, transposed):
    c = x.shape[1]
    wc = weight.shape[0] if transposed else weight.shape[1] * groups
    out = weight.shape[1] * groups if transposed else weight.shape[0]
    tag = "transposed=1, " if transposed else ""
    if c != wc:
        raise RuntimeError(f"Given {tag}groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {wc} channels, but got {c} channels instead")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out):
        raise RuntimeError(f"Given {tag}weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{out} elements, but got bias of size {list(bias.shape)} instead")


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd, name):
    unbatched = _check_common(input, weight, bias, nd, name, groups)
    stride, dilation = _expand(stride, nd, "stride"), _expand(dilation, nd, "dilation")
    if min(stride) < 1:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) < 1:
        raise RuntimeError("dilation should be greater than zero")
    x = input.unsqueeze(0) if unbatched else input
    _check_groups(x, weight, bias, groups, False)
    ksize = weight.shape[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pad = ((0, 0),) * nd
        elif padding == "same":
            if max(stride) != 1:
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pad = tuple(_same_pad(k, d) for k, d in zip(ksize, dilation))  # odd total: one more at the end
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        p = _expand(padding, nd, "padding")
        if min(p) < 0:
            raise RuntimeError("negative padding is not supported")
        pad = tuple((a, a) for a in p)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pad))
    span = tuple(d * (k - 1) + 1 for d, k in zip(dilation, ksize))
    if any(p < s for p, s in zip(padded, span)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, span))}). Kernel size can't be greater than actual input "
                           "size")
    out = _conv(x, weight, bias, stride, pad, dilation, groups)
    return out.squeeze(0) if unbatched else out


@autocast_op("lower")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution (cross-correlation, no kernel flip) (torch.nn.functional.conv1d).

    ``input``: ``[N, C, L]`` (or unbatched ``[C, L]``), float (lowered under autocast).
    ``weight``: ``[O, C/groups, k]``. ``bias``: optional ``[O]``. Returns ``[N, O, L_out]`` of
    the input's dtype, each size ``(size + 2*padding - dilation*(k - 1) - 1) // stride + 1``.
    ``stride``: an int (or a 1-tuple). ``padding``: an int (or a 1-tuple) of zeros on both
    sides, or 'valid' (none) or 'same' (output as large as the input, stride 1 only; an odd
    total padding puts one more at the end, as torch does). ``dilation``: the spacing of the
    kernel's cells, an int (or a 1-tuple). ``groups``: splits the input and output channels into
    that many independent convolutions (both divisible by it).

    RuntimeError (as torch) for wrong input or weight dims, mismatched channels, groups, bias
    size or dtypes, non-positive stride, dilation or groups, negative padding, an unknown
    padding string, 'same' with a stride above 1, and a kernel larger than the padded input;
    TypeError for a non-tensor input or weight."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@autocast_op("lower")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution (cross-correlation, no kernel flip) (torch.nn.functional.conv2d).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), float (lowered under autocast).
    ``weight``: ``[O, C/groups, kH, kW]``. ``bias``: optional ``[O]``. Returns ``[N, O, H_out,
    W_out]`` of the input's dtype, each size ``(size + 2*padding - dilation*(k - 1) - 1) //
    stride + 1``. ``stride``: an int or a pair. ``padding``: an int or a pair of zeros on both
    sides, or 'valid' (none) or 'same' (output as large as the input, stride 1 only; an odd
    total padding puts one more at the end, as torch does). ``dilation``: the spacing of the
    kernel's cells, an int or a pair. ``groups``: splits the input and output channels into that
    many independent convolutions (both divisible by it).

    RuntimeError (as torch) for wrong input or weight dims, mismatched channels, groups, bias
    size or dtypes, non-positive stride, dilation or groups, negative padding, an unknown
    padding string, 'same' with a stride above 1, and a kernel larger than the padded input;
    TypeError for a non-tensor input or weight."""
    return keep_format(input, _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d"))


@autocast_op("lower")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution (cross-correlation, no kernel flip) (torch.nn.functional.conv3d).

    ``input``: ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``), float (lowered under
    autocast). ``weight``: ``[O, C/groups, kD, kH, kW]``. ``bias``: optional ``[O]``. Returns
    ``[N, O, D_out, H_out, W_out]`` of the input's dtype, each size ``(size + 2*padding -
    dilation*(k - 1) - 1) // stride + 1``. ``stride``: an int or a triple. ``padding``: an int
    or a triple of zeros on both sides, or 'valid' (none) or 'same' (output as large as the
    input, stride 1 only; an odd total padding puts one more at the end, as torch does).
    ``dilation``: the spacing of the kernel's cells, an int or a triple. ``groups``: splits the
    input and output channels into that many independent convolutions (both divisible by it).

    RuntimeError (as torch) for wrong input or weight dims, mismatched channels, groups, bias
    size or dtypes, non-positive stride, dilation or groups, negative padding, an unknown
    padding string, 'same' with a stride above 1, and a kernel larger than the padded input;
    TypeError for a non-tensor input or weight."""
    return keep_format(input, _convnd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d"))


def _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    unbatched = _check_common(input, weight, bias, nd, name, groups)
    stride, dilation = _expand(stride, nd, "stride"), _expand(dilation, nd, "dilation")
    pad, opad = _expand(padding, nd, "padding"), _expand(output_padding, nd, "output_padding")
    if min(stride) < 1:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) < 1:
        raise RuntimeError("dilation should be greater than zero")
    if min(pad) < 0:
        raise RuntimeError("negative padding is not supported")
    if min(opad) < 0:
        raise RuntimeError("negative output_padding is not supported")
    if any(op >= s and op >= d for op, s, d in zip(opad, stride, dilation)):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={list(opad)}, stride={list(stride)}, dilation={list(dilation)}")
    x = input.unsqueeze(0) if unbatched else input
    _check_groups(x, weight, bias, groups, True)
    ksize = weight.shape[2:]
    size = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1
                 for i, s, p, d, k, op in zip(x.shape[2:], stride, pad, dilation, ksize, opad))
    if min(size) < 1:
        raise RuntimeError(f"Given input size per channel: {list(x.shape[2:])}, the calculated output size "
                           f"{list(size)} is too small")
    # the convolution this one is the adjoint of maps ``size`` to ``fwd``; output_padding
    # at stride 1 (dilation above 1) makes ``fwd`` longer than the input: the extra
    # positions are zeros
    fwd = tuple(_out_size(o, k, s, p, p, d) for o, k, s, p, d in zip(size, ksize, stride, pad, dilation))
    if fwd != tuple(x.shape[2:]):
        from .layout import _pad_last_dims
        x = _pad_last_dims(x, [v for f, i in zip(reversed(fwd), reversed(x.shape[2:])) for v in (0, f - i)])
    out = _conv_t(x, weight, bias, (x.shape[0], weight.shape[1] * groups) + size, stride,
                  tuple((p, p) for p in pad), dilation, groups)
    return out.squeeze(0) if unbatched else out


@autocast_op("lower")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-d transposed convolution ("deconvolution"), the gradient of conv1d with respect to its
    input (torch.nn.functional.conv_transpose1d; note that ``groups`` comes before
    ``dilation``).

    ``input``: ``[N, C_in, L]`` (or unbatched ``[C_in, L]``), float (lowered under autocast).
    ``weight``: ``[C_in, C_out/groups, k]``. ``bias``: optional ``[C_out]``. Returns ``[N,
    C_out, L_out]`` of the input's dtype, each size ``(size - 1)*stride - 2*padding +
    dilation*(k - 1) + output_padding + 1``. ``stride``: an int (or a 1-tuple). ``padding``: an
    int (or a 1-tuple), the ``dilation*(k - 1) - padding`` zero padding of the matching
    convolution (removes cells from each side). ``output_padding``: an int (or a 1-tuple) of
    cells added at the end of each output dim, smaller than ``stride`` or ``dilation``; it picks
    one of the sizes a strided conv1d maps to the same size. ``groups``: independent groups of
    channels. ``dilation``: the spacing of the kernel's cells, an int (or a 1-tuple).

    TypeError for a string padding; RuntimeError (as torch) for wrong dims, channels, groups,
    bias size or dtypes, non-positive stride, dilation or groups, negative padding, too large
    ``output_padding`` and an empty output."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                             "conv_transpose1d")


@autocast_op("lower")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-d transposed convolution ("deconvolution"), the gradient of conv2d with respect to its
    input (torch.nn.functional.conv_transpose2d; note that ``groups`` comes before
    ``dilation``).

    ``input``: ``[N, C_in, H, W]`` (or unbatched ``[C_in, H, W]``), float (lowered under
    autocast). ``weight``: ``[C_in, C_out/groups, kH, kW]``. ``bias``: optional ``[C_out]``.
    Returns ``[N, C_out, H_out, W_out]`` of the input's dtype, each size ``(size - 1)*stride -
    2*padding + dilation*(k - 1) + output_padding + 1``. ``stride``: an int or a pair.
    ``padding``: an int or a pair, the ``dilation*(k - 1) - padding`` zero padding of the
    matching convolution (removes cells from each side). ``output_padding``: an int or a pair of
    cells added at the end of each output dim, smaller than ``stride`` or ``dilation``; it picks
    one of the sizes a strided conv2d maps to the same size. ``groups``: independent groups of
    channels. ``dilation``: the spacing of the kernel's cells, an int or a pair.

    TypeError for a string padding; RuntimeError (as torch) for wrong dims, channels, groups,
    bias size or dtypes, non-positive stride, dilation or groups, negative padding, too large
    ``output_padding`` and an empty output."""
    out = _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
        "conv_transpose2d")
    return keep_format(input, out)


@autocast_op("lower")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-d transposed convolution ("deconvolution"), the gradient of conv3d with respect to its
    input (torch.nn.functional.conv_transpose3d; note that ``groups`` comes before
    ``dilation``).

    ``input``: ``[N, C_in, D, H, W]`` (or unbatched ``[C_in, D, H, W]``), float (lowered under
    autocast). ``weight``: ``[C_in, C_out/groups, kD, kH, kW]``. ``bias``: optional ``[C_out]``.
    Returns ``[N, C_out, D_out, H_out, W_out]`` of the input's dtype, each size ``(size -
    1)*stride - 2*padding + dilation*(k - 1) + output_padding + 1``. ``stride``: an int or a
    triple. ``padding``: an int or a triple, the ``dilation*(k - 1) - padding`` zero padding of
    the matching convolution (removes cells from each side). ``output_padding``: an int or a
    triple of cells added at the end of each output dim, smaller than ``stride`` or
    ``dilation``; it picks one of the sizes a strided conv3d maps to the same size. ``groups``:
    independent groups of channels. ``dilation``: the spacing of the kernel's cells, an int or a
    triple.

    TypeError for a string padding; RuntimeError (as torch) for wrong dims, channels, groups,
    bias size or dtypes, non-positive stride, dilation or groups, negative padding, too large
    ``output_padding`` and an empty output."""
    out = _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
        "conv_transpose3d")
    return keep_format(input, out)


# ---- sliding blocks: unfold (im2col) and fold (col2im) ------------------------------
# Named with a leading underscore so that the ops namespace does not publish them (torch
# has them in torch.nn.functional only; ``ember.unfold`` is Tensor.unfold's function).

def _pair_arg(v, name):
    vals = tuple(int(a) for a in v) if isinstance(v, (tuple, list)) else (int(v),) * 2
    if len(vals) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(vals)}")
    return vals


def _block_args(input, kernel_size, dilation, padding, stride, op):
    k, d = _pair_arg(kernel_size, "kernel_size"), _pair_arg(dilation, "dilation")
    p, s = _pair_arg(padding, "padding"), _pair_arg(stride, "stride")
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f"\"{op}\" not implemented for '{_long(input)}'")
    if min(k) < 1:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {k[0]} "
                           f"kernel_width: {k[1]}")
    if min(s) < 1:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {s[0]} stride_width: {s[1]}")
    if min(d) < 1:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {d[0]} "
                           f"dilation_width: {d[1]}")
    if min(p) < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} pad_width: {p[1]}")
    return k, d, p, s


def _blocks(size, k, d, p, s):
    return tuple(_out_size(h, kk, ss, pp, pp, dd) for h, kk, ss, pp, dd in zip(size, k, s, p, d))


def _im2col(xp, x, k, d, p, s, osize):
    """``x`` [N, C, H, W] -> [N, C*kH*kW, L]: each block's values, channel-major."""
    n, c = x.shape[:2]
    win = _windows(xp, _pad(xp, x, tuple((a, a) for a in p)), k, s, d, osize)   # [N, C, OH, OW, kH, kW]
    return win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * k[0] * k[1], osize[0] * osize[1])


def _col2im(xp, cols, size, k, d, p, s, osize):
    """``cols`` [N, C*kH*kW, L] -> [N, C, H, W]: each block added back where it came from."""
    n = cols.shape[0]
    c = cols.shape[1] // (k[0] * k[1])
    dcols = cols.reshape((n, c) + tuple(k) + tuple(osize)).transpose(1, 2, 3, 0, 4, 5)
    dx = xp.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]), dtype=cols.dtype)
    _scatter_offsets(xp, dx, dcols, k, s, d, osize)
    return _crop(xp, dx, tuple((a, a) for a in p), size)


def _unfold_op(x, k, d, p, s, osize):
    """One node for batched ``[N, C, H, W]`` and unbatched ``[C, H, W]`` input alike (as torch)."""
    unbatched = x.ndim == 3
    arr = _im2col(be(x).xp, x._data[None] if unbatched else x._data, k, d, p, s, osize)
    r = _make(arr[0] if unbatched else arr, x.dtype)
    if needs_grad(x):
        record("Im2ColBackward0", lambda g, size: _fold_op(g, size, k, d, p, s, osize), (x,), r,
               (tuple(x.shape[-2:]),))
    return r


def _fold_op(cols, size, k, d, p, s, osize):
    unbatched = cols.ndim == 2
    arr = _col2im(be(cols).xp, cols._data[None] if unbatched else cols._data, size, k, d, p, s, osize)
    r = _make(arr[0] if unbatched else arr, cols.dtype)
    if needs_grad(cols):
        record("Col2ImBackward0", lambda g: _unfold_op(g, k, d, p, s, osize), (cols,), r)
    return r


def _unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of an image, each flattened into a column (torch.nn.functional.unfold,
    im2col).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), float or complex. Returns ``[N,
    C*kH*kW, L]`` (or ``[C*kH*kW, L]``), ``L`` the number of blocks, ``prod((size + 2*padding -
    dilation*(k - 1) - 1) // stride + 1)`` over H and W. ``kernel_size``: the block, an int or a
    pair. ``dilation``: the spacing of a block's cells. ``padding``: zeros added on both sides.
    ``stride``: the step between blocks. Each is an int or a pair.

    NotImplementedError for other dtypes (as torch); IndexError for fewer than 3 dims (torch's
    type); RuntimeError for more than 4 dims or an empty non-batch dim, a non-positive kernel,
    stride or dilation, negative padding, or no block at all."""
    k, d, p, s = _block_args(input, kernel_size, dilation, padding, stride, "im2col_out_cpu")
    msg = ("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
           f"input, but got: {list(input.shape)}")
    if input.ndim < 3:
        raise IndexError(msg)  # torch's type: its shape check indexes a missing dim first
    if input.ndim > 4 or any(n == 0 for n in input.shape[-3:]):
        raise RuntimeError(msg)
    size = tuple(input.shape[-2:])
    osize = _blocks(size, k, d, p, s)
    if min(osize) < 1:
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={k}, dilation={d}, padding={p}, "
                           f"calculated shape of the array of sliding blocks as {osize}, but its components must "
                           "be at least one.")
    return _unfold_op(input, k, d, p, s, osize)


def _fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum sliding local blocks back into an image (torch.nn.functional.fold, col2im), the adjoint
    of unfold: overlapping values add up.

    ``input``: ``[N, C*kH*kW, L]`` (or unbatched ``[C*kH*kW, L]``), float or complex. Returns
    ``[N, C, H, W]`` (or ``[C, H, W]``) with ``(H, W) = output_size`` (an int or a pair).
    ``kernel_size``: the block, an int or a pair. ``dilation``, ``padding``, ``stride``: as
    unfold's, each an int or a pair; ``L`` must be the number of blocks they give for
    ``output_size``.

    RuntimeError (as torch) for an input of other dims or an empty non-batch dim, a dim 1 not
    divisible by ``kH*kW`` or an ``L`` that is not the number of blocks; other argument errors
    as unfold's."""
    k, d, p, s = _block_args(input, kernel_size, dilation, padding, stride, "col2im_out_cpu")
    size = _pair_arg(output_size, "output_size")
    if input.ndim not in (2, 3) or any(n == 0 for n in input.shape[1:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    rows, blocks = input.shape[-2:]
    if rows % (k[0] * k[1]):
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={rows} and kernel_size={k}.")
    osize = _blocks(size, k, d, p, s)
    if min(osize) < 1 or blocks != osize[0] * osize[1]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
                           "expected size of input's dimension 2 to match the calculated number of sliding blocks "
                           f"{max(0, osize[0])} * {max(0, osize[1])} = {max(0, osize[0]) * max(0, osize[1])}, "
                           f"but got input.size(2)={blocks}.")
    return _fold_op(input, size, k, d, p, s, osize)


def _long(t):
    from ._helpers import _type_name
    return _type_name(t.dtype)


def _tname(t):
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}.get(
        t.dtype.name, t.dtype.name)
