"""stft, istft and the window functions against torch (values and gradients)."""

import warnings

import numpy as np
import pytest
import torch
from conftest import assert_same
from torch_namespace import COVERED, Recorder

import ember

SIGNAL = np.random.default_rng(0).standard_normal((2, 50)).astype(np.float32)


def both(fn, rtol=1e-4, atol=1e-4):
    with Recorder() as seen:  # counted toward the conformance table's coverage
        expected = fn(torch)
    assert_same(fn(ember), expected, rtol, atol)
    COVERED.update(seen.names)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_windows(name):
    both(lambda L: tuple(getattr(L, name)(n, periodic) for n in (0, 1, 2, 7, 16) for periodic in (True, False)),
         1e-6, 1e-6)
    both(lambda L: getattr(L, name)(5, dtype=L.float64), 1e-12, 1e-12)


STFT_CASES = [
    dict(n_fft=16, hop_length=4, window="hann"),
    dict(n_fft=16, hop_length=5, win_length=12, window="hamming", center=False),
    dict(n_fft=10, hop_length=3, window="hann", pad_mode="constant", normalized=True),
    dict(n_fft=8, window=None, onesided=False),
    dict(n_fft=16, hop_length=4, window="hann", pad_mode="replicate"),
]


def _stft_run(L, kw, batched):
    kw = dict(kw)
    win = kw.pop("window")
    if win is not None:
        kw["window"] = getattr(L, f"{win}_window")(kw.get("win_length", kw["n_fft"]))
    x = L.tensor(SIGNAL if batched else SIGNAL[0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's advice to pass a window when none is given
        spec = L.stft(x, return_complex=True, **kw)
    loss = spec.abs().sum() + L.view_as_real(spec).pow(2).sum() * 0.01
    loss.backward()
    return spec.detach(), x.grad


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_stft(case, batched):
    both(lambda L: _stft_run(L, STFT_CASES[case], batched))


@pytest.mark.parametrize("batched", [False, True])
def test_istft_inverts_stft_and_differentiates(batched):
    def run(L):
        x = L.tensor(SIGNAL if batched else SIGNAL[0], requires_grad=True)
        w = L.hann_window(16)
        spec = L.stft(x, 16, hop_length=4, window=w, return_complex=True)
        y = L.istft(spec * 1.5, 16, hop_length=4, window=w, length=50)
        (y * y).sum().backward()
        return y.detach(), x.grad
    both(run)


def test_stft_errors_match_torch():
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.stft(L.tensor(SIGNAL[0]), 16)  # return_complex must be given for real input
        with pytest.raises(RuntimeError):
            L.istft(L.tensor(SIGNAL[0]), 16)  # istft needs complex input
