"""ember.fft and complex tensors against torch: values, dtypes and gradients (complex inputs
are made with view_as_complex from real leaves, so gradients flow back to real tensors
that both libraries compare directly)."""

import numpy as np
import pytest
import torch
from conftest import assert_same
from torch_namespace import COVERED, Recorder

import ember

R = np.random.default_rng(0)
X = R.standard_normal((3, 8)).astype(np.float32)
XC = R.standard_normal((3, 8, 2)).astype(np.float32)  # [..., (real, imag)]


def _loss(L, out):
    """A real loss that touches real and imaginary parts and the modulus."""
    if out.dtype.is_complex:
        return (out * (0.7 + 0.5j)).real.sum() + out.abs().sum() + L.view_as_real(out.resolve_conj()).pow(2).sum() * 0.1
    return (out * out).sum()


CASES = {
    "fft": lambda L, x: L.fft.fft(x),
    "fft_n_pad": lambda L, x: L.fft.fft(x, n=12),
    "fft_n_crop_ortho": lambda L, x: L.fft.fft(x, n=5, norm="ortho"),
    "fft_dim0_forward": lambda L, x: L.fft.fft(x, dim=0, norm="forward"),
    "ifft": lambda L, x: L.fft.ifft(x),
    "rfft": lambda L, x: L.fft.rfft(x.real if x.dtype.is_complex else x),
    "rfft_n_ortho": lambda L, x: L.fft.rfft(x.real if x.dtype.is_complex else x, n=10, norm="ortho"),
    "irfft": lambda L, x: L.fft.irfft(L.fft.rfft(x.real if x.dtype.is_complex else x) * 1.5),
    "irfft_n": lambda L, x: L.fft.irfft(x if x.dtype.is_complex else L.fft.fft(x), n=9),
    "irfft_odd_forward": lambda L, x: L.fft.irfft(L.fft.rfft((x.real if x.dtype.is_complex else x)[:, :7]), n=7,
                                                  norm="forward"),
    "fft2": lambda L, x: L.fft.fft2(x),
    "ifft2_s": lambda L, x: L.fft.ifft2(x, s=(4, 6)),
    "fftn": lambda L, x: L.fft.fftn(x, dim=(0, 1), norm="ortho"),
    "rfft2": lambda L, x: L.fft.rfft2(x.real if x.dtype.is_complex else x),
    "irfft2": lambda L, x: L.fft.irfft2(L.fft.rfft2(x.real if x.dtype.is_complex else x), s=(3, 8)),
    "irfftn_s": lambda L, x: L.fft.irfftn(x if x.dtype.is_complex else L.fft.fftn(x), s=(4, 6)),
    "shift": lambda L, x: (L.fft.fftshift(L.fft.fft(x)), L.fft.ifftshift(L.fft.fft(x), dim=1)),
}


def _run(L, case, complex_input):
    leaf = L.tensor(XC if complex_input else X, requires_grad=True)
    x = L.view_as_complex(leaf) if complex_input else leaf
    out = CASES[case](L, x)
    outs = out if isinstance(out, tuple) else (out,)
    sum(_loss(L, o) for o in outs).backward()
    return [o.detach().resolve_conj() for o in outs], leaf.grad


@pytest.mark.parametrize("complex_input", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_transform_values_and_gradients(case, complex_input):
    with Recorder() as seen:  # these count toward the conformance table's coverage
        expected = _run(torch, case, complex_input)
    assert_same(_run(ember, case, complex_input), expected, 1e-4, 1e-4)
    COVERED.update(seen.names)


def test_frequencies():
    for args in ((8,), (7, 0.5)):
        assert_same(ember.fft.fftfreq(*args), torch.fft.fftfreq(*args))
        assert_same(ember.fft.rfftfreq(*args), torch.fft.rfftfreq(*args))


def test_complex_plumbing():
    def run(L):
        leaf = L.tensor(XC[0], requires_grad=True)
        z = L.view_as_complex(leaf)
        parts = (z.real, z.imag, L.real(z), L.imag(z), L.conj(z).resolve_conj(), z.conj().resolve_conj(),
                 L.conj_physical(z), L.angle(z), z.abs(), L.abs(z),
                 L.complex(z.real, z.imag), L.polar(z.abs(), z.angle()))
        total = sum((p.abs() if p.dtype.is_complex else p).sum() for p in parts)
        total.backward()
        return [p.detach() for p in parts], leaf.grad, L.is_complex(z), z.is_complex()
    with Recorder() as seen:
        expected = run(torch)
    assert_same(run(ember), expected, 1e-5, 1e-5)
    COVERED.update(seen.names)


def test_complex_products_pass_conjugates_back():
    def run(L):
        a_leaf = L.tensor(XC[0], requires_grad=True)
        b_leaf = L.tensor(XC[1], requires_grad=True)
        a, b = L.view_as_complex(a_leaf), L.view_as_complex(b_leaf)
        ((a * b).abs().sum() + (a / (b + 3)).real.sum() + (a * 2j).imag.sum()).backward()
        return a_leaf.grad, b_leaf.grad
    assert_same(run(ember), run(torch), 1e-5, 1e-5)


def test_errors_match_torch():
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.fft.rfft(L.tensor([1 + 1j, 2j]))
        with pytest.raises(RuntimeError):
            L.imag(L.tensor([1.0]))
        with pytest.raises(RuntimeError):
            L.view_as_real(L.tensor([1.0]))


UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "reciprocal", "expm1", "log1p", "rsqrt"]


@pytest.mark.parametrize("name", UNARY)
def test_holomorphic_functions_pass_the_conjugate_derivative_back(name):
    def run(L):
        leaf = L.tensor(XC[0, :4] * 0.5 + np.array([1.0, 0.2], np.float32), requires_grad=True)
        z = L.view_as_complex(leaf)
        out = getattr(L, name)(z)
        ((out * (0.3 - 0.7j)).real.sum() + out.abs().sum()).backward()
        return out.detach(), leaf.grad
    both_complex(run)


def test_complex_matmul_and_power():
    def run(L):
        a_leaf, b_leaf = L.tensor(XC[0, :4], requires_grad=True), L.tensor(XC[1, :4], requires_grad=True)
        a, b = L.view_as_complex(a_leaf), L.view_as_complex(b_leaf)
        out = (a.reshape(2, 2) @ b.reshape(2, 2)).abs().sum() + (a @ b).real + (a ** 3).abs().sum()
        out.backward()
        return a_leaf.grad, b_leaf.grad
    both_complex(run)


def both_complex(run):
    with Recorder() as seen:
        expected = run(torch)
    assert_same(run(ember), expected, 1e-4, 1e-4)
    COVERED.update(seen.names)
