"""lfilter, filtfilt, the biquads, pre/de-emphasis: against scipy.signal (the same difference
equations, computed independently), RBJ-cookbook frequency responses, torchaudio 2.8's stored
outputs, and finite-difference gradients."""

import math
import os

import numpy as np
import pytest
import scipy.signal as sps
from _audio_helpers import tensor

import ember
from ember_audio import functional as F

FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "functional.npz"))
RNG = np.random.default_rng(0)


def test_lfilter_matches_scipy():
    x = RNG.uniform(-0.3, 0.3, size=(2, 3, 500))
    b = np.array([0.2, 0.3, -0.1, 0.05])
    a = np.array([2.0, -1.1, 0.6, -0.1])  # a[0] != 1: both sides are divided by it
    got = F.lfilter(tensor(x), tensor(a), tensor(b), clamp=False).numpy()
    np.testing.assert_allclose(got, sps.lfilter(b, a, x, axis=-1), rtol=1e-10, atol=1e-12)


def test_lfilter_clamps_by_default():
    x = np.full((1, 50), 0.9)
    got = F.lfilter(tensor(x), tensor(np.array([1.0, -0.9])), tensor(np.array([1.0, 0.0]))).numpy()
    ref = np.clip(sps.lfilter([1.0, 0.0], [1.0, -0.9], x), -1, 1)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert got.max() == 1.0


def test_lfilter_filter_banks_batching():
    x = RNG.uniform(-0.3, 0.3, size=(4, 2, 300)).astype(np.float32)
    b = np.array([[0.5, 0.5, 0.0], [0.2, 0.1, 0.3]], np.float32)
    a = np.array([[1.0, -0.3, 0.1], [1.0, 0.5, 0.2]], np.float32)
    got = F.lfilter(tensor(x), tensor(a), tensor(b), clamp=False, batching=True).numpy()
    ref = np.stack([sps.lfilter(b[i], a[i], x[:, i]) for i in range(2)], 1)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    got = F.lfilter(tensor(x[:, 0]), tensor(a), tensor(b), clamp=False, batching=False).numpy()
    assert got.shape == (4, 2, 300)
    np.testing.assert_allclose(got[:, 1], sps.lfilter(b[1], a[1], x[:, 0]), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="same size"):
        F.lfilter(tensor(x), tensor(a), tensor(b[:, :2]))
    with pytest.raises(ValueError, match="2 filters"):
        F.lfilter(tensor(x[:, :1]), tensor(a), tensor(b))


def test_lfilter_gradients_match_finite_differences():
    x = ember.tensor(RNG.uniform(-0.3, 0.3, size=(2, 40)), requires_grad=True)
    a = ember.tensor([1.2, -0.5, 0.2], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([0.3, 0.2, 0.1], dtype=ember.float64, requires_grad=True)
    fn = lambda x, a, b: F.lfilter(x, a, b, clamp=False)  # noqa: E731
    assert ember.autograd.gradcheck(fn, (x, a, b), eps=1e-6, atol=1e-6)
    assert ember.autograd.gradgradcheck(fn, (x, a, b), eps=1e-6, atol=1e-5)


def test_filtfilt_is_forward_then_reversed_lfilter():
    # torchaudio's filtfilt: zero initial state, no edge padding (scipy's filtfilt pads, so the
    # reference is scipy's lfilter applied forwards then over the reversed result)
    x = RNG.uniform(-0.3, 0.3, size=(3, 400))
    b, a = sps.butter(3, 0.2)
    got = F.filtfilt(tensor(x), tensor(a), tensor(b)).numpy()
    ref = sps.lfilter(b, a, sps.lfilter(b, a, x)[..., ::-1])[..., ::-1]
    np.testing.assert_allclose(got, np.clip(ref, -1, 1), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fc", [300.0, 1000.0, 3000.0])
def test_lowpass_and_highpass_equal_scipy_butterworth(fc):
    # RBJ's low/high-pass at Q = 1/sqrt(2) is the bilinear-transformed (pre-warped) 2nd-order Butterworth
    sr = 8000
    x = RNG.uniform(-0.4, 0.4, size=(1, 800))
    q = 1 / math.sqrt(2)
    b, a = sps.butter(2, fc, btype="low", fs=sr)
    np.testing.assert_allclose(F.lowpass_biquad(tensor(x), sr, fc, q).numpy(), np.clip(sps.lfilter(b, a, x), -1, 1),
                               rtol=1e-8, atol=1e-10)
    b, a = sps.butter(2, fc, btype="high", fs=sr)
    np.testing.assert_allclose(F.highpass_biquad(tensor(x), sr, fc, q).numpy(), np.clip(sps.lfilter(b, a, x), -1, 1),
                               rtol=1e-8, atol=1e-10)


def _response(fn, sr, freqs, **kw):
    """|H(f)| of a biquad measured from its impulse response (scipy.signal.freqz)."""
    impulse = np.zeros((1, 4096))
    impulse[0, 0] = 0.25  # small enough that the default clamp to [-1, 1] never acts
    h = fn(tensor(impulse), sr, **kw).numpy()[0] / 0.25
    _, H = sps.freqz(h, worN=np.asarray(freqs), fs=sr)
    return np.abs(H), h


def test_band_filters_frequency_responses():
    sr, f0, Q = 16000, 2000.0, 2.0
    mag, _ = _response(F.bandpass_biquad, sr, [f0, 200.0, 7000.0], central_freq=f0, Q=Q)
    assert abs(mag[0] - 1) < 1e-3 and mag[1] < 0.1 and mag[2] < 0.2  # 0 dB peak at f0
    mag, _ = _response(F.bandpass_biquad, sr, [f0], central_freq=f0, Q=Q, const_skirt_gain=True)
    assert abs(mag[0] - Q) < 2e-3  # constant skirt gain: peak gain Q
    mag, _ = _response(F.bandreject_biquad, sr, [f0, 200.0, 7000.0], central_freq=f0, Q=Q)
    assert mag[0] < 1e-3 and abs(mag[1] - 1) < 0.02 and abs(mag[2] - 1) < 0.02
    mag, h = _response(F.allpass_biquad, sr, [100.0, f0, 5000.0], central_freq=f0, Q=Q)
    np.testing.assert_allclose(mag, 1.0, atol=1e-3)
    mag, _ = _response(F.equalizer_biquad, sr, [f0, 100.0], center_freq=f0, gain=6.0, Q=Q)
    assert abs(20 * np.log10(mag[0]) - 6.0) < 1e-2 and abs(20 * np.log10(mag[1])) < 0.1


@pytest.mark.parametrize("name,fn,kw", [
    ("lowpass", F.lowpass_biquad, dict(cutoff_freq=1000.0, Q=0.6)),
    ("highpass", F.highpass_biquad, dict(cutoff_freq=500.0)),
    ("bandpass", F.bandpass_biquad, dict(central_freq=800.0, Q=2.0)),
    ("bandpass_skirt", F.bandpass_biquad, dict(central_freq=800.0, Q=2.0, const_skirt_gain=True)),
    ("bandreject", F.bandreject_biquad, dict(central_freq=1200.0, Q=1.5)),
    ("allpass", F.allpass_biquad, dict(central_freq=600.0)),
    ("equalizer", F.equalizer_biquad, dict(center_freq=1500.0, gain=6.0, Q=0.9)),
])
def test_biquads_match_torchaudio_fixtures(name, fn, kw):
    got = fn(tensor(FIX["wave"]), 8000, **kw).numpy()
    np.testing.assert_allclose(got, FIX[name], rtol=1e-4, atol=1e-5)


def test_lfilter_filtfilt_emphasis_match_torchaudio_fixtures():
    x, a, b = tensor(FIX["wave"]), tensor(FIX["lfilter_a"]), tensor(FIX["lfilter_b"])
    np.testing.assert_allclose(F.lfilter(x * 3, a, b).numpy(), FIX["lfilter"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(F.lfilter(x * 3, a, b, clamp=False).numpy(), FIX["lfilter_noclamp"], rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(F.filtfilt(x, a, b).numpy(), FIX["filtfilt"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(F.preemphasis(x).numpy(), FIX["preemphasis"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(F.deemphasis(x * 0.5).numpy(), FIX["deemphasis"], rtol=1e-4, atol=1e-6)


def test_preemphasis_deemphasis_invert_each_other():
    x = RNG.uniform(-0.2, 0.2, size=(2, 300))
    pre = F.preemphasis(tensor(x), 0.9).numpy()
    np.testing.assert_allclose(pre, sps.lfilter([1, -0.9], [1], x), rtol=1e-12)
    np.testing.assert_allclose(F.deemphasis(tensor(pre), 0.9).numpy(), x, rtol=1e-9, atol=1e-12)
