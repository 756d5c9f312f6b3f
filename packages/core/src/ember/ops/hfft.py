"""The Hermitian FFTs (torch.fft's hfft, ihfft, hfft2, ihfft2, hfftn, ihfftn).

A signal whose spectrum is real is Hermitian-symmetric, so its one-sided half determines
it: hfftn maps that half to the real spectrum and ihfftn is its inverse.  Both are
written with the real transforms of ``fft`` (whose gradients they inherit), using
fftn(x) = conj(ifftn(conj(x))) * N: hfftn is the c2c transform of the leading dims, a
conjugation and the c2r transform of the last dim with the dual normalization; ihfftn
is the r2c transform of the last dim with the dual normalization, a conjugation and the
inverse c2c transform of the leading dims (torch's documentation of torch.fft.hfftn).
"""

from __future__ import annotations

from .._autocast import autocast_op
from .._tensor import _wrap_dim
from ._helpers import _type_name
from .fft import _DUAL, _axes, _norm, fftn, ifftn, irfftn, rfftn

__all__ = ["hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]


@autocast_op("fp32")
def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The real n-d spectrum of the Hermitian signal whose half (the non-negative frequencies
    of the last transformed dim) is ``input``, over ``dim`` (all dims when None)
    (torch.fft.hfftn).

    ``s`` gives the signal size along each dim of ``dim``; the last one defaults to ``2 * (m
    - 1)``, m its size in ``input``. ``norm`` scales the transform as in ``fft``; ``out``
    receives the result when given."""
    from .complex_ops import conj
    norm = _norm(norm)
    dims, sizes = _axes(input, s, dim, True)
    last = 2 * (input.shape[dims[-1]] - 1) if s is None else sizes[-1]
    x = input
    if len(dims) > 1:
        x = fftn(x, sizes[:-1], dims[:-1], norm)
    return _out(irfftn(conj(x), (last,), (dims[-1],), _DUAL[norm]), out)


@autocast_op("fp32")
def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The one-sided half [..., s[-1] // 2 + 1] of the inverse n-d DFT of a real ``input`` over
    ``dim`` (all dims when None): the inverse of ``hfftn`` (torch.fft.ihfftn). ``s`` gives
    the signal sizes; a complex ``input`` raises RuntimeError. ``norm`` scales the transform
    as in ``fft``; ``out`` receives the result when given."""
    from .complex_ops import conj
    if input.dtype.is_complex:
        raise RuntimeError(f"ihfftn expects a real-valued input tensor, but got {_type_name(input.dtype)}")
    norm = _norm(norm)
    dims, sizes = _axes(input, s, dim, True)
    x = conj(rfftn(input, sizes[-1:], dims[-1:], _DUAL[norm]))
    if len(dims) > 1:
        x = ifftn(x, sizes[:-1], dims[:-1], norm)
    return _out(x, out)


def _out(result, out):
    if out is None:
        return result
    from ._helpers import write_out
    return write_out(result, out, "fft")


@autocast_op("fp32")
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real spectrum (length ``n``, default ``2 * (m - 1)``) of the Hermitian 1-d signal
    whose half along ``dim`` is ``input`` (torch.fft.hfft). ``norm`` scales the transform as
    in ``fft``; ``out`` receives the result when given."""
    d = _wrap_dim(dim, input.ndim)
    return hfftn(input, None if n is None else (n,), (d,), norm, out=out)


@autocast_op("fp32")
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The ``n // 2 + 1`` non-negative frequencies of the inverse DFT of a real ``input`` along
    ``dim``, ``n`` padding or cropping it first (torch.fft.ihfft); a complex ``input``
    raises RuntimeError. ``norm`` scales the transform as in ``fft``; ``out`` receives the
    result when given."""
    if input.dtype.is_complex:
        raise RuntimeError(f"ihfft expects a real input tensor, but got {_type_name(input.dtype)}")
    d = _wrap_dim(dim, input.ndim)
    return ihfftn(input, None if n is None else (n,), (d,), norm, out=out)


@autocast_op("fp32")
def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """``hfftn`` of ``input`` over ``dim`` (the last two by default), ``s`` as there
    (torch.fft.hfft2). ``norm`` scales the transform as in ``fft``; ``out`` receives the
    result when given."""
    return hfftn(input, s, dim, norm, out=out)


@autocast_op("fp32")
def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """``ihfftn`` of a real ``input`` over ``dim`` (the last two by default), ``s`` as there
    (torch.fft.ihfft2). ``norm`` scales the transform as in ``fft``; ``out`` receives the
    result when given."""
    return ihfftn(input, s, dim, norm, out=out)
