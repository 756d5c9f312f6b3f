"""Conformance entries: torch.fft's Hermitian transforms (hfft, ihfft, hfft2, ihfft2,
hfftn, ihfftn), over sizes, dims and normalizations; complex inputs are built from real
leaves so that their gradients are compared too."""

from op_table import Op, Sample, f


def _hfft(L, a, b):
    x = L.complex(a, b)
    return (L.fft.hfft(x), L.fft.hfft(x, n=7), L.fft.hfft(x, dim=0, norm="ortho"), L.fft.hfft(x, norm="forward"),
            L.fft.hfft(a), L.fft.hfft2(x), L.fft.hfft2(x, s=(3, 5), norm="ortho"), L.fft.hfftn(x),
            L.fft.hfftn(x, s=(2, 6)), L.fft.hfftn(x, dim=(0,), norm="forward"))


def _ihfft(L, a):
    outs = (L.fft.ihfft(a), L.fft.ihfft(a, n=6), L.fft.ihfft(a, dim=0, norm="ortho"), L.fft.ihfft(a, norm="forward"),
            L.fft.ihfft2(a), L.fft.ihfft2(a, s=(2, 5)), L.fft.ihfftn(a), L.fft.ihfftn(a, dim=(0, 1), norm="forward"),
            L.fft.ihfftn(a, s=(4,), norm="ortho"))
    # torch's results are lazily conjugated views (resolved to compare them); the real and
    # imaginary parts as well, for the float64 gradcheck (it checks real outputs)
    return tuple(o.resolve_conj() for o in outs) + tuple(p for o in outs for p in (o.real, o.imag.resolve_neg()))


OPS = [
    Op("fft.hfft", _hfft, [Sample((f(3, 4), f(3, 4))), Sample((f(2, 3, 4), f(2, 3, 4)))]),
    Op("fft.ihfft", _ihfft, [Sample((f(3, 4),)), Sample((f(2, 3, 5),))]),
    Op("fft.hermitian_errors", lambda L, a, which: (
        L.fft.ihfft(L.complex(a, a)) if which == 0 else L.fft.ihfftn(L.complex(a, a)) if which == 1 else
        L.fft.hfft(a, norm="sideways")), [], grad=False,
       errors=[(Sample((f(3, 4), 0)), RuntimeError), (Sample((f(3, 4), 1)), RuntimeError),
               (Sample((f(3, 4), 2)), RuntimeError)]),
]

# torch's n-d forms transform the leading dims by their own node order (c2c before or after the
# conjugation): the values and gradients are compared, not the node names
NODE_NAMES_DIFFER = {"fft.ihfft"}
