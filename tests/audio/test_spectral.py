"""Spectrogram, InverseSpectrogram, GriffinLim, TimeStretch/phase_vocoder: against torch.stft
(PyTorch 2.13.0, the op torchaudio's spectrogram calls) and librosa 0.11, on real speech."""

import librosa
import numpy as np
import pytest
import torch
from _audio_helpers import tensor

import ember
from ember_audio import functional as F
from ember_audio import transforms as T


@pytest.mark.parametrize("kwargs", [
    dict(n_fft=400, power=2.0),
    dict(n_fft=512, win_length=400, hop_length=160, power=1.0, pad_mode="constant"),
    dict(n_fft=256, power=2.0, center=False),
    dict(n_fft=256, power=2.0, normalized=True, pad=7),
    dict(n_fft=256, power=2.0, normalized="frame_length", onesided=False),
])
def test_spectrogram_matches_torch_stft(speech, kwargs):
    data, _ = speech
    x = data[:8000]
    spec = T.Spectrogram(**kwargs)(tensor(x)).numpy()
    n_fft = kwargs["n_fft"]
    win = kwargs.get("win_length", n_fft)
    hop = kwargs.get("hop_length", win // 2)
    w = torch.hann_window(win)
    xt = torch.from_numpy(x)
    if kwargs.get("pad"):
        xt = torch.nn.functional.pad(xt, (kwargs["pad"], kwargs["pad"]))
    ref = torch.stft(xt, n_fft, hop, win, w, center=kwargs.get("center", True),
                     pad_mode=kwargs.get("pad_mode", "reflect"), normalized=kwargs.get("normalized") == "frame_length",
                     onesided=kwargs.get("onesided", True), return_complex=True)
    if kwargs.get("normalized") is True:
        ref = ref / w.pow(2).sum().sqrt()
    ref = ref.abs().pow(kwargs["power"]).numpy()
    assert spec.shape == ref.shape
    np.testing.assert_allclose(spec, ref, rtol=1e-4, atol=1e-5 * ref.max())


def test_spectrogram_matches_librosa_stft(speech):
    # librosa.stft with pad_mode="reflect" (torchaudio's default) and its periodic Hann window
    data, _ = speech
    spec = T.Spectrogram(n_fft=512, hop_length=128, power=2.0)(tensor(data)).numpy()
    ref = np.abs(librosa.stft(data, n_fft=512, hop_length=128, center=True, pad_mode="reflect")) ** 2
    np.testing.assert_allclose(spec, ref, rtol=1e-4, atol=1e-5 * ref.max())


def test_spectrogram_batch_complex_and_gradient():
    x = ember.randn(2, 3, 1000, dtype=ember.float64, requires_grad=True)
    spec = T.Spectrogram(n_fft=128, power=None)(x)
    assert spec.dtype == ember.complex128 and tuple(spec.shape) == (2, 3, 65, 16)
    power = T.Spectrogram(n_fft=128)(x)
    power.sum().backward()
    # d/dx sum |X|^2 = 2 * sum over frames of the windowed-frame energy gradient: check with torch
    xt = torch.from_numpy(x.detach().numpy()).requires_grad_()
    # the module keeps its float32 window (as torchaudio); ember rounds it from float64, torch
    # computes it in float32 (1-2 ulp apart), so the oracle takes ember's window values
    w = torch.from_numpy(ember.hann_window(128).numpy()).double()
    torch.stft(xt.reshape(-1, 1000), 128, 64, 128, w, return_complex=True).abs().pow(2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_inverse_spectrogram_round_trip(speech):
    data, _ = speech
    x = tensor(data[:6000]).reshape(1, 6000)
    spec = T.Spectrogram(n_fft=400, power=None, normalized=True)(x)
    back = T.InverseSpectrogram(n_fft=400, normalized=True)(spec, length=6000)
    np.testing.assert_allclose(back.numpy(), x.numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="complex"):
        T.InverseSpectrogram(n_fft=400)(spec.abs())


def test_inverse_spectrogram_matches_torch_istft(speech):
    data, _ = speech
    x = torch.from_numpy(data[:4000])
    w = torch.hann_window(256)
    spec = torch.stft(x, 256, 64, 256, w, return_complex=True) * 0.5
    ref = torch.istft(spec, 256, 64, 256, w, length=3999).numpy()
    got = F.inverse_spectrogram(tensor(spec.numpy()), 3999, 0, ember.hann_window(256), 256, 64, 256, False).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_griffinlim_recovers_a_consistent_magnitude(speech):
    # The spectral convergence of Griffin-Lim's estimate must fall well below that of the first iterate.
    data, _ = speech
    x = tensor(data[:8000])
    mag = T.Spectrogram(n_fft=256, power=1.0)(x)
    ember.manual_seed(0)
    est1 = T.GriffinLim(n_fft=256, n_iter=1, power=1.0, length=8000)(mag)
    ember.manual_seed(0)
    est = T.GriffinLim(n_fft=256, n_iter=32, power=1.0, length=8000)(mag)
    assert tuple(est.shape) == (8000,)

    def conv(e):
        m = T.Spectrogram(n_fft=256, power=1.0)(e)
        return float((m - mag).norm() / mag.norm())

    assert conv(est) < 0.25 < conv(est1)
    with pytest.raises(ValueError, match="momentum"):
        T.GriffinLim(momentum=1.0)


@pytest.mark.parametrize("rate", [1.3, 0.8])
def test_phase_vocoder_matches_librosa(speech, rate):
    data, _ = speech
    hop = 128
    D = librosa.stft(data[:8000], n_fft=512, hop_length=hop)
    ref = librosa.phase_vocoder(D, rate=rate, hop_length=hop)
    stretch = T.TimeStretch(hop_length=hop, n_freq=257, fixed_rate=rate)
    got = stretch(tensor(D)).numpy()
    assert got.shape == ref.shape
    np.testing.assert_allclose(np.abs(got), np.abs(ref), rtol=1e-4, atol=1e-5 * np.abs(ref).max())
    # phases accumulate in float32: compare the complex values relative to the largest magnitude
    assert np.abs(got - ref).max() < 2e-3 * np.abs(ref).max()
    with pytest.raises(ValueError, match="fixed_rate"):
        T.TimeStretch(n_freq=257)(tensor(D))
