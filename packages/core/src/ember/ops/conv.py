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
# contiguous slice of length L = OH*Wp.  Outputs are computed on rows of width Wp (the
# Wp-OW extra columns are cropped when the result is written out), so the flat image gets
# (kW-1)*d1 elements of slack at its end.  Stacking the kh*kw slices gives the column
# matrix [kh*kw*C, L] of an image by plain row copies (no gather); one matrix product per
# chunk of images does the rest.  Chunks bound the temporary memory, and small ones keep
# the column buffer in cache and out of the allocator's fresh (page-faulting) mappings.
# The input gradient is itself such a convolution (of the output gradient, with the
# kernel flipped and its channel axes swapped) when that is the cheaper route.

_CHUNK_BYTES = 8 << 20
# Columns up to this size are kept from the forward for the weight gradient (small
# images, where rebuilding them costs more than the product); larger ones are rebuilt.
_KEEP_BYTES = 64 << 20


def _shift_geometry(xshape, wshape, pad, dilation):
    n, c, h, wd = xshape
    o, cg, kh, kw = wshape
    hp, wp = h + pad[0] + pad[1], wd + pad[2] + pad[3]
    oh, ow = hp - dilation[0] * (kh - 1), wp - dilation[1] * (kw - 1)
    offsets = [i * dilation[0] * wp + j * dilation[1] for i in range(kh) for j in range(kw)]
    return hp, wp, oh, ow, oh * wp, offsets


def _padded_flat(xp, x, pad, slack):
    """``x`` [N, C, H, W] zero-padded and flattened to [N, C, Hp*Wp + slack]."""
    n, c, h, wd = x.shape
    pt, pb, pl, pr = pad
    if pt == pb == pl == pr == slack == 0:
        return x.reshape(n, c, h * wd)
    hp, wp = h + pt + pb, wd + pl + pr
    flat = xp.zeros((n, c, hp * wp + slack), dtype=x.dtype)
    flat[:, :, :hp * wp].reshape(n, c, hp, wp)[:, :, pt:pt + h, pl:pl + wd] = x
    return flat


def _chunks(n, rows, length, itemsize):
    step = max(1, _CHUNK_BYTES // max(1, rows * length * itemsize))
    return [(b, min(n, b + step)) for b in range(0, n, step)]


def _shift_cols(xp, xs, offsets, length, buf=None):
    """[kh*kw*C, B*L]: the kh*kw slices of ``xs`` [B, C, Hp*Wp + slack], offsets outermost,
    images side by side (so that a chunk is one large matrix product, not one per image);
    written into ``buf`` when it has the right size."""
    b, c = xs.shape[:2]
    shape = (len(offsets) * c, b, length)
    cols = buf.reshape(shape) if buf is not None and buf.size == shape[0] * b * length else \
        xp.empty(shape, dtype=xs.dtype)
    for k, off in enumerate(offsets):
        cols[k * c:(k + 1) * c] = xs[:, :, off:off + length].transpose(1, 0, 2)
    return cols.reshape(shape[0], b * length)


def _weight_matrix(xp, w):
    """[O, C, kh, kw] -> [O, kh*kw*C], matching the row order of _shift_cols."""
    o, c, kh, kw = w.shape
    return xp.ascontiguousarray(w.transpose(0, 2, 3, 1)).reshape(o, kh * kw * c)


def _shift_fwd(xp, x, w, bias, pad, dilation, groups, keep_cols=False):
    """The convolution (plus ``bias`` [O] when given), and the columns (when wanted and
    small enough) for _shift_dw."""
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    hp, wp, oh, ow, length, offsets = _shift_geometry(x.shape, w.shape, pad, dilation)
    flat = _padded_flat(xp, x, pad, dilation[1] * (kw - 1))
    out = xp.empty((n, o, oh, ow), dtype=x.dtype)
    og = o // groups
    keep = keep_cols and kh * kw * c * n * length * x.itemsize <= _KEEP_BYTES
    kept = []
    for gi in range(groups):
        wm = _weight_matrix(xp, w[gi * og:(gi + 1) * og])
        b = None if bias is None else bias[gi * og:(gi + 1) * og].reshape(og, 1, 1, 1)
        buf = None
        for lo, hi in _chunks(n, kh * kw * cg, length, x.itemsize):
            buf = _shift_cols(xp, flat[lo:hi, gi * cg:(gi + 1) * cg], offsets, length, None if keep else buf)
            res = (wm @ buf).reshape(og, hi - lo, oh, wp)[..., :ow]
            target = out[lo:hi, gi * og:(gi + 1) * og].transpose(1, 0, 2, 3)
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
    n, c, h, wd = xshape
    o, cg, kh, kw = w.shape
    hp, wp, oh, ow, length, offsets = _shift_geometry(xshape, w.shape, pad, dilation)
    dx = xp.zeros((n, c, hp * wp + dilation[1] * (kw - 1)), dtype=g.dtype)
    og = o // groups
    for gi in range(groups):
        wmt = xp.ascontiguousarray(_weight_matrix(xp, w[gi * og:(gi + 1) * og]).T)   # [kh*kw*cg, og]
        for lo, hi in _chunks(n, kh * kw * cg, length, g.itemsize):
            gm = _grad_rows(xp, g[lo:hi, gi * og:(gi + 1) * og], wp)
            dcols = (wmt @ gm).reshape(kh * kw * cg, hi - lo, length)
            target = dx[lo:hi, gi * cg:(gi + 1) * cg]
            for k, off in enumerate(offsets):
                target[:, :, off:off + length] += dcols[k * cg:(k + 1) * cg].transpose(1, 0, 2)
    dx = dx[:, :, :hp * wp].reshape(n, c, hp, wp)[:, :, pad[0]:pad[0] + h, pad[2]:pad[2] + wd]
    return xp.ascontiguousarray(dx)


def _shift_dx_as_conv(xp, g, w, xshape, pad, dilation, groups):
    """The input gradient as a convolution of ``g`` with the flipped, channel-swapped
    kernel, padded so that its output covers exactly the unpadded input."""
    n, c, h, wd = xshape
    o, cg, kh, kw = w.shape
    og = o // groups
    wt = w.reshape(groups, og, cg, kh, kw).transpose(0, 2, 1, 3, 4).reshape(c, og, kh, kw)[:, :, ::-1, ::-1]
    full = (dilation[0] * (kh - 1),) * 2 + (dilation[1] * (kw - 1),) * 2
    tpad = tuple(f - p for f, p in zip(full, pad))
    dx, _ = _shift_fwd(xp, g, wt, None, tuple(max(0, p) for p in tpad), dilation, groups)
    if min(tpad) < 0:  # padding beyond the kernel's reach: those outputs see only zeros
        top, left = max(0, -tpad[0]), max(0, -tpad[2])
        dx = xp.ascontiguousarray(dx[:, :, top:top + h, left:left + wd])
    return dx


def _grad_rows(xp, g, wp):
    """``g`` [B, O, OH, OW] as [O, B*OH*Wp]: rows widened to Wp with zero columns (the
    cropped positions add nothing), channels outermost."""
    b, o, oh, ow = g.shape
    rows = xp.empty((o, b, oh, wp), dtype=g.dtype)
    rows[..., ow:] = 0
    rows[..., :ow] = g.transpose(1, 0, 2, 3)
    return rows.reshape(o, b * oh * wp)


def _shift_dw(xp, x, g, wshape, pad, dilation, groups, kept_cols=None):
    n, c = x.shape[:2]
    o, cg, kh, kw = wshape
    hp, wp, oh, ow, length, offsets = _shift_geometry(x.shape, wshape, pad, dilation)
    flat = None if kept_cols else _padded_flat(xp, x, pad, dilation[1] * (kw - 1))
    og = o // groups
    parts = []
    kept = iter(kept_cols or ())
    for gi in range(groups):
        dwm = None
        buf = None
        for lo, hi in _chunks(n, kh * kw * cg, length, x.itemsize):
            cols = next(kept, None)
            if cols is None:
                cols = buf = _shift_cols(xp, flat[lo:hi, gi * cg:(gi + 1) * cg], offsets, length, buf)
            part = _grad_rows(xp, g[lo:hi, gi * og:(gi + 1) * og], wp) @ cols.T
            dwm = part if dwm is None else xp.add(dwm, part, out=dwm)
        parts.append(dwm.reshape(og, kh, kw, cg).transpose(0, 3, 1, 2))
    return xp.ascontiguousarray(parts[0] if groups == 1 else xp.concatenate(parts, 0))


# ---- any stride: a column matrix --------------------------------------------------

def _conv_fwd(xp, x, w, bias, stride, pad, dilation, groups, keep_cols=False):
    """The convolution plus ``bias`` (None or [O]), and (when ``keep_cols``) its column
    matrices for the weight gradient."""
    if stride == (1, 1):
        return _shift_fwd(xp, x, w, bias, pad, dilation, groups, keep_cols)
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
    if bias is not None:
        out += bias.reshape(o, 1)
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

def _conv(x, w, b, stride, pad, dilation, groups):
    """y = conv(x, w) + b as one node (b may be None), as torch records it."""
    grad = needs_grad(x, w, b)
    # the weight gradient multiplies by the same columns: keep them rather than unfold twice
    arr, cols = _conv_fwd(be(x).xp, x._data, w._data, None if b is None else b._data, stride, pad, dilation,
                          groups, keep_cols=grad and w._requires_grad)
    r = _make(arr, x.dtype)
    if grad:
        record("ConvolutionBackward0", _conv_rule, (x, w, b), r,
               (x, w, b is not None and b._requires_grad, stride, pad, dilation, groups, cols))
    return r


def _conv_rule(g, x, w, bias_req, stride, pad, dilation, groups, cols):
    from .reduction import sum as _sum
    gx = _conv_input_grad(g, w, tuple(x.shape), stride, pad, dilation, groups) if x._requires_grad else None
    gw = _conv_weight_grad(x, g, tuple(w.shape), stride, pad, dilation, groups, cols) if w._requires_grad else None
    return gx, gw, (_sum(g, (0, 2, 3)) if bias_req else None)


def _conv_input_grad(g, w, xshape, stride, pad, dilation, groups):
    r = _make(_conv_dx(be(g).xp, g._data, w._data, xshape, stride, pad, dilation, groups), g.dtype)
    if needs_grad(g, w):
        record("ConvolutionBackwardBackward0", _input_grad_rule, (g, w), r, (g, w, stride, pad, dilation, groups))
    return r


def _input_grad_rule(gg, g, w, stride, pad, dilation, groups):
    # r = conv^T(g; w): linear in g (adjoint of conv) and in w
    d_g = _conv(gg, w, None, stride, pad, dilation, groups) if g._requires_grad else None
    d_w = _conv_weight_grad(gg, g, tuple(w.shape), stride, pad, dilation, groups) if w._requires_grad else None
    return d_g, d_w


def _conv_weight_grad(x, g, wshape, stride, pad, dilation, groups, kept_cols=None):
    r = _make(_conv_dw(be(x).xp, x._data, g._data, wshape, stride, pad, dilation, groups, kept_cols), x.dtype)
    if needs_grad(x, g):
        record("ConvolutionBackwardBackward1", _weight_grad_rule, (x, g), r, (x, g, stride, pad, dilation, groups))
    return r


def _weight_grad_rule(gg, x, g, stride, pad, dilation, groups):
    d_x = _conv_input_grad(g, gg, tuple(x.shape), stride, pad, dilation, groups) if x._requires_grad else None
    d_g = _conv(x, gg, None, stride, pad, dilation, groups) if g._requires_grad else None
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
    if bias is not None:
        check_same_device(input, bias, "conv2d")
    out = _conv(x, weight, bias, stride, pad, dilation, groups)
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

