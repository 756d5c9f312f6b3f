"""Convolution kernels: column building (im2col), its adjoint (col2im) and direct
depthwise convolution, for ``ops/conv.py``.

Every kernel works on 5-d arrays ``[N, C, D, H, W]`` (1-d and 2-d convolutions get unit
dims in front), reads its input in any memory layout (channels-last included), pads on
the fly (no padded copy) and processes a range of rows (image-channel planes) so that
``parallel_for`` splits it over threads.  The matrix products stay in numpy's BLAS:

* dense and grouped convolutions: blocks of columns ``[K, P_block]`` (``K = C/groups *
  prod(k)`` rows in the weight's own order, plus a row of ones that carries the bias
  through the product), one image's band of output rows or several small images side by
  side; each block is built and multiplied (``w[O, K] @ cols`` written into the output)
  by one thread, with BLAS on one thread meanwhile (see ``_split``).  The input gradient
  is ``w^T @ g`` per block followed by col2im, the weight gradient ``g @ cols^T`` summed
  over the blocks.  1x1 convolutions without stride or padding multiply the input as it
  is.
* small dense convolutions (below ``ops.conv.KERNEL_MIN_MACS``) when no columns are kept
  for a weight gradient: the column matrix of a chunk of images in the weight's own row
  order and one product on every BLAS thread (``forward_whole``; 1x1 ones as numpy's
  stacked product), or, with few channels per group (``direct_pays``), no columns at
  all: one multiply-add pass per tap (``forward_direct``).  Strided 2-d columns and
  passes read the input's stride phases (``_phase_split``), so each row is a contiguous
  copy.
* depthwise convolutions (one input channel per group, any channel multiplier): no
  product; the forward (and the stride-1 input gradient, the forward with the flipped
  kernel) as one flat vector pass per kernel offset over a zero-padded plane, the other
  input gradients as a scatter, the weight gradient as lane-wise sums.

The result layout is C-contiguous; ``ops/conv.py`` gives channels-last results back in
channels-last as the numpy path does.  Geometry travels as one int64 array ``geo``:
kernel (3), stride (3), low padding (3), dilation (3), in that order.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ..._blas import POOL, blas_threads, get_num_threads
from ..._blas import matmul as blas_matmul
from ._runtime import PARALLEL_MIN_WORK, _executor, jit, parallel_for, threads

__all__ = ["forward", "forward_whole", "forward_whole_kept", "forward_direct", "direct_pays", "input_grad",
           "input_grad_flat", "flat_input_grad_applies", "weight_grad", "weight_grad_kept", "bias_grad",
           "is_depthwise", "WholeColumns"]

# bytes of one block's columns (a band of output rows of one image): about a core's L2
_BLOCK_BYTES = 512 << 10
# images with fewer output positions go several to a block
_SMALL_POSITIONS = 256
# bytes of the column matrix of one chunk of images in forward_whole
_WHOLE_BYTES = 8 << 20


@jit
def _span(off, stride, n_out, n_in):
    """The output positions q in [lo, hi) whose input q*stride + off lies in [0, n_in)."""
    lo = 0 if off >= 0 else (-off + stride - 1) // stride
    top = n_in - 1 - off
    hi = top // stride + 1 if top >= 0 else 0
    lo = min(lo, n_out)
    hi = max(min(hi, n_out), lo)
    return lo, hi


@jit
def _spans(kw, dw, pw, sw, ow, w_in):
    """_span of every kernel column, computed once per call (two integer divisions each,
    which cost as much as a short row's arithmetic)."""
    los = np.empty(kw, dtype=np.int64)
    his = np.empty(kw, dtype=np.int64)
    for k in range(kw):
        los[k], his[k] = _span(k * dw - pw, sw, ow, w_in)
    return los, his


# Inner loops run over 1-d views from index 0 (``for q in range(n): d[q] = s[q]``): with
# indices numba cannot prove non-negative it checks for wrap-around on every access and
# LLVM leaves the loop scalar (6x slower, measured on the depthwise forward).

@jit
def _im2col(start, stop, x, cols, geo, osize, t0, t1):
    """Rows [start, stop) of (image, channel): cols[b, c*kk + k, p] = x at kernel offset k
    of output position p (zero where the window leaves the input), for the output rows
    (depth-height pairs, flattened) t0 <= t < t1 only."""
    nc = x.shape[1]
    d_in, h_in, w_in = x.shape[2], x.shape[3], x.shape[4]
    kd, kh, kw = geo[0], geo[1], geo[2]
    sd, sh, sw = geo[3], geo[4], geo[5]
    pd, ph, pw = geo[6], geo[7], geo[8]
    dd, dh, dw = geo[9], geo[10], geo[11]
    oh, ow = osize[1], osize[2]
    zero = cols.dtype.type(0)
    for r in range(start, stop):
        b = r // nc
        c = r - b * nc
        row = c * kd * kh * kw
        for i in range(kd):
            for j in range(kh):
                for k in range(kw):
                    off = k * dw - pw
                    lo, hi = _span(off, sw, ow, w_in)
                    p = 0
                    for t in range(t0, t1):
                        a = t // oh
                        e = t - a * oh
                        z = a * sd + i * dd - pd
                        y = e * sh + j * dh - ph
                        dst = cols[b, row, p:p + ow]
                        if 0 <= z < d_in and 0 <= y < h_in:
                            for q in range(lo):
                                dst[q] = zero
                            d = dst[lo:hi]
                            src = x[b, c, z, y, lo * sw + off:]
                            if sw == 1:
                                for q in range(hi - lo):
                                    d[q] = src[q]
                            else:
                                for q in range(hi - lo):
                                    d[q] = src[q * sw]
                            tail = dst[hi:]
                            for q in range(ow - hi):
                                tail[q] = zero
                        else:
                            for q in range(ow):
                                dst[q] = zero
                        p += ow
                    row += 1


@jit
def _phase_split(start, stop, x, xq, sh, sw):
    """Rows [start, stop) of (image, channel): xq[b, c, py*sW + px, u, v] = x[b, c, u*sH + py,
    v*sW + px], the input's stride phases as separate planes, so that the columns of a
    strided convolution are contiguous copies (one read of the input for a matrix
    prod(k)/(sH*sW) times larger)."""
    nc = x.shape[1]
    h_in, w_in = x.shape[2], x.shape[3]
    for r in range(start, stop):
        b = r // nc
        c = r - b * nc
        for py in range(sh):
            for u in range((h_in - py + sh - 1) // sh):
                src = x[b, c, u * sh + py]
                for px in range(sw):
                    dst = xq[b, c, py * sw + px, u]
                    s0 = src[px:]
                    for v in range((w_in - px + sw - 1) // sw):
                        dst[v] = s0[v * sw]


@jit
def _im2col_2d(start, stop, xq, cols, h_in, w_in, kh, kw, sh, sw, ph, pw, dh, dw, ow, t0, t1):
    """_im2col for 2-d convolutions from the phase planes ``xq`` of _phase_split (the input
    itself as ``x[:, :, None]`` at stride 1): rows [start, stop) of (image, channel),
    output rows t0 <= e < t1, into ``cols`` [B, C*kH*kW, (t1-t0)*W_out].  Kernel offset
    (j, k) at output cell (e, q) reads input (e*sH + J, q*sW + K), J = j*dH - pH, K = k*dW
    - pW: phase (J mod sH, K mod sW), cell (e + J // sH, q + K // sW), so every row of
    columns is one contiguous copy."""
    nc = xq.shape[1]
    zero = cols.dtype.type(0)
    for r in range(start, stop):
        b = r // nc
        c = r - b * nc
        row = c * kh * kw
        for j in range(kh):
            jj = j * dh - ph
            py = jj % sh
            jq = jj // sh
            for k in range(kw):
                kx = k * dw - pw
                px = kx % sw
                kq = kx // sw
                lo, hi = _span(kx, sw, ow, w_in)
                dst = cols[b, row]
                plane = xq[b, c, py * sw + px]
                for e in range(t0, t1):
                    y = e * sh + jj
                    d = dst[(e - t0) * ow:]
                    if 0 <= y < h_in:
                        for q in range(lo):
                            d[q] = zero
                        dm = d[lo:hi]
                        src = plane[e + jq, lo + kq:]
                        for q in range(hi - lo):
                            dm[q] = src[q]
                        dt = d[hi:]
                        for q in range(ow - hi):
                            dt[q] = zero
                    else:
                        for q in range(ow):
                            d[q] = zero
                row += 1


# output cells per item of the direct convolution: its accumulator row stays in L1
_DIRECT_CHUNK = 1024
# accumulator cells per band of the 2-d direct convolution (it and its four input streams in L1)
_DIRECT_BAND = 1024


@jit(fastmath={"contract"})
def _direct_fwd(start, stop, xq, w, bias, has_bias, out, h_in, w_in, sh, sw, ph, pw, dh, dw, chunks):
    """Items [start, stop) of (image, output channel, output row, chunk of _DIRECT_CHUNK
    cells) of a 2-d convolution (1-d as one row) without columns or product: the output
    cells start at the bias and take one contiguous multiply-add pass per input channel
    and kernel offset, reading the stride phases ``xq`` of _phase_split (cell (e, q) at
    offset (j, k) reads phase (J mod sH, K mod sW), cell (e + J // sH, q + K // sW), J =
    j*dH - pH, K = k*dW - pW).  For convolutions with few channels per group, where the
    column matrix would be prod(k) times the input and the product too thin for BLAS."""
    no, cg = w.shape[0], w.shape[1]
    kh, kw = w.shape[2], w.shape[3]
    oh, ow = out.shape[2], out.shape[3]
    og = no // (xq.shape[1] // cg)
    for it in range(start, stop):
        r = it // chunks
        q0 = (it - r * chunks) * _DIRECT_CHUNK
        q1 = min(ow, q0 + _DIRECT_CHUNK)
        m = q1 - q0
        rest = r // oh
        e = r - rest * oh
        b = rest // no
        o = rest - b * no
        c0 = (o // og) * cg
        acc = out[b, o, e, q0:q1]
        v = bias[o] if has_bias else out.dtype.type(0)
        for q in range(m):
            acc[q] = v
        for c in range(cg):
            for j in range(kh):
                jj = j * dh - ph
                y = e * sh + jj
                if y < 0 or y >= h_in:
                    continue
                pyy = jj % sh
                row = e + jj // sh
                for k in range(kw):
                    kx = k * dw - pw
                    px = kx % sw
                    kq = kx // sw
                    lo, hi = _span(kx, sw, ow, w_in)
                    lo = min(max(lo - q0, 0), m)
                    hi = max(min(hi - q0, m), lo)
                    wv = w[o, c, j, k]
                    seg = acc[lo:hi]
                    src = xq[b, c0 + c, pyy * sw + px, row, q0 + lo + kq:]
                    for q in range(hi - lo):
                        seg[q] += wv * src[q]


@jit
def _phase_split_padded(start, stop, x, xq, sh, sw, ph, pw):
    """Rows [start, stop) of (image, channel): the stride phases of the zero-padded input,
    xq[b, c, py*sW + px, u, v] = xpad[u*sH + py, v*sW + px] with xpad[y, x] = x[y - pH,
    x - pW] (``xq`` comes zeroed: the padding and the slack stay zero)."""
    nc = x.shape[1]
    h_in, w_in = x.shape[2], x.shape[3]
    for r in range(start, stop):
        b = r // nc
        c = r - b * nc
        for py in range(sh):
            for u in range(xq.shape[3]):
                y = u * sh + py - ph
                if y < 0 or y >= h_in:
                    continue
                src = x[b, c, y]
                for px in range(sw):
                    # cells v with 0 <= v*sW + px - pW < W
                    off = px - pw
                    lo, hi = _span(off, sw, xq.shape[4], w_in)
                    dst = xq[b, c, py * sw + px, u, lo:hi]
                    s0 = src[lo * sw + off:]
                    if sw == 2:  # a constant stride: LLVM deinterleaves the loads
                        for v in range(hi - lo):
                            dst[v] = s0[2 * v]
                    else:
                        for v in range(hi - lo):
                            dst[v] = s0[v * sw]


@jit(fastmath={"contract"})
def _direct_fwd_flat(start, stop, xq, wt, planes, offs, bias, has_bias, out, wq, cpg, rows_per_item):
    """Items [start, stop) of (image, band of ``rows_per_item`` output rows, output
    channel) of a 2-d convolution from the padded stride phases ``xq`` [N, C*sH*sW, Hq*Wq]
    of _phase_split_padded: output rows are computed ``wq`` wide (the extra cells
    dropped), so that each tap t (input channel of the group, kernel offset) is one
    contiguous read of plane ``planes[t]`` (plus the group's first plane) from flat offset
    ``offs[t]`` + e0*Wq; ``wt`` [O, taps], ``cpg`` the planes per group.  Four taps per
    pass over the band: one accumulator load and store per four multiply-adds."""
    no = out.shape[1]
    oh, ow = out.shape[2], out.shape[3]
    ntaps = wt.shape[1]
    og = no // (xq.shape[1] // cpg)
    bands = -(-oh // rows_per_item)
    acc = np.empty(rows_per_item * wq, dtype=out.dtype)
    for it in range(start, stop):
        rest = it // no  # output channels innermost: they read the same band of input
        o = it - rest * no
        b = rest // bands
        e0 = (rest - b * bands) * rows_per_item
        e1 = min(oh, e0 + rows_per_item)
        m = (e1 - e0) * wq
        p0 = (o // og) * cpg
        base = e0 * wq
        x2 = xq[b]
        v = bias[o] if has_bias else out.dtype.type(0)
        for t in range(m):
            acc[t] = v
        w = wt[o]
        t = 0
        while t + 4 <= ntaps:
            s0 = x2[p0 + planes[t], base + offs[t]:]
            s1 = x2[p0 + planes[t + 1], base + offs[t + 1]:]
            s2 = x2[p0 + planes[t + 2], base + offs[t + 2]:]
            s3 = x2[p0 + planes[t + 3], base + offs[t + 3]:]
            w0, w1, w2, w3 = w[t], w[t + 1], w[t + 2], w[t + 3]
            for i in range(m):
                acc[i] += w0 * s0[i] + w1 * s1[i] + w2 * s2[i] + w3 * s3[i]
            t += 4
        while t < ntaps:
            s0 = x2[p0 + planes[t], base + offs[t]:]
            w0 = w[t]
            for i in range(m):
                acc[i] += w0 * s0[i]
            t += 1
        for e in range(e1 - e0):
            a = acc[e * wq:]
            d = out[b, o, e0 + e]
            for q in range(ow):
                d[q] = a[q]


@jit
def _im2col_rows(start, stop, xf, cols, geo, osize, h_in, w_in, t0, t1):
    """_im2col for 1-d and 2-d convolutions of stride 1 whose output rows are as wide as
    the input's (``same`` padding) and a C-contiguous input ``xf`` [N, C, H*W]: for each
    kernel offset the valid rows of the band are one contiguous copy of the flat plane,
    shifted, after which the few cells that wrapped around a row end are zeroed."""
    nc = xf.shape[1]
    kh, kw = geo[1], geo[2]
    ph, pw = geo[7], geo[8]
    dh, dw = geo[10], geo[11]
    ow = osize[2]
    plane = h_in * w_in
    width = (t1 - t0) * ow
    zero = cols.dtype.type(0)
    for r in range(start, stop):
        b = r // nc
        c = r - b * nc
        src = xf[b, c]
        row = c * kh * kw
        for j in range(kh):
            ea = min(max(t0, ph - j * dh), t1)
            eb = max(min(t1, h_in + ph - j * dh), ea)
            for k in range(kw):
                off = k * dw - pw
                lo, hi = _span(off, 1, ow, w_in)
                dst = cols[b, row]
                u_a, u_b = (ea - t0) * ow, (eb - t0) * ow
                base = (ea + j * dh - ph) * w_in + off - u_a
                u0 = min(max(u_a, -base), u_b)
                u1 = max(min(u_b, plane - base), u0)
                for u in range(u0):
                    dst[u] = zero
                d = dst[u0:]
                s = src[u0 + base:]
                for u in range(u1 - u0):
                    d[u] = s[u]
                tail = dst[u1:]
                for u in range(width - u1):
                    tail[u] = zero
                for e in range(eb - ea):
                    rowv = dst[u_a + e * ow:]
                    for q in range(lo):
                        rowv[q] = zero
                    edge = rowv[hi:]
                    for q in range(ow - hi):
                        edge[q] = zero
                row += 1


@jit
def _col2im(start, stop, dcols, dx, geo, osize, t0, t1):
    """Rows [start, stop) of (image, channel): adds dcols[b, c*kk + k, p] onto each input
    cell of dx[b, c] that kernel offset k of output position p met, for the output rows
    t0 <= t < t1 (dcols holding just those positions)."""
    nc = dx.shape[1]
    d_in, h_in, w_in = dx.shape[2], dx.shape[3], dx.shape[4]
    kd, kh, kw = geo[0], geo[1], geo[2]
    sd, sh, sw = geo[3], geo[4], geo[5]
    pd, ph, pw = geo[6], geo[7], geo[8]
    dd, dh, dw = geo[9], geo[10], geo[11]
    oh, ow = osize[1], osize[2]
    for r in range(start, stop):
        b = r // nc
        c = r - b * nc
        row = c * kd * kh * kw
        for i in range(kd):
            for j in range(kh):
                for k in range(kw):
                    off = k * dw - pw
                    lo, hi = _span(off, sw, ow, w_in)
                    p = 0
                    for t in range(t0, t1):
                        a = t // oh
                        e = t - a * oh
                        z = a * sd + i * dd - pd
                        y = e * sh + j * dh - ph
                        if 0 <= z < d_in and 0 <= y < h_in:
                            src = dcols[b, row, p + lo:p + hi]
                            dst = dx[b, c, z, y, lo * sw + off:]
                            if sw == 1:
                                for q in range(hi - lo):
                                    dst[q] += src[q]
                            else:
                                for q in range(hi - lo):
                                    dst[q * sw] += src[q]
                        p += ow
                    row += 1


@jit
def _col2im_rows(start, stop, dcols, dxf, geo, osize, h_in, w_in, t0, t1):
    """_col2im in the geometry of _im2col_rows (``dxf`` [N, C, H*W]): the cells of
    ``dcols`` that wrapped around a row end are zeroed (dcols is scratch), then each
    kernel offset adds one contiguous shifted band onto the flat plane."""
    nc = dxf.shape[1]
    kh, kw = geo[1], geo[2]
    ph, pw = geo[7], geo[8]
    dh, dw = geo[10], geo[11]
    ow = osize[2]
    plane = h_in * w_in
    zero = dcols.dtype.type(0)
    for r in range(start, stop):
        b = r // nc
        c = r - b * nc
        dst = dxf[b, c]
        row = c * kh * kw
        for j in range(kh):
            ea = min(max(t0, ph - j * dh), t1)
            eb = max(min(t1, h_in + ph - j * dh), ea)
            for k in range(kw):
                off = k * dw - pw
                lo, hi = _span(off, 1, ow, w_in)
                src = dcols[b, row]
                u_a, u_b = (ea - t0) * ow, (eb - t0) * ow
                for e in range(eb - ea):
                    rowv = src[u_a + e * ow:]
                    for q in range(lo):
                        rowv[q] = zero
                    edge = rowv[hi:]
                    for q in range(ow - hi):
                        edge[q] = zero
                base = (ea + j * dh - ph) * w_in + off - u_a
                u0 = min(max(u_a, -base), u_b)
                u1 = max(min(u_b, plane - base), u0)
                d = dst[u0 + base:]
                s = src[u0:]
                for u in range(u1 - u0):
                    d[u] += s[u]
                row += 1


@jit
def _col2im_flat(start, stop, dcols, dx, offs, length, size, wp, ph, pw, n0, c0, cg):
    """Rows [start, stop) of (image of the chunk, channel of the group): the input gradient
    of a 1-d/2-d stride-1 convolution from ``dcols`` [cg*kk, B*L], computed on output rows
    as wide as the padded input (``wp``; L = H_out*wp, the extra cells zero): each tap t
    adds one contiguous band of L cells onto a zeroed padded plane at flat offset
    ``offs[t]`` (``size`` cells, in cache), whose interior is then copied into
    dx[n0 + b, c0 + c] (so padding is cropped on the way out)."""
    kk = offs.shape[0]
    h_in, w_in = dx.shape[2], dx.shape[3]
    zero = dx.dtype.type(0)
    plane = np.empty(size, dtype=dx.dtype)
    for r in range(start, stop):
        b = r // cg
        c = r - b * cg
        for u in range(size):
            plane[u] = zero
        base = b * length
        for t in range(kk):
            src = dcols[c * kk + t, base:base + length]
            dst = plane[offs[t]:]
            for u in range(length):
                dst[u] += src[u]
        for y in range(h_in):
            s = plane[(y + ph) * wp + pw:]
            d = dx[n0 + b, c0 + c, y]
            for q in range(w_in):
                d[q] = s[q]


# ---- depthwise: one input channel per group ----------------------------------------------

@jit(fastmath={"reassoc", "contract", "nsz"})
def _dw_fwd(start, stop, x, w, bias, has_bias, out, geo):
    """Rows [start, stop) of (image, output channel) o, which reads input channel
    o // (O / C): out = bias + the sliding window sum."""
    no = out.shape[1]
    mult = no // x.shape[1]
    d_in, h_in, w_in = x.shape[2], x.shape[3], x.shape[4]
    od, oh, ow = out.shape[2], out.shape[3], out.shape[4]
    kd, kh, kw = geo[0], geo[1], geo[2]
    sd, sh, sw = geo[3], geo[4], geo[5]
    pd, ph, pw = geo[6], geo[7], geo[8]
    dd, dh, dw = geo[9], geo[10], geo[11]
    los, his = _spans(kw, dw, pw, sw, ow, w_in)
    for r in range(start, stop):
        b = r // no
        o = r - b * no
        c = o // mult
        v = bias[o] if has_bias else out.dtype.type(0)
        for a in range(od):
            for e in range(oh):
                orow = out[b, o, a, e]
                for q in range(ow):
                    orow[q] = v
                for i in range(kd):
                    z = a * sd + i * dd - pd
                    if z < 0 or z >= d_in:
                        continue
                    for j in range(kh):
                        y = e * sh + j * dh - ph
                        if y < 0 or y >= h_in:
                            continue
                        for k in range(kw):
                            off = k * dw - pw
                            lo, hi = los[k], his[k]
                            wv = w[o, 0, i, j, k]
                            d = orow[lo:hi]
                            src = x[b, c, z, y, lo * sw + off:]
                            if sw == 1:
                                for q in range(hi - lo):
                                    d[q] += wv * src[q]
                            else:
                                for q in range(hi - lo):
                                    d[q] += wv * src[q * sw]


@jit(fastmath={"reassoc", "contract", "nsz"})
def _dw_fwd_flat(start, stop, x, w, bias, has_bias, out, ph, pw, dh, dw, st):
    """The 1-d/2-d depthwise forward (stride ``st`` along both dims) of rows [start, stop)
    of (image, output channel), one flat vector pass per kernel offset: the input plane
    is copied into a zero-padded plane of pitch Wp = (W_out-1)*st + (kW-1)*dW + 1, where
    output cell t = e*Wp + q reads st*t + j*dH*Wp + k*dW at kernel offset (j, k) for every
    cell at once (outputs are computed on rows Wp wide, the extra ones dropped), so that
    short rows (7x7 planes) cost one loop per offset instead of one per offset and row."""
    no = out.shape[1]
    mult = no // x.shape[1]
    h_in, w_in = x.shape[3], x.shape[4]
    oh, ow = out.shape[3], out.shape[4]
    kh, kw = w.shape[3], w.shape[4]
    wp = (ow - 1) * st + (kw - 1) * dw + 1
    hp = (oh - 1) * st + (kh - 1) * dh + 1
    # the wide rows of the last output row read past the padded plane: room for them
    plane = np.zeros(st * oh * wp + (kh - 1) * dh * wp + (kw - 1) * dw + 1, dtype=x.dtype)
    acc = np.empty(oh * wp, dtype=x.dtype)
    y0, y1 = max(0, -ph), min(h_in, hp - ph)
    q0, q1 = max(0, -pw), min(w_in, wp - pw)
    for r in range(start, stop):
        b = r // no
        o = r - b * no
        c = o // mult
        if r == start or o % mult == 0:
            for y in range(y0, y1):
                src = x[b, c, 0, y, q0:q1]
                dst = plane[(y + ph) * wp + q0 + pw:]
                for q in range(q1 - q0):
                    dst[q] = src[q]
        v = bias[o] if has_bias else out.dtype.type(0)
        for t in range(oh * wp):
            acc[t] = v
        for j in range(kh):
            for k in range(kw):
                wv = w[o, 0, 0, j, k]
                src = plane[j * dh * wp + k * dw:]
                if st == 1:
                    for t in range(oh * wp):
                        acc[t] += wv * src[t]
                elif st == 2:  # a constant stride: LLVM deinterleaves the loads
                    for t in range(oh * wp):
                        acc[t] += wv * src[2 * t]
                else:
                    for t in range(oh * wp):
                        acc[t] += wv * src[st * t]
        for e in range(oh):
            src = acc[e * wp:]
            dst = out[b, o, 0, e]
            for q in range(ow):
                dst[q] = src[q]


@jit(fastmath={"reassoc", "contract", "nsz"})
def _dw_fwd_flat4(start, stop, x, wt, offs, bias, has_bias, out, ph, pw, wp, hp):
    """_dw_fwd_flat at stride 1 with four taps per pass over the plane (one load and store
    of the accumulator per four multiply-adds instead of per one): ``wt`` [O, taps] the
    weights, ``offs`` [taps] each tap's flat offset on the zero-padded plane of pitch
    ``wp`` (rows ``hp``)."""
    no = out.shape[1]
    mult = no // x.shape[1]
    h_in, w_in = x.shape[3], x.shape[4]
    oh, ow = out.shape[3], out.shape[4]
    ntaps = offs.shape[0]
    m = oh * wp
    plane = np.zeros(m + offs[ntaps - 1] + 1, dtype=x.dtype)
    acc = np.empty(m, dtype=x.dtype)
    y0, y1 = max(0, -ph), min(h_in, hp - ph)
    q0, q1 = max(0, -pw), min(w_in, wp - pw)
    for r in range(start, stop):
        b = r // no
        o = r - b * no
        c = o // mult
        if r == start or o % mult == 0:
            for y in range(y0, y1):
                src = x[b, c, 0, y, q0:q1]
                dst = plane[(y + ph) * wp + q0 + pw:]
                for q in range(q1 - q0):
                    dst[q] = src[q]
        v = bias[o] if has_bias else out.dtype.type(0)
        for i in range(m):
            acc[i] = v
        w = wt[o]
        t = 0
        while t + 4 <= ntaps:
            s0 = plane[offs[t]:]
            s1 = plane[offs[t + 1]:]
            s2 = plane[offs[t + 2]:]
            s3 = plane[offs[t + 3]:]
            w0, w1, w2, w3 = w[t], w[t + 1], w[t + 2], w[t + 3]
            for i in range(m):
                acc[i] += w0 * s0[i] + w1 * s1[i] + w2 * s2[i] + w3 * s3[i]
            t += 4
        while t < ntaps:
            s0 = plane[offs[t]:]
            w0 = w[t]
            for i in range(m):
                acc[i] += w0 * s0[i]
            t += 1
        for e in range(oh):
            src = acc[e * wp:]
            dst = out[b, o, 0, e]
            for q in range(ow):
                dst[q] = src[q]


@jit(fastmath={"reassoc", "contract", "nsz"})
def _dw_dx(start, stop, g, w, dx, geo):
    """Rows [start, stop) of (image, input channel) c: dx[b, c] = the sum over the output
    channels reading c of each output cell's gradient times the weight, at the input
    cells its window met."""
    nc = dx.shape[1]
    mult = g.shape[1] // nc
    d_in, h_in, w_in = dx.shape[2], dx.shape[3], dx.shape[4]
    od, oh, ow = g.shape[2], g.shape[3], g.shape[4]
    kd, kh, kw = geo[0], geo[1], geo[2]
    sd, sh, sw = geo[3], geo[4], geo[5]
    pd, ph, pw = geo[6], geo[7], geo[8]
    dd, dh, dw = geo[9], geo[10], geo[11]
    los, his = _spans(kw, dw, pw, sw, ow, w_in)
    zero = dx.dtype.type(0)
    for r in range(start, stop):
        b = r // nc
        c = r - b * nc
        for z in range(d_in):
            for y in range(h_in):
                row = dx[b, c, z, y]
                for q in range(w_in):
                    row[q] = zero
        for m in range(mult):
            o = c * mult + m
            for a in range(od):
                for i in range(kd):
                    z = a * sd + i * dd - pd
                    if z < 0 or z >= d_in:
                        continue
                    for e in range(oh):
                        for j in range(kh):
                            y = e * sh + j * dh - ph
                            if y < 0 or y >= h_in:
                                continue
                            for k in range(kw):
                                off = k * dw - pw
                                lo, hi = los[k], his[k]
                                wv = w[o, 0, i, j, k]
                                src = g[b, o, a, e, lo:hi]
                                dst = dx[b, c, z, y, lo * sw + off:]
                                if sw == 1:
                                    for q in range(hi - lo):
                                        dst[q] += wv * src[q]
                                else:
                                    for q in range(hi - lo):
                                        dst[q * sw] += wv * src[q]


@jit(fastmath={"reassoc", "contract", "nsz"})
def _dw_dw(start, stop, x, g, dwt, geo):
    """Output channels [start, stop): dwt[o, k] = the sum over images and output cells of
    the gradient times the input its window met at kernel offset k.  Products add up
    lane by lane in a [kk, W_out] block (vertical adds vectorize; a horizontal sum per
    row does not), folded into float64 totals after each image."""
    no = g.shape[1]
    nb = g.shape[0]
    mult = no // x.shape[1]
    d_in, h_in, w_in = x.shape[2], x.shape[3], x.shape[4]
    od, oh, ow = g.shape[2], g.shape[3], g.shape[4]
    kd, kh, kw = geo[0], geo[1], geo[2]
    sd, sh, sw = geo[3], geo[4], geo[5]
    pd, ph, pw = geo[6], geo[7], geo[8]
    dd, dh, dw = geo[9], geo[10], geo[11]
    los, his = _spans(kw, dw, pw, sw, ow, w_in)
    kk = kd * kh * kw
    acc = np.zeros(kk, dtype=np.float64)
    lanes = np.zeros((kk, ow), dtype=g.dtype)
    for o in range(start, stop):
        c = o // mult
        acc[:] = 0.0
        for b in range(nb):
            lanes[:, :] = 0
            for a in range(od):
                for i in range(kd):
                    z = a * sd + i * dd - pd
                    if z < 0 or z >= d_in:
                        continue
                    for e in range(oh):
                        for j in range(kh):
                            y = e * sh + j * dh - ph
                            if y < 0 or y >= h_in:
                                continue
                            for k in range(kw):
                                off = k * dw - pw
                                lo, hi = los[k], his[k]
                                gs = g[b, o, a, e, lo:hi]
                                src = x[b, c, z, y, lo * sw + off:]
                                lane = lanes[(i * kh + j) * kw + k, lo:hi]
                                if sw == 1:
                                    for q in range(hi - lo):
                                        lane[q] += gs[q] * src[q]
                                else:
                                    for q in range(hi - lo):
                                        lane[q] += gs[q] * src[q * sw]
            for t in range(kk):
                row = lanes[t]
                s = 0.0
                for q in range(ow):
                    s += row[q]
                acc[t] += s
        for t in range(kk):
            dwt[o, t] = acc[t]


@jit(fastmath={"reassoc", "contract", "nsz"})
def _sum_channels(start, stop, g, out):
    """out[o] = the sum of g[:, o, :] (float64 total of row sums)."""
    for o in range(start, stop):
        t = 0.0
        for b in range(g.shape[0]):
            row = g[b, o]
            s = g.dtype.type(0)
            for p in range(row.shape[0]):
                s += row[p]
            t += s
        out[o] = t


# ---- entry points (arrays in, arrays out) ------------------------------------------------

def _as5(a):
    """``a`` [N, C, *spatial] (1-3 spatial dims) as a 5-d view with unit dims in front."""
    return a.reshape(a.shape[:2] + (1,) * (5 - a.ndim) + a.shape[2:])


def _geo(ksize, stride, pad, dilation):
    lead = 3 - len(ksize)
    return np.array((1,) * lead + tuple(ksize) + (1,) * lead + tuple(stride) + (0,) * lead
                    + tuple(lo for lo, _ in pad) + (1,) * lead + tuple(dilation), dtype=np.int64)


def _osize(xshape, ksize, stride, pad, dilation):
    return tuple((h + lo + hi - d * (k - 1) - 1) // s + 1
                 for h, k, s, (lo, hi), d in zip(xshape[2:], ksize, stride, pad, dilation))


def _flat_depthwise(ndim, stride, pad, ksize, dilation):
    """Whether _dw_fwd_flat applies: 1-d or 2-d, one stride for both dims, padding within
    the kernel's reach."""
    return ndim <= 4 and len(set(stride)) == 1 and all(
        lo <= d * (k - 1) and hi <= d * (k - 1) for (lo, hi), k, d in zip(pad, ksize, dilation))


def is_depthwise(wshape, groups):
    """Whether each group has one input channel (depthwise, any channel multiplier)."""
    return groups > 1 and wshape[1] == 1


# ---- threads: each takes whole blocks (columns built and multiplied on one core) ----------
#
# A block is one group of one image over a band of output rows; its columns fit in a
# core's cache, are built by one thread and multiplied by the same thread with a
# one-thread BLAS call.  Threads split the blocks, so no core waits for another inside a
# product, and OpenBLAS's own workers (which spin after every product and then compete
# with the next pass) stay idle: BLAS runs single-threaded for the duration of the call.

class _Blas:
    lock = threading.Lock()
    users = 0
    saved = 1


def _split(worker, n, *args, work_per_item=1):
    """``worker(start, stop, *args)`` over range(n), one contiguous part per thread, with
    BLAS on one thread while the parts run."""
    parts = min(threads(), n, max(1, (n * work_per_item) // PARALLEL_MIN_WORK))
    if parts <= 1:
        worker(0, n, *args)
        return
    if POOL:  # OpenBLAS runs on one thread already
        _run_parts(worker, n, parts, *args)
        return
    with _Blas.lock:
        if _Blas.users == 0:
            _Blas.saved = get_num_threads()
            blas_threads(1)
        _Blas.users += 1
    try:
        _run_parts(worker, n, parts, *args)
    finally:
        with _Blas.lock:
            _Blas.users -= 1
            if _Blas.users == 0:
                blas_threads(_Blas.saved)


def _run_parts(worker, n, parts, *args):
    bounds = [n * i // parts for i in range(parts + 1)]
    pool = _executor(parts - 1)
    futures = [pool.submit(worker, bounds[i], bounds[i + 1], *args) for i in range(1, parts)]
    worker(bounds[0], bounds[1], *args)
    for f in futures:
        f.result()


class _Plan:
    """Blocks of a product-based convolution: images x groups x bands of output rows.  A
    block holds one image's band, or, for small images (fewer than _SMALL_POSITIONS output
    positions), several whole images side by side, so that the product is wide enough."""

    __slots__ = ("n", "groups", "cg", "og", "kk", "krows", "rows", "bands", "nrows", "ow", "npos", "imgs",
                 "chunks", "osz", "geo", "xq")

    def __init__(self, n, groups, cg, og, ksize, osize5, geo, krows, itemsize):
        self.n, self.groups, self.cg, self.og = n, groups, cg, og
        self.kk = math.prod(ksize)
        self.krows = krows
        self.nrows = osize5[0] * osize5[1]
        self.ow = osize5[2]
        self.npos = self.nrows * self.ow
        self.imgs = 1
        if self.npos < _SMALL_POSITIONS and n > 1:
            self.imgs = max(1, min(-(-_SMALL_POSITIONS // self.npos), -(-n // threads())))
        self.chunks = -(-n // self.imgs)
        if self.imgs > 1:
            self.rows = self.nrows
        else:
            self.rows = max(1, min(self.nrows, _BLOCK_BYTES // max(1, krows * self.ow * itemsize)))
        self.bands = -(-self.nrows // self.rows)
        self.osz = np.array(osize5, dtype=np.int64)
        self.geo = geo
        self.xq = None  # the input's stride phases (_phases) when _im2col_2d builds the columns

    def blocks(self):
        return self.chunks * self.groups * self.bands

    def block(self, it):
        """(first image, end image, group, first row, end row) of block ``it``."""
        chunk, rest = divmod(it, self.groups * self.bands)
        gi, band = divmod(rest, self.bands)
        t0 = band * self.rows
        n0 = chunk * self.imgs
        return n0, min(self.n, n0 + self.imgs), gi, t0, min(self.nrows, t0 + self.rows)


def _side_by_side(buf, nb, npos):
    """``buf`` [rows, >= nb*npos] as [nb, rows, npos]: image b's columns at b*npos."""
    return buf[:, :nb * npos].reshape(buf.shape[0], nb, npos).transpose(1, 0, 2)


def _gather_rows(gbuf, g3, n0, n1, o0, o1):
    """g3[n0:n1, o0:o1] [B, og, P] laid side by side as [og, B*P] in ``gbuf``."""
    nb, npos = n1 - n0, g3.shape[2]
    rows = gbuf[:, :nb * npos]
    np.copyto(rows.reshape(o1 - o0, nb, npos), g3[n0:n1, o0:o1].transpose(1, 0, 2))
    return rows


def _direct(x, ksize, stride, pad):
    """``x`` as [N, C, P] when a 1x1 convolution without stride or padding multiplies it as
    it is (no columns to build), else None."""
    if math.prod(ksize) == 1 and all(s == 1 for s in stride) and not any(lo or hi for lo, hi in pad) \
            and x.flags.c_contiguous:
        return x.reshape(x.shape[0], x.shape[1], -1)
    return None


def _flat_rows(x, osize, stride):
    """``x`` as [N, C, H*W] when _im2col_rows can build its columns, else None."""
    if x.ndim <= 4 and x.flags.c_contiguous and all(s == 1 for s in stride) and osize[-1] == x.shape[-1]:
        return x.reshape(x.shape[0], x.shape[1], -1)
    return None


def _phases(x, osize, ksize, stride, pad):
    """The stride phases of a 2-d input for _im2col_2d (the input itself at stride 1), or
    None where the generic _im2col builds the columns: other dims, flat-row convolutions
    (``_flat_rows``), and kernels smaller than the stride (a 1x1 downsampling reads one
    phase of several)."""
    if x.ndim != 4 or _flat_rows(x, osize, stride) is not None or any(k < s for k, s in zip(ksize, stride)):
        return None
    sh, sw = stride
    if sh == sw == 1:
        return x[:, :, None]
    xq = np.empty(x.shape[:2] + (sh * sw, -(-x.shape[2] // sh), -(-x.shape[3] // sw)), dtype=x.dtype)
    parallel_for(_phase_split, x.shape[0] * x.shape[1], x, xq, sh, sw, work_per_item=x[0, 0].size)
    return xq


def _build(plan, x5, xf, n0, n1, gi, cols, t0, t1):
    """The columns of images [n0, n1), group gi, output rows [t0, t1) into ``cols``."""
    cg = plan.cg
    if plan.xq is not None:
        g = plan.geo
        _im2col_2d(0, (n1 - n0) * cg, plan.xq[n0:n1, gi * cg:(gi + 1) * cg], cols, x5.shape[3], x5.shape[4],
                   g[1], g[2], g[4], g[5], g[7], g[8], g[10], g[11], plan.ow, t0, t1)
    elif xf is not None:
        _im2col_rows(0, (n1 - n0) * cg, xf[n0:n1, gi * cg:(gi + 1) * cg], cols, plan.geo, plan.osz, x5.shape[3],
                     x5.shape[4], t0, t1)
    else:
        _im2col(0, (n1 - n0) * cg, x5[n0:n1, gi * cg:(gi + 1) * cg], cols, plan.geo, plan.osz, t0, t1)


def _fwd_worker(start, stop, plan, x5, xf, x3, wms, out3, bias, bias_row):
    cg, og, ow = plan.cg, plan.og, plan.ow
    if x3 is None or plan.imgs > 1:
        buf = np.empty((1, plan.krows, plan.imgs * plan.rows * ow), dtype=out3.dtype)
        if bias_row:
            buf[0, cg * plan.kk] = 1
    if plan.imgs > 1:
        res = np.empty((og, plan.imgs * plan.npos), dtype=out3.dtype)
    for it in range(start, stop):
        n, n1, gi, t0, t1 = plan.block(it)
        if n1 - n > 1:
            cols = _side_by_side(buf[0], n1 - n, plan.npos)
            _build(plan, x5, xf, n, n1, gi, cols, 0, plan.nrows)
            r = np.matmul(wms[gi], buf[0, :, :(n1 - n) * plan.npos], out=res[:, :(n1 - n) * plan.npos])
            out3[n:n1, gi * og:(gi + 1) * og] = r.reshape(og, n1 - n, plan.npos).transpose(1, 0, 2)
            continue
        target = out3[n, gi * og:(gi + 1) * og, t0 * ow:t1 * ow]
        if x3 is None:
            cols = buf[:, :, :(t1 - t0) * ow]
            _build(plan, x5, xf, n, n + 1, gi, cols, t0, t1)
            np.matmul(wms[gi], cols[0], out=target)
        else:
            np.matmul(wms[gi], x3[n, gi * cg:(gi + 1) * cg, t0 * ow:t1 * ow], out=target)
            if bias is not None:  # the block is still in cache
                target += bias[gi * og:(gi + 1) * og, None]


def _dw_worker(start, stop, plan, x5, xf, x3, g3, partials):
    cg, og, ow = plan.cg, plan.og, plan.ow
    ck = cg * plan.kk
    if x3 is None or plan.imgs > 1:
        buf = np.empty((1, ck, plan.imgs * plan.rows * ow), dtype=g3.dtype)
    if plan.imgs > 1:
        gbuf = np.empty((og, plan.imgs * plan.npos), dtype=g3.dtype)
    acc = np.zeros((plan.groups * og, ck), dtype=g3.dtype)
    tmp = np.empty((og, ck), dtype=g3.dtype)
    for it in range(start, stop):
        n, n1, gi, t0, t1 = plan.block(it)
        if n1 - n > 1:
            _build(plan, x5, xf, n, n1, gi, _side_by_side(buf[0], n1 - n, plan.npos), 0, plan.nrows)
            rows = _gather_rows(gbuf, g3, n, n1, gi * og, (gi + 1) * og)
            np.matmul(rows, buf[0, :, :(n1 - n) * plan.npos].T, out=tmp)
            acc[gi * og:(gi + 1) * og] += tmp
            continue
        if x3 is None:
            cols = buf[0, :, :(t1 - t0) * ow]
            _build(plan, x5, xf, n, n + 1, gi, buf[:, :, :(t1 - t0) * ow], t0, t1)
        else:
            cols = x3[n, gi * cg:(gi + 1) * cg, t0 * ow:t1 * ow]
        np.matmul(g3[n, gi * og:(gi + 1) * og, t0 * ow:t1 * ow], cols.T, out=tmp)
        acc[gi * og:(gi + 1) * og] += tmp
    partials[start] = acc


def _scatter(plan, dx5, dxf, n0, n1, gi, dcols, t0, t1):
    """col2im of ``dcols`` onto images [n0, n1), group gi, from output rows [t0, t1)."""
    cg = plan.cg
    if dxf is not None:
        _col2im_rows(0, (n1 - n0) * cg, dcols, dxf[n0:n1, gi * cg:(gi + 1) * cg], plan.geo, plan.osz, dx5.shape[3],
                     dx5.shape[4], t0, t1)
    else:
        _col2im(0, (n1 - n0) * cg, dcols, dx5[n0:n1, gi * cg:(gi + 1) * cg], plan.geo, plan.osz, t0, t1)


def _dx_worker(start, stop, plan, g3, wmts, dx5, dxf, direct):
    # blocks of one image stay on one thread: their col2im add into the same planes
    cg, og, ow = plan.cg, plan.og, plan.ow
    if direct:  # 1x1, no stride or padding: the product is the gradient
        dx3 = dx5.reshape(dx5.shape[0], dx5.shape[1], -1)
    buf = np.empty((1, cg * plan.kk, plan.imgs * plan.rows * ow), dtype=g3.dtype)
    if plan.imgs > 1:
        gbuf = np.empty((og, plan.imgs * plan.npos), dtype=g3.dtype)
    per_chunk = plan.groups * plan.bands
    for it in range(start * per_chunk, stop * per_chunk):
        n, n1, gi, t0, t1 = plan.block(it)
        if n1 - n > 1:
            rows = _gather_rows(gbuf, g3, n, n1, gi * og, (gi + 1) * og)
            np.matmul(wmts[gi], rows, out=buf[0, :, :(n1 - n) * plan.npos])
            _scatter(plan, dx5, dxf, n, n1, gi, _side_by_side(buf[0], n1 - n, plan.npos), 0, plan.nrows)
            continue
        gblock = g3[n, gi * og:(gi + 1) * og, t0 * ow:t1 * ow]
        if direct:
            np.matmul(wmts[gi], gblock, out=dx3[n, gi * cg:(gi + 1) * cg, t0 * ow:t1 * ow])
        else:
            dcols = buf[:, :, :(t1 - t0) * ow]
            np.matmul(wmts[gi], gblock, out=dcols[0])
            _scatter(plan, dx5, dxf, n, n + 1, gi, dcols, t0, t1)


def forward(x, w, bias, stride, pad, dilation, groups):
    """The convolution of ``x`` [N, C, *size] by ``w`` [O, C/groups, *k] plus ``bias`` (None
    or [O]), pad one (low, high) pair per spatial dim; returns out [N, O, *out],
    C-contiguous."""
    return _forward(x, w, bias, stride, pad, dilation, groups)


def _forward(x, w, bias, stride, pad, dilation, groups):
    n = x.shape[0]
    o, cg = w.shape[:2]
    ksize = w.shape[2:]
    osize = _osize(x.shape, ksize, stride, pad, dilation)
    geo = _geo(ksize, stride, pad, dilation)
    out = np.empty((n, o) + osize, dtype=x.dtype)
    if out.size == 0:
        return out
    x5, out5 = _as5(x), _as5(out)
    kk = math.prod(ksize)
    if is_depthwise(w.shape, groups):
        has_bias = bias is not None
        b = bias if has_bias else out5.reshape(-1)[:1]
        if _flat_depthwise(x.ndim, stride, pad, ksize, dilation):
            if stride[-1] == 2 and x.ndim == 4 and _DW_STRIDE2_DIRECT:
                return _forward_direct(x, w, bias, stride, pad, dilation)
            if stride[-1] == 1 and _DW_FOUR_TAPS:
                w5 = _as5(w)
                kh, kw, dh, dw = w5.shape[3], w5.shape[4], geo[10], geo[11]
                oh, ow = out5.shape[3], out5.shape[4]
                wp = ow + (kw - 1) * dw
                offs = np.array([j * dh * wp + k * dw for j in range(kh) for k in range(kw)], dtype=np.int64)
                parallel_for(_dw_fwd_flat4, n * o, x5, np.ascontiguousarray(w.reshape(o, kk)), offs, b, has_bias,
                             out5, geo[7], geo[8], wp, oh + (kh - 1) * dh, work_per_item=math.prod(osize) * kk)
                return out
            parallel_for(_dw_fwd_flat, n * o, x5, _as5(w), b, has_bias, out5, geo[7], geo[8], geo[10], geo[11],
                         stride[-1], work_per_item=math.prod(osize) * kk)
        else:
            parallel_for(_dw_fwd, n * o, x5, _as5(w), b, has_bias, out5, geo, work_per_item=math.prod(osize) * kk)
        return out
    og = o // groups
    x3 = _direct(x, ksize, stride, pad)
    if n > 1 and math.prod(osize) < _SMALL_POSITIONS:
        x3 = None  # small images go several to a block, through columns
    bias_row = bias is not None and x3 is None
    plan = _Plan(n, groups, cg, og, ksize, out5.shape[2:], geo, cg * kk + bias_row, x.itemsize)
    wms = []
    for gi in range(groups):
        wm = w[gi * og:(gi + 1) * og].reshape(og, cg * kk)
        wms.append(np.concatenate([wm, bias[gi * og:(gi + 1) * og, None]], axis=1) if bias_row else wm)
    xf = _flat_rows(x, osize, stride)
    if x3 is None:
        plan.xq = _phases(x, osize, ksize, stride, pad)
    _split(_fwd_worker, plan.blocks(), plan, x5, xf, x3, wms, out.reshape(n, o, -1), bias, bias_row,
           work_per_item=og * plan.krows * plan.rows * plan.ow)
    return out


def forward_whole(x, w, bias, stride, pad, dilation, groups):
    """:func:`forward` for the small convolutions (LeNet-sized images, batch 1): the column
    matrix of the whole batch ``[C/groups * prod(k), N * P]`` (rows in the weight's own
    order, so the weight needs no reordering) built by the threads, then one product per
    group on every BLAS thread.  One large product runs faster than the per-block
    single-thread products of :func:`forward` when the blocks are few or short."""
    return _forward_whole(x, w, bias, stride, pad, dilation, groups, None)[0]


def _forward_whole(x, w, bias, stride, pad, dilation, groups, kept):
    """forward_whole; with ``kept`` (a WholeColumns), each chunk's columns in a buffer of
    their own, recorded there."""
    n = x.shape[0]
    o, cg = w.shape[:2]
    ksize = w.shape[2:]
    osize = _osize(x.shape, ksize, stride, pad, dilation)
    out = np.empty((n, o) + osize, dtype=x.dtype)
    if out.size == 0:
        return out, kept
    og = o // groups
    npos = math.prod(osize)
    kk = math.prod(ksize)
    out3 = out.reshape(n, o, npos)
    x3 = _direct(x, ksize, stride, pad)
    if x3 is not None and kept is None:
        # 1x1, no stride or padding: each image is its own column matrix; numpy's stacked
        # product (one BLAS call per image) writes the output in place, no copies
        for gi in range(groups):
            blas_matmul(w[gi * og:(gi + 1) * og].reshape(og, cg), x3[:, gi * cg:(gi + 1) * cg],
                      out=out3[:, gi * og:(gi + 1) * og])
        if bias is not None:
            out3 += bias[:, None]
        return out, kept
    geo = _geo(ksize, stride, pad, dilation)
    x5 = _as5(x)
    osz = np.array(_as5(out).shape[2:], dtype=np.int64)
    nrows = int(osz[0] * osz[1])
    xf = _flat_rows(x, osize, stride)
    xq = None
    strided_1x1 = x.ndim == 4 and kk == 1 and not any(lo or hi for lo, hi in pad)
    if xf is None and x.ndim == 4 and not strided_1x1:
        sh, sw = stride
        if sh == sw == 1:
            xq = x[:, :, None]
        else:
            xq = np.empty(x.shape[:2] + (sh * sw, -(-x.shape[2] // sh), -(-x.shape[3] // sw)), dtype=x.dtype)
            parallel_for(_phase_split, n * x.shape[1], x, xq, sh, sw, work_per_item=x[0, 0].size)
    # images in chunks of at most _WHOLE_BYTES of columns (the numpy path's bound)
    step = max(1, min(n, _WHOLE_BYTES // max(1, cg * kk * npos * x.itemsize)))
    buf = np.empty((cg * kk, step * npos), dtype=x.dtype) if kept is None else None
    res = np.empty((og, step * npos), dtype=x.dtype) if n > 1 else None
    for n0 in range(0, n, step):
        n1 = min(n, n0 + step)
        nb = n1 - n0
        for gi in range(groups):
            if kept is not None:  # a buffer per chunk and group, exactly its size
                buf = np.empty((cg * kk, nb * npos), dtype=x.dtype)
                kept.blocks.append((n0, n1, gi, buf))
                kept.nbytes += buf.nbytes
            mat = buf[:, :nb * npos]
            cols = _side_by_side(buf, nb, npos)   # [nb, K, P] view: image b's columns at b * P
            part = slice(gi * cg, (gi + 1) * cg)
            if strided_1x1:  # the columns are a strided slice of the input
                np.copyto(mat.reshape(cg, nb, osize[0], osize[1]),
                          x[n0:n1, part, ::stride[0], ::stride[1]][:, :, :osize[0], :osize[1]].transpose(1, 0, 2, 3))
            elif xf is not None:
                parallel_for(_im2col_rows, nb * cg, xf[n0:n1, part], cols, geo, osz, x5.shape[3], x5.shape[4], 0,
                             nrows, work_per_item=kk * npos)
            elif xq is not None:
                parallel_for(_im2col_2d, nb * cg, xq[n0:n1, part], cols, x.shape[2], x.shape[3], ksize[0], ksize[1],
                             stride[0], stride[1], pad[0][0], pad[1][0], dilation[0], dilation[1], osize[1], 0,
                             osize[0], work_per_item=kk * npos)
            else:
                parallel_for(_im2col, nb * cg, x5[n0:n1, part], cols, geo, osz, 0, nrows, work_per_item=kk * npos)
            wm = w[gi * og:(gi + 1) * og].reshape(og, cg * kk)
            if n == 1:
                blas_matmul(wm, mat, out=out3[0, gi * og:(gi + 1) * og])
                continue
            r = blas_matmul(wm, mat, out=res[:, :nb * npos])
            target = out3[n0:n1, gi * og:(gi + 1) * og]
            src = r.reshape(og, nb, npos).transpose(1, 0, 2)
            if bias is None:
                target[...] = src
            else:
                np.add(src, bias[gi * og:(gi + 1) * og, None], out=target)
    if bias is not None and n == 1:
        out3 += bias[:, None]
    return out, kept


def flat_input_grad_applies(ndim, stride):
    """Whether :func:`input_grad_flat` takes the case: 1-d or 2-d, stride 1."""
    return ndim in (3, 4) and all(s == 1 for s in stride)


def input_grad_flat(g, w, xshape, pad, dilation, groups):
    """The input gradient [N, C, (H,) W] of a stride-1 1-d/2-d convolution from its output
    gradient ``g`` [N, O, (H_out,) W_out], for the small convolutions (below
    ``ops.conv.KERNEL_MIN_MACS``): per chunk of images (at most ``_WHOLE_BYTES`` of
    columns) ``g`` is laid out on output rows as wide as the padded input (zeros in the
    extra cells), one product ``w^T @ g`` on every BLAS thread gives the columns' gradient,
    and ``_col2im_flat`` adds it back one contiguous band per tap, cropping the padding
    as it copies each plane out.  C-contiguous result."""
    dx = np.empty(xshape, dtype=g.dtype)  # owns its memory: autograd takes it as .grad
    if dx.size == 0:
        return dx
    if g.size == 0:
        dx[...] = 0
        return dx
    if len(xshape) == 3:  # 1-d as one row
        _input_grad_flat(g[:, :, None], w[:, :, None], dx[:, :, None], ((0, 0),) + tuple(pad),
                         (1,) + tuple(dilation), groups)
    else:
        _input_grad_flat(g, w, dx, pad, dilation, groups)
    return dx


def _input_grad_flat(g, w, dx, pad, dilation, groups):
    n, c, h, wd = dx.shape
    o, cg, kh, kw = w.shape
    (plo, phi), (qlo, qhi) = pad
    dh, dw = dilation
    wp = wd + qlo + qhi
    oh = g.shape[2]
    length = oh * wp
    kk = kh * kw
    offs = np.array([j * dh * wp + k * dw for j in range(kh) for k in range(kw)], dtype=np.int64)
    geo = (offs, length, int(offs[-1]) + length, wp, plo, qlo)
    og = o // groups
    wmts = [w[gi * og:(gi + 1) * og].reshape(og, cg * kk).T for gi in range(groups)]
    per_image = cg * kk * length * g.itemsize
    if _FLAT_SPLIT:
        step = max(1, min(n, _BLOCK_BYTES // max(1, per_image)))
        chunks = -(-n // step)
        _split(_dx_flat_worker, chunks, g, wmts, dx, geo, step, False, work_per_item=step * per_image)
    else:
        step = max(1, min(n, _WHOLE_BYTES // max(1, per_image)))
        _dx_flat_worker(0, -(-n // step), g, wmts, dx, geo, step, True)


def _dx_flat_worker(start, stop, g, wmts, dx, geo, step, threaded):
    """Chunks [start, stop) of ``step`` images: ``g`` on wide rows, ``w^T @ g``, col2im."""
    offs, length, size, wp, plo, qlo = geo
    n = dx.shape[0]
    og, cg = wmts[0].shape[1], wmts[0].shape[0] // offs.shape[0]
    oh, ow = g.shape[2], g.shape[3]
    gbuf = dbuf = wide = None
    for chunk in range(start, stop):
        n0 = chunk * step
        n1 = min(n, n0 + step)
        nb = n1 - n0
        if gbuf is None or gbuf.shape[1] != nb * length:
            gbuf = np.empty((og, nb * length), dtype=g.dtype)
            dbuf = np.empty((wmts[0].shape[0], nb * length), dtype=g.dtype)
            wide = gbuf.reshape(og, nb, oh, wp)
            wide[..., ow:] = 0  # the extra cells of each wide row stay zero
        for gi, wmt in enumerate(wmts):
            np.copyto(wide[..., :ow], g[n0:n1, gi * og:(gi + 1) * og].transpose(1, 0, 2, 3))
            blas_matmul(wmt, gbuf, out=dbuf)
            if threaded:
                parallel_for(_col2im_flat, nb * cg, dbuf, dx, offs, length, size, wp, plo, qlo, n0, gi * cg, cg,
                             work_per_item=offs.shape[0] * length)
            else:
                _col2im_flat(0, nb * cg, dbuf, dx, offs, length, size, wp, plo, qlo, n0, gi * cg, cg)


# depthwise forwards: stride 1 four taps per pass (_dw_fwd_flat4), stride 2 from the
# padded stride phases (_forward_direct)
_DW_FOUR_TAPS = True
_DW_STRIDE2_DIRECT = True

# input_grad_flat: chunks of L2 size split over the threads, each product on one BLAS thread
# (True), or chunks of _WHOLE_BYTES, each product on every BLAS thread (False)
_FLAT_SPLIT = True


class WholeColumns:
    """The column matrices :func:`forward_whole_kept` built, kept for the weight gradient:
    ``blocks`` a list of (first image, end image, group, [C/groups * prod(k), B * P])."""

    __slots__ = ("blocks", "nbytes")

    def __init__(self):
        self.blocks = []
        self.nbytes = 0


def forward_whole_kept(x, w, bias, stride, pad, dilation, groups):
    """:func:`forward_whole` for a convolution whose weight takes a gradient: ``(out,
    columns)``, the column matrices kept (a :class:`WholeColumns`) for
    :func:`weight_grad_kept` instead of built again (a 1x1 convolution's are a copy of
    its input)."""
    return _forward_whole(x, w, bias, stride, pad, dilation, groups, WholeColumns())


def weight_grad_kept(g, cols, wshape, groups):
    """The weight gradient ``wshape`` [O, C/groups, *k] from the output gradient ``g``
    [N, O, *out] and the forward's kept columns: per block ``g`` laid out as
    [O/groups, B*P] times the columns transposed, one product on every BLAS thread."""
    n, o = g.shape[:2]
    og = o // groups
    npos = math.prod(g.shape[2:])
    kdim = math.prod(wshape[1:])
    out = np.zeros(wshape, dtype=g.dtype)  # owns its memory: autograd takes it as .grad
    dw = out.reshape(o, kdim)
    g3 = g.reshape(n, o, npos)
    rows = None
    for n0, n1, gi, mat in cols.blocks:
        nb = n1 - n0
        if nb == 1:
            gm = g3[n0, gi * og:(gi + 1) * og]
        else:
            if rows is None or rows.shape[1] != nb * npos:
                rows = np.empty((og, nb * npos), dtype=g.dtype)
            np.copyto(rows.reshape(og, nb, npos), g3[n0:n1, gi * og:(gi + 1) * og].transpose(1, 0, 2))
            gm = rows
        part = dw[gi * og:(gi + 1) * og]
        part += blas_matmul(gm, mat.T)
    return out


def direct_pays(ndim, wshape, groups):
    """Whether :func:`forward_direct` is the faster forward: a 1-d or 2-d convolution whose
    groups map few input channels to few output channels (a resampling filter bank, an
    RGB stem, LeNet's first layer), where the product of the column matrix is too thin
    for BLAS."""
    # measured (one thread): 1-d with 1-4 filters 2-6x faster than forward_whole at 28-512
    # taps, with 8-16 filters 1.4x slower; 2-d with up to 32 taps faster up to 32 filters
    o, cg = wshape[:2]
    og = o // groups
    if is_depthwise(wshape, groups):
        return False
    if ndim == 3:  # a filter bank of any length: the product would be a thin one
        return cg <= 4 and og <= 4
    return ndim == 4 and cg * math.prod(wshape[2:]) <= 32 and og <= 32


def forward_direct(x, w, bias, stride, pad, dilation, groups):
    """The convolution of ``x`` [N, C, (H,) W] by ``w`` [O, C/groups, (kH,) kW] plus ``bias``
    (None or [O]) as direct multiply-add passes (``_direct_fwd_flat``; ``_direct_fwd`` for
    one output row, as in 1-d); C-contiguous result.  The groups follow from the shapes."""
    if x.ndim == 3:
        r = _forward_direct(x[:, :, None], w[:, :, None], bias, (1,) + tuple(stride), ((0, 0),) + tuple(pad),
                            (1,) + tuple(dilation))
        return r.reshape(r.shape[:2] + r.shape[3:])
    return _forward_direct(x, w, bias, stride, pad, dilation)


def _forward_direct(x, w, bias, stride, pad, dilation):
    n = x.shape[0]
    o = w.shape[0]
    ksize = w.shape[2:]
    osize = _osize(x.shape, ksize, stride, pad, dilation)
    out = np.empty((n, o) + osize, dtype=x.dtype)
    if out.size == 0:
        return out
    sh, sw = stride
    has_bias = bias is not None
    b_arr = bias if has_bias else out[0, 0, 0]
    if x.ndim == 4 and osize[0] > 1:
        # zero-padded phases, rows Wq wide, room below for the wide rows' overrun
        wq = -(-(x.shape[3] + pad[1][0] + pad[1][1]) // sw)
        jq = (ksize[0] - 1) * dilation[0] // sh
        hq = max(-(-(x.shape[2] + pad[0][0] + pad[0][1]) // sh), osize[0] + jq + 1)
        xq = np.zeros(x.shape[:2] + (sh * sw, hq, wq), dtype=x.dtype)
        parallel_for(_phase_split_padded, n * x.shape[1], x, xq, sh, sw, pad[0][0], pad[1][0],
                     work_per_item=x[0, 0].size)
        cg = w.shape[1]
        jj = np.arange(ksize[0])[:, None] * dilation[0]
        kx = np.arange(ksize[1])[None, :] * dilation[1]
        phase = (jj % sh) * sw + kx % sw                                   # [kH, kW]
        planes = (np.arange(cg)[:, None, None] * (sh * sw) + phase).reshape(-1).astype(np.int64)
        offs = np.broadcast_to((jj // sh) * wq + kx // sw, (cg,) + ksize).reshape(-1).astype(np.int64)
        rows = max(1, min(osize[0], _DIRECT_BAND // wq))
        items = n * o * -(-osize[0] // rows)
        parallel_for(_direct_fwd_flat, items, xq.reshape(n, -1, hq * wq), w.reshape(o, -1), planes, offs, b_arr,
                     has_bias, out, wq, cg * sh * sw, rows, work_per_item=rows * wq * math.prod(w.shape[1:]))
        return out
    if sh == sw == 1:
        xq = x[:, :, None]
    else:
        xq = np.empty(x.shape[:2] + (sh * sw, -(-x.shape[2] // sh), -(-x.shape[3] // sw)), dtype=x.dtype)
        parallel_for(_phase_split, n * x.shape[1], x, xq, sh, sw, work_per_item=x[0, 0].size)
    chunks = -(-osize[1] // _DIRECT_CHUNK)
    parallel_for(_direct_fwd, n * o * osize[0] * chunks, xq, np.ascontiguousarray(w), b_arr, has_bias, out,
                 x.shape[2], x.shape[3], sh, sw, pad[0][0], pad[1][0], dilation[0], dilation[1],
                 chunks, work_per_item=min(osize[1], _DIRECT_CHUNK) * math.prod(w.shape[1:]))
    return out


def input_grad(g, w, xshape, stride, pad, dilation, groups):
    """The gradient [N, C, *size] of the convolution's input, from its output gradient
    ``g`` [N, O, *out] (C-contiguous result)."""
    n, c = xshape[:2]
    o, cg = w.shape[:2]
    ksize = w.shape[2:]
    geo = _geo(ksize, stride, pad, dilation)
    if math.prod(xshape) == 0 or g.size == 0:
        return np.zeros(xshape, dtype=g.dtype)
    g = np.ascontiguousarray(g)  # once: broadcast (y.sum()'s) or channels-last gradients
    g5 = _as5(g)
    kk = math.prod(ksize)
    if is_depthwise(w.shape, groups):
        tpad = tuple((d * (k - 1) - lo, d * (k - 1) - hi) for (lo, hi), k, d in zip(pad, ksize, dilation))
        if o == c and all(v == 1 for v in stride) and min(min(p) for p in tpad) >= 0 and \
                _flat_depthwise(g.ndim, stride, tpad, ksize, dilation):
            # the adjoint of a stride-1 depthwise convolution is one with the flipped kernel
            flipped = w[(slice(None), slice(None)) + (slice(None, None, -1),) * len(ksize)]
            return _forward(g, flipped, None, stride, tpad, dilation, groups)
        dx = np.empty(xshape, dtype=g.dtype)
        parallel_for(_dw_dx, n * c, g5, _as5(w), _as5(dx), geo,
                     work_per_item=(o // c) * g[0, 0].size * kk)
        return dx
    direct = kk == 1 and all(s == 1 for s in stride) and not any(lo or hi for lo, hi in pad)
    dx = (np.empty if direct else np.zeros)(xshape, dtype=g.dtype)
    og = o // groups
    plan = _Plan(n, groups, cg, og, ksize, g5.shape[2:], geo, cg * kk, g.itemsize)
    wmts = [w[gi * og:(gi + 1) * og].reshape(og, cg * kk).T for gi in range(groups)]
    if direct and plan.imgs > 1:
        dx[...] = 0  # side-by-side blocks add their columns back
    _split(_dx_worker, plan.chunks, plan, g.reshape(n, o, -1), wmts, _as5(dx), _flat_rows(dx, g.shape[2:], stride),
           direct,
           work_per_item=groups * og * cg * kk * g[0, 0].size)
    return dx


def weight_grad(x, g, wshape, stride, pad, dilation, groups):
    """The gradient ``wshape`` [O, C/groups, *k] of the convolution's weight from its input
    ``x`` and output gradient ``g``."""
    n = x.shape[0]
    o, cg = wshape[:2]
    ksize = tuple(wshape[2:])
    kk = math.prod(ksize)
    geo = _geo(ksize, stride, pad, dilation)
    if x.size == 0 or g.size == 0:
        return np.zeros(wshape, dtype=x.dtype)
    g = np.ascontiguousarray(g)
    x5, g5 = _as5(x), _as5(g)
    if is_depthwise(wshape, groups):
        dwt = np.empty((o, kk), dtype=x.dtype)
        parallel_for(_dw_dw, o, x5, g5, dwt, geo, work_per_item=n * g[0, 0].size * kk)
        return dwt.reshape(wshape)
    og = o // groups
    plan = _Plan(n, groups, cg, og, ksize, g5.shape[2:], geo, cg * kk, x.itemsize)
    partials = {}
    xf, x3 = _flat_rows(x, g.shape[2:], stride), _direct(x, ksize, stride, pad)
    if x3 is None or plan.imgs > 1:
        plan.xq = _phases(x, g.shape[2:], ksize, stride, pad)
    _split(_dw_worker, plan.blocks(), plan, x5, xf, x3, g.reshape(n, o, -1), partials,
           work_per_item=og * cg * kk * plan.rows * plan.ow)
    parts = list(partials.values())
    dw = parts[0]
    for p in parts[1:]:
        dw += p
    return dw.reshape(wshape)


def bias_grad(g):
    """The bias gradient [O]: ``g`` [N, O, *out] summed over all but dim 1."""
    n, o = g.shape[:2]
    plane = math.prod(g.shape[2:])  # not -1: an empty batch leaves it undetermined
    g3 = g.reshape(n, o, plane) if g.flags.c_contiguous else np.ascontiguousarray(g).reshape(n, o, plane)
    out = np.empty(o, dtype=g.dtype)
    parallel_for(_sum_channels, o, g3, out, work_per_item=g3.shape[0] * g3.shape[2])
    return out
