"""compute_deltas, detect_pitch_frequency, mu-law, Fade, Vol, add_noise, SpecAugment masks, and
the spectral transforms against torchaudio 2.8's stored outputs (fixtures/functional.npz),
librosa 0.11 and hand-derived values."""

import math
import os

import librosa
import numpy as np
import pytest
from _audio_helpers import tensor

import ember
from ember_audio import functional as F
from ember_audio import transforms as T

FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "functional.npz"))
SR = 8000


def _wave():
    return tensor(FIX["wave"])


def test_spectral_transforms_match_torchaudio_fixtures():
    x = _wave()
    mel = T.MelSpectrogram(SR, n_fft=256, n_mels=40)(x).numpy()
    np.testing.assert_allclose(mel, FIX["melspec"], rtol=1e-4, atol=1e-5 * FIX["melspec"].max())
    mfcc = T.MFCC(SR, n_mfcc=13, melkwargs=dict(n_fft=256, n_mels=40))(x).numpy()
    np.testing.assert_allclose(mfcc, FIX["mfcc"], rtol=1e-4, atol=1e-3)
    lfcc = T.LFCC(SR, n_filter=40, n_lfcc=13, speckwargs=dict(n_fft=256))(x).numpy()
    np.testing.assert_allclose(lfcc, FIX["lfcc"], rtol=1e-4, atol=1e-3)
    # mel points are computed in float32 (as torchaudio): a few weights differ in the 5th digit
    np.testing.assert_allclose(F.melscale_fbanks(129, 0.0, 4000.0, 40, SR).numpy(), FIX["fb_htk"], rtol=1e-4,
                               atol=1e-5)
    fb = F.melscale_fbanks(129, 30.0, 3800.0, 40, SR, norm="slaney", mel_scale="slaney").numpy()
    np.testing.assert_allclose(fb, FIX["fb_slaney"], rtol=1e-4, atol=1e-5 * FIX["fb_slaney"].max())
    db = T.AmplitudeToDB(top_db=60.0)(tensor(np.stack([FIX["melspec"], FIX["melspec"] * 1e-3]))).numpy()
    np.testing.assert_allclose(db, FIX["db_batch"], rtol=1e-5, atol=1e-4)


def test_time_stretch_and_griffinlim_match_torchaudio_fixtures():
    cspec = T.Spectrogram(n_fft=256, hop_length=64, power=None)(_wave())
    got = T.TimeStretch(hop_length=64, n_freq=129, fixed_rate=1.25)(cspec).numpy()
    ref = FIX["stretch_1.25"]
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() < 1e-3 * np.abs(ref).max()
    est = T.GriffinLim(n_fft=256, hop_length=64, n_iter=8, rand_init=False)(cspec.abs().pow(2)).numpy()
    np.testing.assert_allclose(est, FIX["griffinlim"], rtol=1e-3, atol=1e-4)


def test_compute_deltas_matches_fixtures_and_librosa():
    spec = tensor(FIX["melspec"])
    np.testing.assert_allclose(F.compute_deltas(spec).numpy(), FIX["deltas"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(T.ComputeDeltas(win_length=7)(spec).numpy(), FIX["deltas_w7"], rtol=1e-4, atol=1e-5)
    # librosa.feature.delta (Savitzky-Golay, order 1) with mode="nearest" is the same regression
    ref = librosa.feature.delta(FIX["melspec"][0].astype(np.float64), width=5, order=1, mode="nearest")
    np.testing.assert_allclose(F.compute_deltas(spec).numpy()[0], ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    with pytest.raises(ValueError, match="greater than or equal to 3"):
        F.compute_deltas(spec, win_length=2)


@pytest.mark.parametrize("freq", [110.0, 220.0, 330.0])
def test_detect_pitch_frequency_on_tones(freq):
    sr = 16000
    t = np.arange(sr) / sr
    x = tensor((0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32))
    pitch = F.detect_pitch_frequency(x, sr).numpy()
    # the lag is an integer number of samples: within one sample of the period
    period = sr / freq
    assert np.all(np.abs(pitch[20:-20] - freq) <= freq - sr / (period + 1))


def test_detect_pitch_frequency_matches_torchaudio_fixture():
    np.testing.assert_allclose(F.detect_pitch_frequency(_wave(), SR).numpy(), FIX["pitch"], rtol=1e-5)


def test_mu_law_hand_formula_and_fixtures():
    x = np.linspace(-1, 1, 101, dtype=np.float32)
    got = F.mu_law_encoding(tensor(x), 256).numpy()
    mu = 255.0
    ref = ((np.sign(x) * np.log1p(mu * np.abs(x)) / np.log1p(mu) + 1) / 2 * mu + 0.5).astype(np.int64)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(T.MuLawEncoding()(_wave()).numpy(), FIX["mulaw"])
    dec = T.MuLawDecoding()(ember.arange(256)).numpy()
    np.testing.assert_allclose(dec, FIX["mulaw_decoded"], rtol=1e-6, atol=1e-7)
    assert F.mu_law_encoding(tensor(x), 256).dtype == ember.int64


@pytest.mark.parametrize("shape", ["linear", "logarithmic", "exponential", "quarter_sine", "half_sine"])
def test_fade_matches_fixtures(shape):
    got = T.Fade(1000, 1500, shape)(_wave()).numpy()
    np.testing.assert_allclose(got, FIX[f"fade_{shape}"], rtol=1e-5, atol=1e-7)


def test_fade_linear_by_hand_and_errors():
    got = T.Fade(fade_in_len=5, fade_out_len=3)(ember.ones(10)).numpy()
    np.testing.assert_allclose(got, [0, 0.25, 0.5, 0.75, 1, 1, 1, 1, 0.5, 0], atol=1e-7)
    with pytest.raises(ValueError, match="fade_shape"):
        T.Fade(fade_shape="cubic")


def test_vol():
    x = _wave()
    np.testing.assert_allclose(T.Vol(6.0, "db")(x).numpy(), FIX["vol_db"], rtol=1e-6)
    np.testing.assert_allclose(T.Vol(3.0, "power")(x).numpy(), FIX["vol_power"], rtol=1e-6)
    np.testing.assert_allclose(T.Vol(0.5)(x).numpy(), FIX["wave"] * 0.5, rtol=1e-7)
    assert float(T.Vol(100.0)(x).abs().max()) == 1.0
    with pytest.raises(ValueError, match="positive"):
        T.Vol(-1.0)


def test_add_noise_reaches_the_snr_and_matches_fixture():
    x, noise = _wave(), tensor(FIX["noise"])
    L = FIX["wave"].shape[-1]
    got = F.add_noise(x, noise, ember.tensor([10.0]), ember.tensor([L - 100]))
    np.testing.assert_allclose(got.numpy(), FIX["add_noise"], rtol=1e-5, atol=1e-6)
    out = T.AddNoise()(x, noise, ember.tensor([5.0])).numpy()
    added = out - FIX["wave"]
    snr = 10 * math.log10(np.sum(FIX["wave"] ** 2) / np.sum(added ** 2))
    assert abs(snr - 5.0) < 1e-3
    with pytest.raises(ValueError, match="leading dimensions"):
        F.add_noise(x, noise, ember.tensor(5.0))
    with pytest.raises(ValueError, match="Length dimensions"):
        F.add_noise(x, noise[..., :-1], ember.tensor([5.0]))


def test_masking_shapes_widths_and_values():
    ember.manual_seed(0)
    spec = ember.ones(3, 2, 40, 100)
    for _ in range(20):
        out = T.FrequencyMasking(freq_mask_param=10)(spec, mask_value=-1.0).numpy()
        masked_rows = (out == -1.0).all(axis=-1)  # whole frequency rows
        assert masked_rows.sum(-1).max() < 10
        assert (masked_rows == masked_rows[0, 0]).all()  # one mask shared by all examples
        out = T.TimeMasking(time_mask_param=30, p=0.1)(spec).numpy()
        masked_cols = (out == 0).all(axis=-2)
        assert masked_cols.sum(-1).max() <= 10  # p caps the width at 10% of 100 frames
    widths = set()
    for _ in range(20):
        out = T.TimeMasking(time_mask_param=30, iid_masks=True)(spec).numpy()
        cols = (out == 0).all(axis=-2)  # [3, 2, 100]
        widths.add(tuple(cols.sum(-1).ravel()))
        assert cols.sum(-1).max() < 30
        for row in cols.reshape(-1, 100):  # each mask is one contiguous band
            idx = np.flatnonzero(row)
            assert len(idx) == 0 or idx[-1] - idx[0] + 1 == len(idx)
    assert any(len(set(w)) > 1 for w in widths)  # iid: examples get different masks
    with pytest.raises(ValueError, match="Only Frequency and Time"):
        F.mask_along_axis(spec, 5, 0.0, axis=1)


def test_masking_keeps_gradients():
    spec = ember.rand(1, 20, 30, requires_grad=True)
    out = T.FrequencyMasking(5)(spec)
    out.sum().backward()
    np.testing.assert_array_equal(spec.grad.numpy(), (out.detach().numpy() != 0).astype(np.float32))


def test_pitch_shift_matches_fixtures_and_moves_a_tone():
    # the phase vocoder accumulates phases in float32 (a cumsum over frames): 3e-4 of a 0.5 peak
    np.testing.assert_allclose(F.pitch_shift(_wave(), SR, 12).numpy(), FIX["pitch_shift_12"], rtol=1e-3, atol=3e-4)
    got = T.PitchShift(SR, -6, bins_per_octave=6, n_fft=256)(_wave()).numpy()
    np.testing.assert_allclose(got, FIX["pitch_shift_-6_6_256"], rtol=1e-3, atol=3e-4)
    sr = 8000
    x = tensor((0.5 * np.sin(2 * np.pi * 440 * np.arange(sr) / sr)).astype(np.float32))
    y = F.pitch_shift(x, sr, 12).numpy()  # one octave up
    assert y.shape == (sr,)
    spectrum = np.abs(np.fft.rfft(y[1000:-1000] * np.hanning(sr - 2000)))
    assert abs(np.argmax(spectrum) * sr / (sr - 2000) - 880) < 8
