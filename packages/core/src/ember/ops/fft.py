"""Discrete Fourier transforms (torch.fft) with gradients.

Values come from the array module's fft (numpy.fft, cupy.fft).  Every transform is
linear, so its gradient is the adjoint: the adjoint of ``fft`` with a ``norm`` is ``ifft``
with the dual norm ('backward' <-> 'forward', 'ortho' <-> 'ortho'), and so on; a real input
takes the real part, and a padded or cropped input (``n``/``s`` given) takes the cropped
or zero-padded gradient.  For ``irfft`` the half spectrum stands for the full one: its
interior bins count twice (torch's derivatives.yaml, fft_c2r_backward).
"""

from __future__ import annotations

from .. import _dtype as D
from .._autocast import autocast_op
from .._tensor import Tensor, _make, _wrap_dim
from ..autograd.graph import record
from ._helpers import be, needs_grad

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
           "fftshift", "ifftshift", "fftfreq", "rfftfreq"]

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _DUAL:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')  # (torch's type: RuntimeError)
    return norm


def _complex_dtype(x: Tensor) -> D.dtype:
    if x.dtype in (D.float16, D.bfloat16) and x.device.type == "cpu":
        # as torch: the CPU FFT has no half-precision kernels
        raise RuntimeError(f"Unsupported dtype {'Half' if x.dtype is D.float16 else 'BFloat16'}")
    if x.dtype.is_complex:
        return x.dtype
    return D.complex128 if x.dtype is D.float64 else D.complex64


def _axes(x, s, dim, default_all):
    """The transform dims and sizes for the n-d forms (torch's rules for s and dim)."""
    if dim is None:
        if s is not None:
            dims = tuple(range(x.ndim - len(s), x.ndim))
        else:
            dims = tuple(range(x.ndim)) if default_all else (x.ndim - 2, x.ndim - 1)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(_wrap_dim(d, x.ndim) for d in dims)
    sizes = tuple(s) if s is not None else tuple(x.shape[d] for d in dims)
    sizes = tuple(x.shape[d] if n == -1 else n for d, n in zip(dims, sizes))
    return dims, sizes


def _fit(g, shape_in, dims):
    """Crop or zero-pad gradient ``g`` along ``dims`` to the input's sizes (with ember ops,
    so that the gradient differentiates again)."""
    for d in dims:
        n_in, n_g = shape_in[d], g.shape[d]
        if n_g > n_in:
            g = g.narrow(d, 0, n_in)
        elif n_g < n_in:
            g = _pad_end(g, d, n_in - n_g)
    return g


def _pad_end(g, d, k):
    """``g`` with ``k`` zeros appended along dim ``d``."""
    from .creation import zeros
    from .shape import cat
    shape = list(g.shape)
    shape[d] = k
    return cat([g, zeros(shape, dtype=g.dtype, device=g.device)], d)


# ---- complex to complex -------------------------------------------------------------

def _c2c(x, sizes, dims, norm, forward, name):
    norm = _norm(norm)
    f = be(x).fft
    arr = x._data if x.dtype.is_complex else x._data.astype(_complex_dtype(x).np)
    out = (f.fftn if forward else f.ifftn)(arr, s=sizes, axes=dims, norm=norm)
    dt = _complex_dtype(x)
    r = _make(out.astype(dt.np, copy=False), dt)
    if needs_grad(x):
        record(name, _c2c_rule, (x,), r, (tuple(x.shape), x.dtype, dims, norm, forward))
    return r


def _c2c_rule(g, shape_in, dtype_in, dims, norm, forward):
    from .complex_ops import real
    sizes = tuple(g.shape[d] for d in dims)
    back = _c2c(g, sizes, dims, _DUAL[norm], not forward, "FftC2CBackward0")
    back = _fit(back, shape_in, dims) if tuple(back.shape) != shape_in else back
    return back if dtype_in.is_complex else real(back).to(dtype_in)


@autocast_op("fp32")
def fft(input, n=None, dim=-1, norm=None):
    """The 1-d discrete Fourier transform of ``input`` along ``dim`` (torch.fft.fft).

    ``n`` zero-pads or crops ``input`` along ``dim`` to that length first (its size when
    None). ``norm`` scales the transform: 'backward' (None: none forward, 1/n inverse),
    'ortho' (1/sqrt(n) both ways) or 'forward' (1/n forward, none inverse). The result is
    complex (complex64 for float32 and integer inputs, complex128 for float64); float16 is
    computed in float32."""
    d = _wrap_dim(dim, input.ndim)
    return _c2c(input, (input.shape[d] if n is None else n,), (d,), norm, True, "FftC2CBackward0" if
                input.dtype.is_complex else "FftR2CBackward0")


@autocast_op("fp32")
def ifft(input, n=None, dim=-1, norm=None):
    """The inverse 1-d discrete Fourier transform of ``input`` along ``dim`` (torch.fft.ifft):
    ``n`` pads or crops first, ``norm`` as in ``fft``; a complex result."""
    d = _wrap_dim(dim, input.ndim)
    return _c2c(input, (input.shape[d] if n is None else n,), (d,), norm, False, "FftC2CBackward0")


@autocast_op("fp32")
def fftn(input, s=None, dim=None, norm=None):
    """The n-d discrete Fourier transform of ``input`` over ``dim`` (all dims, or the last
    ``len(s)``, when None) (torch.fft.fftn). ``s`` gives the signal size along each
    transformed dim (pad or crop; -1 keeps it); ``norm`` as in ``fft``; a complex result."""
    dims, sizes = _axes(input, s, dim, True)
    return _c2c(input, sizes, dims, norm, True, "FftC2CBackward0")


@autocast_op("fp32")
def ifftn(input, s=None, dim=None, norm=None):
    """The inverse n-d discrete Fourier transform of ``input`` over ``dim`` (torch.fft.ifftn);
    ``s`` and ``norm`` as in ``fftn``; a complex result."""
    dims, sizes = _axes(input, s, dim, True)
    return _c2c(input, sizes, dims, norm, False, "FftC2CBackward0")


@autocast_op("fp32")
def fft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-d discrete Fourier transform of ``input`` over ``dim`` (the last two by default):
    ``fftn(input, s, dim, norm)`` (torch.fft.fft2); ``s`` and ``norm`` as there."""
    return fftn(input, s, dim, norm)


@autocast_op("fp32")
def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse 2-d discrete Fourier transform of ``input`` over ``dim`` (the last two by
    default): ``ifftn(input, s, dim, norm)`` (torch.fft.ifft2); ``s`` and ``norm`` as there."""
    return ifftn(input, s, dim, norm)


# ---- real to half-complex and back --------------------------------------------------

@autocast_op("fp32")
def rfftn(input, s=None, dim=None, norm=None):
    """The n-d discrete Fourier transform of a real ``input`` over ``dim``, keeping the ``n //
    2 + 1`` non-negative frequencies of the last transformed dim (torch.fft.rfftn). ``s``
    and ``norm`` as in ``fftn``; a complex ``input`` raises RuntimeError."""
    if input.dtype.is_complex:
        raise RuntimeError("rfftn expects a real-valued input tensor, but got " + str(input.dtype))
    norm = _norm(norm)
    dims, sizes = _axes(input, s, dim, True)
    f = be(input).fft
    dt = _complex_dtype(input)
    x = input._data if input.dtype.is_floating_point else input._data.astype(D.float32.np)
    out = f.rfftn(x, s=sizes, axes=dims, norm=norm)
    r = _make(out.astype(dt.np, copy=False), dt)
    if needs_grad(input):
        record("FftR2CBackward0", _r2c_rule, (input,), r, (tuple(input.shape), input.dtype, dims, sizes, norm))
    return r


def _r2c_rule(g, shape_in, dtype_in, dims, sizes, norm):
    # zero-fill the dropped negative frequencies, then the adjoint of the full transform
    from .complex_ops import real
    last = dims[-1]
    full = _pad_end(g, last, sizes[-1] - g.shape[last]) if sizes[-1] > g.shape[last] else g
    back = _c2c(full, sizes, dims, _DUAL[norm], False, "FftC2CBackward0")
    back = real(back).to(dtype_in if dtype_in.is_floating_point else D.float32)
    return _fit(back, shape_in, dims) if tuple(back.shape) != shape_in else back


@autocast_op("fp32")
def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``rfftn``: a real tensor from the half spectrum ``input`` over ``dim``
    (torch.fft.irfftn). The last transformed dim gets size ``s[-1]`` (default ``2 * (m -
    1)``, m its size in ``input``); ``norm`` as in ``fft``. The result is float32 for
    complex64 input, float64 for complex128."""
    norm = _norm(norm)
    dims, sizes = _axes(input, s, dim, True)
    if s is None:
        sizes = sizes[:-1] + (2 * (input.shape[dims[-1]] - 1),)
    f = be(input).fft
    cdt = _complex_dtype(input)
    out = f.irfftn(input._data.astype(cdt.np, copy=False), s=sizes, axes=dims, norm=norm)
    dt = cdt.to_real()
    r = _make(out.astype(dt.np, copy=False), dt)
    if needs_grad(input):
        record("FftC2RBackward0", _c2r_rule, (input,), r, (tuple(input.shape), input.dtype, dims, sizes, norm))
    return r


def _c2r_rule(g, shape_in, dtype_in, dims, sizes, norm):
    xp = be(g).xp
    half = rfftn(g, sizes, dims, _DUAL[norm])
    last = dims[-1]
    n = sizes[-1]
    # interior bins stand for two (conjugate) bins of the full spectrum
    weight = xp.full(half.shape[last], 2.0, dtype=half._data.real.dtype)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    shape = [1] * half.ndim
    shape[last] = half.shape[last]
    back = half * _make(weight.reshape(shape), D.from_numpy_dtype(weight.dtype))
    back = _fit(back, shape_in, dims) if tuple(back.shape) != shape_in else back
    return back if dtype_in.is_complex else back.to(_complex_dtype(back))


@autocast_op("fp32")
def rfft(input, n=None, dim=-1, norm=None):
    """The discrete Fourier transform of a real ``input`` along ``dim``: the ``n // 2 + 1``
    non-negative frequencies (torch.fft.rfft). ``n`` pads or crops first; ``norm`` as in
    ``fft``."""
    d = _wrap_dim(dim, input.ndim)
    return rfftn(input, None if n is None else (n,), (d,), norm)


@autocast_op("fp32")
def irfft(input, n=None, dim=-1, norm=None):
    """The real inverse of ``rfft`` along ``dim`` (torch.fft.irfft): the output length is ``n``
    (default ``2 * (m - 1)``, m the size of ``input`` along ``dim``); ``norm`` as in
    ``fft``."""
    d = _wrap_dim(dim, input.ndim)
    return irfftn(input, None if n is None else (n,), (d,), norm)


@autocast_op("fp32")
def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-d ``rfftn`` of a real ``input`` over ``dim`` (the last two by default), with ``s``
    and ``norm`` as there (torch.fft.rfft2)."""
    return rfftn(input, s, dim, norm)


@autocast_op("fp32")
def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-d ``irfftn`` of the half spectrum ``input`` over ``dim`` (the last two by
    default), with ``s`` and ``norm`` as there (torch.fft.irfft2)."""
    return irfftn(input, s, dim, norm)


# ---- helpers --------------------------------------------------------------------------

def fftshift(input, dim=None):
    """``input`` with the zero frequency moved to the centre: a roll by ``n // 2`` along each
    dim of ``dim`` (an int or a sequence; all dims when None) (torch.fft.fftshift)."""
    from .layout import roll
    dims = tuple(range(input.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    return roll(input, tuple(input.shape[d] // 2 for d in dims), dims)


def ifftshift(input, dim=None):
    """The inverse of ``fftshift``: ``input`` rolled by ``-(n // 2)`` along each dim of ``dim``
    (all when None) (torch.fft.ifftshift)."""
    from .layout import roll
    dims = tuple(range(input.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    return roll(input, tuple(-(input.shape[d] // 2) for d in dims), dims)


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d``, as a 1-d tensor
    ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d * n)`` (torch.fft.fftfreq).
    ``dtype`` defaults to the default dtype; ``requires_grad`` makes it a leaf that records
    gradients; ``device`` is accepted (the result is on the CPU)."""
    import numpy

    from .creation import tensor
    return tensor(numpy.fft.fftfreq(n, d), dtype=dtype or D.get_default_dtype(), requires_grad=requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The non-negative sample frequencies ``[0, 1, ..., n // 2] / (d * n)`` of an ``n``-point
    rfft with sample spacing ``d`` (torch.fft.rfftfreq); ``dtype``, ``device`` and
    ``requires_grad`` as in ``fftfreq``."""
    import numpy

    from .creation import tensor
    return tensor(numpy.fft.rfftfreq(n, d), dtype=dtype or D.get_default_dtype(), requires_grad=requires_grad)
