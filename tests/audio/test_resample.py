"""resample / Resample / speed: pure tones keep their frequency and amplitude, energy above the
new Nyquist frequency is attenuated, and outputs equal torchaudio 2.8's stored values."""

import os

import numpy as np
import pytest
from _audio_helpers import tensor

import ember
from ember_audio import functional as F
from ember_audio import transforms as T

FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "resample.npz"))


def _tone(freq, sr, seconds=0.5, amp=0.5):
    return (amp * np.sin(2 * np.pi * freq * np.arange(int(sr * seconds)) / sr)).astype(np.float32)


def _fit(y, sr, freq):
    """Amplitude and residual of the least-squares sinusoid at ``freq`` Hz fitted to ``y``."""
    t = np.arange(len(y)) / sr
    A = np.stack([np.sin(2 * np.pi * freq * t), np.cos(2 * np.pi * freq * t)], 1)
    coef = np.linalg.lstsq(A, y, rcond=None)[0]
    return float(np.hypot(*coef)), float(np.sqrt(np.mean((y - A @ coef) ** 2)))


@pytest.mark.parametrize("orig,new,freq", [(48000, 44100, 1000.0), (16000, 8000, 440.0), (8000, 16000, 1234.0),
                                           (44100, 16000, 3000.0)])
@pytest.mark.parametrize("method", ["sinc_interp_hann", "sinc_interp_kaiser"])
def test_tone_keeps_frequency_and_amplitude(orig, new, freq, method):
    y = F.resample(tensor(_tone(freq, orig)), orig, new, resampling_method=method).numpy()
    assert y.shape == (int(np.ceil(len(_tone(freq, orig)) * new / orig)),)
    core = y[200:-200]  # away from the zero-padded edges
    amp, resid = _fit(core, new, freq)
    assert abs(amp - 0.5) < 5e-3
    assert resid < 5e-3


@pytest.mark.parametrize("method,freq,atten_db", [
    ("sinc_interp_hann", 6000.0, 50.0), ("sinc_interp_hann", 7000.0, 80.0),
    ("sinc_interp_kaiser", 6000.0, 45.0), ("sinc_interp_kaiser", 7000.0, 100.0),
])
def test_energy_above_new_nyquist_is_attenuated(method, freq, atten_db):
    # 16 kHz -> 8 kHz with the defaults (width 6, rolloff 0.99): a tone at 1.5x / 1.75x the new
    # 4 kHz Nyquist frequency comes out at least atten_db below the input (the figures stated in
    # functional.resample's docstring).
    x = _tone(freq, 16000)
    y = F.resample(tensor(x), 16000, 8000, resampling_method=method).numpy()[200:-200]
    ratio_db = 10 * np.log10(np.mean(x ** 2) / np.mean(y ** 2))
    assert ratio_db > atten_db


@pytest.mark.parametrize("name,orig,new,kw", [
    ("48000_44100", 48000, 44100, {}), ("16000_8000", 16000, 8000, {}), ("8000_16000", 8000, 16000, {}),
    ("44100_16000_kaiser", 44100, 16000, dict(resampling_method="sinc_interp_kaiser")),
    ("16000_22050_kaiser_beta", 16000, 22050, dict(resampling_method="sinc_interp_kaiser", beta=8.0,
                                                   lowpass_filter_width=10)),
    ("16000_12000_rolloff", 16000, 12000, dict(rolloff=0.8, lowpass_filter_width=3)),
])
def test_matches_torchaudio_fixtures(name, orig, new, kw):
    got = F.resample(tensor(FIX["x"]), orig, new, **kw).numpy()
    assert got.shape == FIX[name].shape
    np.testing.assert_allclose(got, FIX[name], rtol=1e-4, atol=1e-5)  # float32 sums of ~170 products


def test_float64_and_transform_match_torchaudio_fixtures():
    got = F.resample(tensor(FIX["x64"]), 16000, 8000)
    assert got.dtype == ember.float64
    np.testing.assert_allclose(got.numpy(), FIX["16000_8000_float64"], rtol=1e-10, atol=1e-12)
    got = T.Resample(48000, 44100)(tensor(FIX["x"])).numpy()
    np.testing.assert_allclose(got, FIX["T_48000_44100"], rtol=1e-4, atol=1e-5)  # float32 sums of ~170 products
    assert "kernel" not in T.Resample(48000, 44100).state_dict()  # a non-persistent buffer, as torchaudio


def test_speed_matches_torchaudio_fixture():
    out, lengths = F.speed(tensor(FIX["x"]), 16000, 1.1, ember.tensor([3001, 2000]))
    np.testing.assert_allclose(out.numpy(), FIX["speed_1.1"], rtol=1e-4, atol=1e-5)  # float32 sums of ~170 products
    np.testing.assert_array_equal(lengths.numpy(), FIX["speed_1.1_lengths"])
    out, lengths = T.Speed(16000, 1.1)(tensor(FIX["x"]))
    assert lengths is None and out.shape[-1] == FIX["speed_1.1"].shape[-1]


def test_resample_gradient_and_errors():
    x = ember.randn(2, 50, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: F.resample(t, 5, 3), (x,), eps=1e-6, atol=1e-7)
    assert F.resample(x, 8000, 8000) is x
    with pytest.raises(ValueError, match="positive"):
        F.resample(x, 0, 8000)
    with pytest.raises(ValueError, match="integer"):
        F.resample(x, 8000.5, 8000)
    with pytest.raises(ValueError, match="resampling method"):
        F.resample(x, 8000, 16000, resampling_method="linear")
    with pytest.raises(TypeError, match="floating point"):
        F.resample(ember.zeros(10, dtype=ember.int16), 2, 1)


def test_deprecated_method_names_warn_and_map():
    x = tensor(FIX["x"])
    with pytest.warns(UserWarning, match="deprecated"):
        got = F.resample(x, 44100, 16000, resampling_method="kaiser_window")
    np.testing.assert_array_equal(got.numpy(), F.resample(x, 44100, 16000,
                                                          resampling_method="sinc_interp_kaiser").numpy())
