"""Convolutions (torch.nn.functional.conv1d / conv2d) as a few large matrix products.

The input is unfolded with a strided view (no Python loop over pixels) into a column
matrix ``[C*kh*kw, N*OH*OW]`` and multiplied by the weight matrix ``[O, C*kh*kw]``.  The
gradients are the same products transposed, plus a col2im that adds the columns back
with one loop over the kh*kw kernel offsets.  Three ops close the family under
differentiation, so double backward works: ``conv2d`` (y = conv(x, w)), its input
gradient (a transposed convolution of the output gradient) and its weight gradient;
each one's gradient rule is written with the other two.
"""

from __future__ import annotations

from .._tensor import Tensor, _make
from ._helpers import be, check_same_device, needs_grad, record

__all__ = ["conv2d", "conv1d"]


def _pair(v, name="stride"):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return (int(v[0]), int(v[0]))
        return (int(v[0]), int(v[1]))
    return (int(v), int(v))


# ---- array kernels -----------------------------------------------------------------

def _pad(xp, x, pad):
    pt, pb, pl, pr = pad
    if pt == pb == pl == pr == 0:
        return x
    return xp.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))


def _windows(xp, xpad, kh, kw, stride, dilation, oh, ow):
    """View ``[N, C, OH, OW, kh, kw]`` of the receptive fields of a padded input."""
    n, c = xpad.shape[:2]
    s0, s1, s2, s3 = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad, (n, c, oh, ow, kh, kw),
        (s0, s1, s2 * stride[0], s3 * stride[1], s2 * dilation[0], s3 * dilation[1]))


def _cols(xp, xpad, kh, kw, stride, dilation, oh, ow):
    """The column matrix ``[C*kh*kw, N*OH*OW]`` (one copy of the strided view)."""
    win = _windows(xp, xpad, kh, kw, stride, dilation, oh, ow)
    n, c = xpad.shape[:2]
    return win.transpose(1, 4, 5, 0, 2, 3).reshape(c * kh * kw, n * oh * ow)


def _out_size(h, k, stride, pad0, pad1, dil):
    return (h + pad0 + pad1 - dil * (k - 1) - 1) // stride + 1


# ---- stride 1: columns from contiguous slices of the flattened image ----------------
#
# With the padded image flattened to [N, C, Hp*Wp], the input that kernel offset (i, j)
# meets at output (h, w) sits at h*Wp + w + (i*d0*Wp + j*d1): for each offset, one
# contiguous slice of length L = (OH-1)*Wp + OW.  Outputs are computed on rows of width Wp
# (the Wp-OW extra columns are cropped at the end).  Stacking the kh*kw slices gives the
# column matrix [kh*kw*C, L] of an image by plain row copies (no gather), and one matrix
# product per chunk of images does the rest.  Chunks bound the temporary memory.

_CHUNK_BYTES = 32 << 20
# Columns up to this size are kept from the forward for the weight gradient (small
# images, where rebuilding them costs more than the product); larger ones are rebuilt.
_KEEP_BYTES = 64 << 20


def _shift_geometry(xshape, wshape, pad, dilation):
    n, c, h, wd = xshape
    o, cg, kh, kw = wshape
    hp, wp = h + pad[0] + pad[1], wd + pad[2] + pad[3]
    oh, ow = hp - dilation[0] * (kh - 1), wp - dilation[1] * (kw - 1)
    offsets = [i * dilation[0] * wp + j * dilation[1] for i in range(kh) for j in range(kw)]
    return hp, wp, oh, ow, (oh - 1) * wp + ow, offsets


def _chunks(n, rows, length, itemsize):
    step = max(1, _CHUNK_BYTES // max(1, rows * length * itemsize))
    return [(b, min(n, b + step)) for b in range(0, n, step)]


def _shift_cols(xp, xs, offsets, length):
    """[kh*kw*C, B*L]: the kh*kw slices of ``xs`` [B, C, Hp*Wp], offsets outermost, images
    side by side (so that a chunk is one large matrix product, not one per image)."""
    b, c = xs.shape[:2]
    cols = xp.empty((len(offsets) * c, b, length), dtype=xs.dtype)
    for k, off in enumerate(offsets):
        cols[k * c:(k + 1) * c] = xs[:, :, off:off + length].transpose(1, 0, 2)
    return cols.reshape(len(offsets) * c, b * length)


def _weight_matrix(xp, w):
    """[O, C, kh, kw] -> [O, kh*kw*C], matching the row order of _shift_cols."""
    o, c, kh, kw = w.shape
    return xp.ascontiguousarray(w.transpose(0, 2, 3, 1)).reshape(o, kh * kw * c)


def _grad_matrix(xp, gfull, lo, hi, channels, length):
    """Rows ``channels`` of images lo:hi of the widened gradient as [O, B*L]."""
    g = gfull[lo:hi, channels, :length]
    return xp.ascontiguousarray(g.transpose(1, 0, 2)).reshape(g.shape[1], (hi - lo) * length)


def _shift_fwd(xp, x, w, pad, dilation, groups, keep_cols=False):
    """The convolution, and the columns (when wanted and small enough) for _shift_dw."""
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    hp, wp, oh, ow, length, offsets = _shift_geometry(x.shape, w.shape, pad, dilation)
    flat = _pad(xp, x, pad).reshape(n, c, hp * wp)
    out = xp.empty((n, o, oh * wp), dtype=x.dtype)
    og = o // groups
    keep = keep_cols and kh * kw * c * n * length * x.itemsize <= _KEEP_BYTES
    kept = []
    for gi in range(groups):
        wm = _weight_matrix(xp, w[gi * og:(gi + 1) * og])
        for lo, hi in _chunks(n, kh * kw * cg, length, x.itemsize):
            cols = _shift_cols(xp, flat[lo:hi, gi * cg:(gi + 1) * cg], offsets, length)
            res = (wm @ cols).reshape(og, hi - lo, length)
            out[lo:hi, gi * og:(gi + 1) * og, :length] = res.transpose(1, 0, 2)
            if keep:
                kept.append(cols)
    return xp.ascontiguousarray(out.reshape(n, o, oh, wp)[:, :, :, :ow]), kept


def _padded_rows(xp, g, wp):
    """``g`` [N, O, OH, OW] widened with zero columns to rows of width Wp, flattened."""
    n, o, oh, ow = g.shape
    full = xp.zeros((n, o, oh, wp), dtype=g.dtype)
    full[:, :, :, :ow] = g
    return full.reshape(n, o, oh * wp)


def _shift_dx(xp, g, w, xshape, pad, dilation, groups):
    n, c, h, wd = xshape
    o, cg, kh, kw = w.shape
    hp, wp, oh, ow, length, offsets = _shift_geometry(xshape, w.shape, pad, dilation)
    gfull = _padded_rows(xp, g, wp)
    dx = xp.zeros((n, c, hp * wp), dtype=g.dtype)
    og = o // groups
    for gi in range(groups):
        wmt = xp.ascontiguousarray(_weight_matrix(xp, w[gi * og:(gi + 1) * og]).T)   # [kh*kw*cg, og]
        for lo, hi in _chunks(n, kh * kw * cg, length, g.itemsize):
            gm = _grad_matrix(xp, gfull, lo, hi, slice(gi * og, (gi + 1) * og), length)
            dcols = (wmt @ gm).reshape(kh * kw * cg, hi - lo, length)
            target = dx[lo:hi, gi * cg:(gi + 1) * cg]
            for k, off in enumerate(offsets):
                target[:, :, off:off + length] += dcols[k * cg:(k + 1) * cg].transpose(1, 0, 2)
    dx = dx.reshape(n, c, hp, wp)[:, :, pad[0]:pad[0] + h, pad[2]:pad[2] + wd]
    return xp.ascontiguousarray(dx)


def _shift_dw(xp, x, g, wshape, pad, dilation, groups, kept_cols=None):
    n, c = x.shape[:2]
    o, cg, kh, kw = wshape
    hp, wp, oh, ow, length, offsets = _shift_geometry(x.shape, wshape, pad, dilation)
    flat = None if kept_cols else _pad(xp, x, pad).reshape(n, c, hp * wp)
    gfull = _padded_rows(xp, g, wp)  # zero columns: the cropped positions add nothing
    og = o // groups
    parts = []
    kept = iter(kept_cols or ())
    for gi in range(groups):
        dwm = xp.zeros((og, kh * kw * cg), dtype=x.dtype)
        for lo, hi in _chunks(n, kh * kw * cg, length, x.itemsize):
            cols = next(kept, None)
            if cols is None:
                cols = _shift_cols(xp, flat[lo:hi, gi * cg:(gi + 1) * cg], offsets, length)
            dwm += _grad_matrix(xp, gfull, lo, hi, slice(gi * og, (gi + 1) * og), length) @ cols.T
        parts.append(dwm.reshape(og, kh, kw, cg).transpose(0, 3, 1, 2))
    return xp.ascontiguousarray(parts[0] if groups == 1 else xp.concatenate(parts, 0))


# ---- any stride: a column matrix --------------------------------------------------

def _conv_fwd(xp, x, w, stride, pad, dilation, groups, keep_cols=False):
    """The convolution, and (when ``keep_cols``, strided only) its column matrices for the
    weight gradient."""
    if stride == (1, 1):
        return _shift_fwd(xp, x, w, pad, dilation, groups, keep_cols)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = _out_size(h, kh, stride[0], pad[0], pad[1], dilation[0])
    ow = _out_size(wd, kw, stride[1], pad[2], pad[3], dilation[1])
    xpad = _pad(xp, x, pad)
    og = o // groups
    outs, kept = [], []
    for gi in range(groups):
        xs = xpad if groups == 1 else xpad[:, gi * cg:(gi + 1) * cg]
        cols = _cols(xp, xs, kh, kw, stride, dilation, oh, ow)
        wm = w[gi * og:(gi + 1) * og].reshape(og, cg * kh * kw)
        outs.append(wm @ cols)                                  # [og, N*OH*OW]
        if keep_cols:
            kept.append(cols)
    out = outs[0] if groups == 1 else xp.concatenate(outs, 0)
    return xp.ascontiguousarray(out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3)), kept


def _conv_dx(xp, g, w, xshape, stride, pad, dilation, groups):
    """Gradient of conv with respect to its input (a transposed convolution of ``g``)."""
    if stride == (1, 1):
        return _shift_dx(xp, g, w, xshape, pad, dilation, groups)
    n, c, h, wd = xshape
    o, cg, kh, kw = w.shape
    oh, ow = g.shape[2], g.shape[3]
    og = o // groups
    gm = g.transpose(1, 0, 2, 3).reshape(o, n * oh * ow)
    hp, wp = h + pad[0] + pad[1], wd + pad[2] + pad[3]
    dx = xp.zeros((n, c, hp, wp), dtype=g.dtype)
    sh, sw = stride
    for gi in range(groups):
        wm = w[gi * og:(gi + 1) * og].reshape(og, cg * kh * kw)
        dcols = (wm.T @ gm[gi * og:(gi + 1) * og]).reshape(cg, kh, kw, n, oh, ow)
        dxs = dx[:, gi * cg:(gi + 1) * cg]
        for i in range(kh):
            hi = i * dilation[0]
            for j in range(kw):
                wj = j * dilation[1]
                dxs[:, :, hi:hi + sh * (oh - 1) + 1:sh, wj:wj + sw * (ow - 1) + 1:sw] += \
                    dcols[:, i, j].transpose(1, 0, 2, 3)
    if any(pad):
        dx = xp.ascontiguousarray(dx[:, :, pad[0]:pad[0] + h, pad[2]:pad[2] + wd])
    return dx


def _conv_dw(xp, x, g, wshape, stride, pad, dilation, groups, kept_cols=None):
    """Gradient of conv with respect to its weight (reusing the forward's columns if kept)."""
    if stride == (1, 1):
        return _shift_dw(xp, x, g, wshape, pad, dilation, groups, kept_cols)
    n = x.shape[0]
    o, cg, kh, kw = wshape
    oh, ow = g.shape[2], g.shape[3]
    og = o // groups
    xpad = _pad(xp, x, pad) if not kept_cols else None
    gm = g.transpose(1, 0, 2, 3).reshape(o, n * oh * ow)
    parts = []
    for gi in range(groups):
        if kept_cols:
            cols = kept_cols[gi]
        else:
            xs = xpad if groups == 1 else xpad[:, gi * cg:(gi + 1) * cg]
            cols = _cols(xp, xs, kh, kw, stride, dilation, oh, ow)
        parts.append(gm[gi * og:(gi + 1) * og] @ cols.T)
    dw = parts[0] if groups == 1 else xp.concatenate(parts, 0)
    return dw.reshape(wshape)


# ---- differentiable ops ------------------------------------------------------------

def _conv(x, w, stride, pad, dilation, groups):
    grad = needs_grad(x, w)
    # the weight gradient multiplies by the same columns: keep them rather than unfold twice
    arr, cols = _conv_fwd(be(x).xp, x._data, w._data, stride, pad, dilation, groups,
                          keep_cols=grad and w._requires_grad)
    r = _make(arr, x.dtype)
    if grad:
        record("ConvolutionBackward0", _conv_rule, (x, w), r, (x, w, stride, pad, dilation, groups, cols))
    return r


def _conv_rule(g, x, w, stride, pad, dilation, groups, cols):
    gx = _conv_input_grad(g, w, tuple(x.shape), stride, pad, dilation, groups) if x._requires_grad else None
    gw = _conv_weight_grad(x, g, tuple(w.shape), stride, pad, dilation, groups, cols) if w._requires_grad else None
    return gx, gw


def _conv_input_grad(g, w, xshape, stride, pad, dilation, groups):
    r = _make(_conv_dx(be(g).xp, g._data, w._data, xshape, stride, pad, dilation, groups), g.dtype)
    if needs_grad(g, w):
        record("ConvolutionBackwardBackward0", _input_grad_rule, (g, w), r, (g, w, stride, pad, dilation, groups))
    return r


def _input_grad_rule(gg, g, w, stride, pad, dilation, groups):
    # r = conv^T(g; w): linear in g (adjoint of conv) and in w
    d_g = _conv(gg, w, stride, pad, dilation, groups) if g._requires_grad else None
    d_w = _conv_weight_grad(gg, g, tuple(w.shape), stride, pad, dilation, groups) if w._requires_grad else None
    return d_g, d_w


def _conv_weight_grad(x, g, wshape, stride, pad, dilation, groups, kept_cols=None):
    r = _make(_conv_dw(be(x).xp, x._data, g._data, wshape, stride, pad, dilation, groups, kept_cols), x.dtype)
    if needs_grad(x, g):
        record("ConvolutionBackwardBackward1", _weight_grad_rule, (x, g), r, (x, g, stride, pad, dilation, groups))
    return r


def _weight_grad_rule(gg, x, g, stride, pad, dilation, groups):
    d_x = _conv_input_grad(g, gg, tuple(x.shape), stride, pad, dilation, groups) if x._requires_grad else None
    d_g = _conv(x, gg, stride, pad, dilation, groups) if g._requires_grad else None
    return d_x, d_g


def _same_pad(k, d):
    total = d * (k - 1)
    return total // 2, total - total // 2


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution (cross-correlation) as torch.nn.functional.conv2d.

    input ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), weight ``[O, C/groups, kH, kW]``,
    bias ``[O]``; returns ``[N, O, H_out, W_out]`` with
    ``H_out = (H + 2*padding - dilation*(kH-1) - 1) // stride + 1``. ``padding`` may be an
    int, a pair, 'valid' (none) or 'same' (output as large as the input, stride 1; an even
    kernel pads one more on the bottom/right, as torch does).
    """
    stride, dilation = _pair(stride), _pair(dilation)
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"conv2d(): argument 'input' must be Tensor, not {type(input).__name__}")
    if weight.ndim != 4:
        raise RuntimeError(f"weight should have at least three dimensions, got a {weight.ndim}-d weight "
                           f"of size {list(weight.shape)}" if weight.ndim < 3 else
                           f"Expected 4-dimensional weight for conv2d, but got weight of size {list(weight.shape)}")
    unbatched = input.ndim == 3
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
                           f"{list(input.shape)}")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({_tname(input)}) and bias type ({_tname(bias)}) should be the same")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"expected scalar type {_long(input)} but found {_long(weight)}")
    check_same_device(input, weight, "conv2d")
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    if min(stride) < 1:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) < 1:
        raise RuntimeError("dilation should be greater than zero")
    x = input.unsqueeze(0) if unbatched else input
    o, cg, kh, kw = weight.shape
    c = x.shape[1]
    if c != cg * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {cg * groups} channels, but got {c} channels instead")
    if o % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{o} elements, but got bias of size {list(bias.shape)} instead")
    if isinstance(padding, str):
        if padding == "valid":
            pad = (0, 0, 0, 0)
        elif padding == "same":
            if max(stride) != 1:
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pad = _same_pad(kh, dilation[0]) + _same_pad(kw, dilation[1])
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        ph, pw = _pair(padding)
        if min(ph, pw) < 0:
            raise RuntimeError("negative padding is not supported")
        pad = (ph, ph, pw, pw)
    h, w = x.shape[2], x.shape[3]
    eh, ew = h + pad[0] + pad[1], w + pad[2] + pad[3]
    if eh < dilation[0] * (kh - 1) + 1 or ew < dilation[1] * (kw - 1) + 1:
        raise RuntimeError(f"Calculated padded input size per channel: ({eh} x {ew}). Kernel size: "
                           f"({dilation[0] * (kh - 1) + 1} x {dilation[1] * (kw - 1) + 1}). "
                           "Kernel size can't be greater than actual input size")
    out = _conv(x, weight, stride, pad, dilation, groups)
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution: input ``[N, C, L]`` (or ``[C, L]``), weight ``[O, C/groups, k]``;
    computed as conv2d over a height-1 image (torch.nn.functional.conv1d)."""
    if weight.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional weight for conv1d, but got weight of size {list(weight.shape)}")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
                           f"{list(input.shape)}")
    s = (1, stride[0] if isinstance(stride, (tuple, list)) else stride)
    d = (1, dilation[0] if isinstance(dilation, (tuple, list)) else dilation)
    p = padding if isinstance(padding, str) else (0, padding[0] if isinstance(padding, (tuple, list)) else padding)
    out = conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, s, p, d, groups)
    return out.squeeze(-2)


def _long(t):
    from ._helpers import _type_name
    return _type_name(t.dtype)


def _tname(t):
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}.get(
        t.dtype.name, t.dtype.name)

