"""Complex numbers: real, imag, conj, angle, abs of complex tensors, view_as_real,
view_as_complex, complex and polar.

Gradients follow torch's convention for complex tensors: the gradient of a real loss L
with respect to z = x + iy is dL/dx + i dL/dy (the conjugate Wirtinger derivative, times
2), so a holomorphic f passes ``grad * conj(f'(z))`` back (torch's "Autograd for Complex
Numbers" notes).
"""

from __future__ import annotations

from .. import _dtype as D
from .._autocast import autocast_op
from .._tensor import _make
from ..autograd.graph import record
from ._helpers import be, make_view, needs_grad

__all__ = ["real", "imag", "conj", "conj_physical", "resolve_conj", "angle", "view_as_real", "view_as_complex",
           "complex", "polar", "is_complex", "is_conj", "is_neg",
           "resolve_neg"]


def is_complex(input) -> bool:
    """True when ``input``'s dtype is complex (complex64 or complex128) (torch.is_complex)."""
    return input.dtype.is_complex


def real(input):
    """The real part of ``input``: a view of a complex tensor in the matching real dtype
    (complex64 -> float32), the tensor itself for real ones (torch.real)."""
    if not input.dtype.is_complex:
        return input
    return _part_view(input, "real", "RealBackward0", _real_rule)


def imag(input):
    """The imaginary part of a complex ``input``, as a view in the matching real dtype
    (torch.imag); a real tensor raises RuntimeError, as torch."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _part_view(input, "imag", "ImagBackward0", _imag_rule)


def _part_view(input, attr, node, rule):
    arr = getattr(input._data, attr)
    out = make_view(input, arr, lambda t: _part_view(t, attr, node, rule), node, rule, (input.dtype,))
    out.dtype = input.dtype.to_real()
    return out


def _real_rule(g, dtype):
    return g.to(dtype)


def _imag_rule(g, dtype):
    return g.to(dtype) * 1j


def conj(input):
    """The complex conjugate of ``input``, as a copy (torch returns a lazily conjugated view
    with the same values) (torch.conj; ``conj_physical`` is the same function). Real tensors
    come back as they are."""
    if not input.dtype.is_complex:
        return input
    r = _make(be(input).xp.conj(input._data), input.dtype)
    if needs_grad(input):
        record("ConjBackward0", _conj_rule, (input,), r)
    return r


def _conj_rule(g):
    return conj(g)


conj_physical = conj


def resolve_conj(input):
    """``input`` itself: ember's conjugates are always materialized (torch.resolve_conj)."""
    return input


def angle(input):
    """The argument (phase) of ``input`` in radians, in (-pi, pi] (torch.angle): complex inputs
    give the matching real dtype; real ones 0 or pi (NaN stays NaN), integer inputs in the
    default float dtype. ``out`` receives the result when given."""
    xp = be(input).xp
    dt = input.dtype.to_real() if input.dtype.is_complex else (
        input.dtype if input.dtype.is_floating_point else D.get_default_dtype())
    r = _make(xp.asarray(xp.angle(input._data)).astype(dt.np), dt)
    if needs_grad(input):
        record("AngleBackward0", _angle_rule, (input,), r, (input,))
    return r


def _angle_rule(g, z):
    from .elementwise import where
    if not z.dtype.is_complex:
        return g * 0
    # d angle: with z = x + iy, dtheta/dx = -y/|z|^2, dtheta/dy = x/|z|^2
    a2 = real(z) ** 2 + imag(z) ** 2
    safe = where(a2 == 0, 1.0, a2)
    grad = (-imag(z) + real(z) * 1j) / safe
    return where(a2 == 0, 0.0, g.to(grad.dtype) * grad)


def complex_abs(input):
    """|z| of a complex tensor, in the real dtype; its gradient is g * z / |z| (0 at 0)."""
    xp = be(input).xp
    dt = input.dtype.to_real()
    r = _make(xp.abs(input._data).astype(dt.np), dt)
    if needs_grad(input):
        record("AbsBackward0", _complex_abs_rule, (input,), r, (input, r))
    return r


def _complex_abs_rule(g, z, r):
    from .elementwise import where
    safe = where(r == 0, 1.0, r)
    return where(r == 0, 0.0, g.to(z.dtype) * z / safe.to(z.dtype))


def view_as_real(input):
    """A real view [..., 2] (real and imaginary parts) of a complex ``input`` [...], in the
    matching real dtype (torch.view_as_real). A real ``input`` raises RuntimeError."""
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    dt = input.dtype.to_real()
    data = input._data
    part = data.real  # a float view with the complex array's strides; one item on is the imaginary part
    arr = be(input).xp.lib.stride_tricks.as_strided(part, data.shape + (2,), data.strides + (part.itemsize,))
    out = make_view(input, arr, view_as_real, "ViewAsRealBackward0", _view_as_real_rule)
    out.dtype = dt
    return out


def _view_as_real_rule(g):
    return view_as_complex(g.contiguous())


@autocast_op("fp32")
def view_as_complex(input):
    """A complex view [...] of a float32 or float64 ``input`` [..., 2] whose last dim holds
    (real, imaginary) with stride 1 (torch.view_as_complex). Another last dim, dtype or
    stride raises RuntimeError."""
    if input.shape[-1:] != (2,) or input.dtype not in (D.float32, D.float64):
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input._data.strides[-1] != input._data.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    dt = input.dtype.to_complex()
    arr = input._data.view(dt.np).reshape(input._data.shape[:-1])
    out = make_view(input, arr, view_as_complex, "ViewAsComplexBackward0", _view_as_complex_rule)
    out.dtype = dt
    return out


def _view_as_complex_rule(g):
    return view_as_real(g)


def complex(real, imag):
    """``real + i * imag`` from the tensors ``real`` and ``imag``, both of one floating
    dtype (float32 gives complex64, float64 complex128), broadcast together
    (torch.complex). Other dtypes, or two different ones, raise RuntimeError. ``out``
    receives the result when given."""
    if real.dtype is not imag.dtype or real.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {real.dtype} and "
                           f"{imag.dtype}")
    return real.to(real.dtype.to_complex()) + imag.to(real.dtype.to_complex()) * 1j


@autocast_op("fp32")
def polar(abs, angle):
    """The complex tensor ``abs * (cos(angle) + i sin(angle))`` from float32 or float64 tensors
    ``abs`` and ``angle``, broadcast together (torch.polar). ``out`` receives the result
    when given."""
    from .elementwise import cos, sin
    return complex(abs * cos(angle), abs * sin(angle))


def is_conj(input) -> bool:
    """False for every ``input``: ember has no lazily conjugated tensors (``conj``
    materializes), so none carries torch's conjugate bit (torch.is_conj)."""
    return False


def is_neg(input) -> bool:
    """False for every ``input``: ember has no lazily negated tensors (torch's negative bit)
    (torch.is_neg)."""
    return False


def resolve_neg(input):
    """``input`` itself: no ember tensor carries a negative bit to resolve (torch.resolve_neg)."""
    return input
