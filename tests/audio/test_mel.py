"""Mel filter banks, MelSpectrogram, MFCC, LFCC, AmplitudeToDB, InverseMelScale and the Whisper
preset against independent references: librosa 0.11 (options that match stated in each test),
numpy/scipy formulas, and transformers' WhisperFeatureExtractor.  Real speech from espeak-ng."""

import warnings

import librosa
import numpy as np
import pytest
import scipy.fft
from _audio_helpers import tensor

import ember
from ember_audio import functional as F
from ember_audio import transforms as T


def _close(got, ref, rtol=1e-4):
    """Within ``rtol`` relative, with an absolute floor of rtol times the reference's peak (values
    near zero have no meaningful relative error)."""
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


@pytest.mark.parametrize("mel_scale,norm,htk,lnorm", [("htk", None, True, None), ("slaney", "slaney", False, "slaney"),
                                                      ("htk", "slaney", True, "slaney"), ("slaney", None, False, None)])
@pytest.mark.parametrize("sr,n_fft,n_mels,fmin,fmax", [(16000, 400, 80, 0.0, 8000.0), (22050, 1024, 64, 50.0, 9000.0)])
def test_melscale_fbanks_match_librosa(mel_scale, norm, htk, lnorm, sr, n_fft, n_mels, fmin, fmax):
    # torchaudio mel_scale="htk" <-> librosa htk=True; "slaney" <-> htk=False; norm passes through
    fb = F.melscale_fbanks(n_fft // 2 + 1, fmin, fmax, n_mels, sr, norm=norm, mel_scale=mel_scale).numpy()
    ref = librosa.filters.mel(sr=sr, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax, htk=htk, norm=lnorm,
                              dtype=np.float64).T
    assert fb.shape == ref.shape and fb.dtype == np.float32
    _close(fb, ref)


def test_melscale_fbanks_errors_and_warning():
    with pytest.raises(ValueError, match="mel_scale"):
        F.melscale_fbanks(201, 0, 8000, 40, 16000, mel_scale="bark")
    with pytest.raises(ValueError, match="norm"):
        F.melscale_fbanks(201, 0, 8000, 40, 16000, norm="l2")
    with pytest.warns(UserWarning, match="all zero"):
        F.melscale_fbanks(33, 0, 8000, 128, 16000)
    with pytest.raises(ValueError, match="f_min"):
        T.MelScale(f_min=9000.0, sample_rate=16000)


@pytest.mark.parametrize("kwargs,lib", [
    # librosa.feature.melspectrogram: center=True, pad_mode="reflect" (torchaudio's default), htk, no norm
    (dict(n_fft=400, hop_length=160, n_mels=80, mel_scale="htk"), dict(htk=True, norm=None, pad_mode="reflect")),
    # slaney scale and norm (librosa's defaults), pad_mode="constant" (librosa's default pad)
    (dict(n_fft=512, hop_length=128, n_mels=64, mel_scale="slaney", norm="slaney", pad_mode="constant"),
     dict(htk=False, norm="slaney", pad_mode="constant")),
    # center=False, magnitude (power=1), a shorter window inside n_fft, f_min/f_max
    (dict(n_fft=512, win_length=400, hop_length=160, n_mels=40, f_min=60.0, f_max=7000.0, power=1.0, center=False),
     dict(htk=True, norm=None, center=False, fmin=60.0, fmax=7000.0, power=1.0, win_length=400)),
])
def test_melspectrogram_matches_librosa(speech_16k, kwargs, lib):
    data, sr = speech_16k
    got = T.MelSpectrogram(sample_rate=sr, **kwargs)(tensor(data)).numpy()
    lib = {"center": True, "power": 2.0, **lib}
    ref = librosa.feature.melspectrogram(y=data, sr=sr, n_fft=kwargs["n_fft"], hop_length=kwargs["hop_length"],
                                         n_mels=kwargs["n_mels"], window="hann", **lib)
    assert got.shape == ref.shape
    _close(got, ref)


@pytest.mark.parametrize("n_mfcc,norm,mel_scale", [(13, "ortho", "htk"), (20, "ortho", "slaney"), (40, None, "htk")])
def test_mfcc_matches_librosa(speech_16k, n_mfcc, norm, mel_scale):
    # librosa.feature.mfcc = DCT-II (scipy, same norm) of power_to_db(ref=1, amin=1e-10, top_db=80),
    # which is torchaudio's AmplitudeToDB("power", top_db=80); the mel options as above.
    data, sr = speech_16k
    mel = dict(n_fft=400, hop_length=160, n_mels=64, mel_scale=mel_scale, norm="slaney" if mel_scale == "slaney"
               else None)
    got = T.MFCC(sample_rate=sr, n_mfcc=n_mfcc, norm=norm, melkwargs=mel)(tensor(data)).numpy()
    S = librosa.feature.melspectrogram(y=data, sr=sr, n_fft=400, hop_length=160, n_mels=64, pad_mode="reflect",
                                       htk=mel_scale == "htk", norm=mel["norm"])
    ref = librosa.feature.mfcc(S=librosa.power_to_db(S, ref=1.0, amin=1e-10, top_db=80.0), n_mfcc=n_mfcc,
                               dct_type=2, norm=norm)
    _close(got, ref, rtol=2e-4)


def test_mfcc_log_mels_and_errors(speech_16k):
    data, sr = speech_16k
    m = T.MFCC(sample_rate=sr, n_mfcc=13, log_mels=True, melkwargs=dict(n_fft=400, hop_length=160, n_mels=40))
    S = librosa.feature.melspectrogram(y=data, sr=sr, n_fft=400, hop_length=160, n_mels=40, htk=True, norm=None,
                                       pad_mode="reflect")
    ref = scipy.fft.dct(np.log(S + 1e-6), axis=-2, type=2, norm="ortho")[:13]
    _close(m(tensor(data)).numpy(), ref)
    with pytest.raises(ValueError, match="DCT type"):
        T.MFCC(dct_type=3)
    with pytest.raises(ValueError, match="more MFCC"):
        T.MFCC(n_mfcc=200)
    assert sorted(m.state_dict()) == ["MelSpectrogram.mel_scale.fb", "MelSpectrogram.spectrogram.window", "dct_mat"]


def test_create_dct_is_scipy_dct_matrix():
    for norm in (None, "ortho"):
        got = F.create_dct(13, 40, norm).numpy()
        ref = scipy.fft.dct(np.eye(40), type=2, norm=norm, axis=0)[:13].T
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)  # float32 cosines, as torchaudio


def test_lfcc_matches_numpy_pipeline(speech_16k):
    # spectrogram (librosa.stft), linear triangles written out here, dB with an 80 dB floor, DCT-II
    data, sr = speech_16k
    got = T.LFCC(sample_rate=sr, n_filter=64, n_lfcc=20, speckwargs=dict(n_fft=512, hop_length=160))(tensor(data))
    spec = np.abs(librosa.stft(data, n_fft=512, hop_length=160, pad_mode="reflect")) ** 2
    freqs = np.linspace(0, sr // 2, 257)
    pts = np.linspace(0, sr / 2, 66)
    fb = np.zeros((257, 64))
    for i in range(64):
        lo, c, hi = pts[i], pts[i + 1], pts[i + 2]
        fb[:, i] = np.maximum(0, np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)))
    db = 10 * np.log10(np.maximum(fb.T @ spec, 1e-10))
    db = np.maximum(db, db.max() - 80)
    ref = scipy.fft.dct(db, axis=0, type=2, norm="ortho")[:20]
    _close(got.numpy(), ref, rtol=2e-4)


@pytest.mark.parametrize("stype,top_db", [("power", None), ("power", 80.0), ("magnitude", 60.0)])
def test_amplitude_to_db_matches_librosa(speech_16k, stype, top_db):
    data, _ = speech_16k
    S = np.abs(librosa.stft(data[:16000], n_fft=400)) ** (2 if stype == "power" else 1)
    got = T.AmplitudeToDB(stype, top_db)(tensor(S.astype(np.float32))).numpy()
    if stype == "power":
        ref = librosa.power_to_db(S, ref=1.0, amin=1e-10, top_db=top_db)
    else:
        ref = librosa.amplitude_to_db(S, ref=1.0, amin=1e-5, top_db=top_db)  # 20 log10 max(S, 1e-5) = 10 log10 S^2
        ref = np.maximum(ref, 20 * np.log10(np.maximum(S, 1e-10)))  # torchaudio's amin is 1e-10 for both
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-3)
    back = F.DB_to_amplitude(tensor(got), 1.0, 1.0 if stype == "power" else 0.5).numpy()
    keep = (got > got.max() - (top_db or 1e9) + 1e-3) & (S > 1e-9)  # above the floors: exact inverse
    np.testing.assert_allclose(back[keep], S[keep], rtol=1e-4)
    with pytest.raises(ValueError, match="top_db"):
        T.AmplitudeToDB(top_db=-1.0)


def test_amplitude_to_db_floors_each_example_of_a_batch():
    x = ember.tensor([[[[1.0, 1e-6]]], [[[1e-4, 1e-9]]]])  # [2, 1, 1, 2]
    got = F.amplitude_to_DB(x, 10.0, 1e-10, 0.0, top_db=40.0).numpy().reshape(2, 2)
    np.testing.assert_allclose(got, [[0.0, -40.0], [-40.0, -80.0]], atol=1e-4)


def test_inverse_melscale_least_squares(speech_16k):
    data, sr = speech_16k
    spec = T.Spectrogram(n_fft=256, hop_length=128)(tensor(data[:8000]))
    mel = T.MelScale(n_mels=32, sample_rate=sr, n_stft=129)(spec)
    inv = T.InverseMelScale(n_stft=129, n_mels=32, sample_rate=sr)(mel).numpy()
    fb = F.melscale_fbanks(129, 0.0, sr / 2, 32, sr).numpy().astype(np.float64)
    ref = np.maximum(np.linalg.lstsq(fb.T, mel.numpy().astype(np.float64), rcond=None)[0], 0)
    assert inv.shape == (129, spec.shape[-1])
    np.testing.assert_allclose(inv, ref, rtol=1e-3, atol=1e-3 * ref.max())
    with pytest.raises(ValueError, match="driver"):
        T.InverseMelScale(n_stft=129, driver="qr")
    with pytest.raises(ValueError, match="32 mel bins"):
        T.InverseMelScale(n_stft=129, n_mels=32)(mel[:10])


@pytest.mark.parametrize("n_mels", [80, 128])
def test_whisper_preset_matches_transformers(speech_16k, n_mels):
    from transformers import WhisperFeatureExtractor
    data, sr = speech_16k
    fe = WhisperFeatureExtractor(feature_size=n_mels)
    ref = fe(data, sampling_rate=sr, return_tensors="np")["input_features"][0]  # pads to 30 s
    padded = np.zeros(480000, np.float32)
    padded[:len(data)] = data
    got = T.WhisperLogMelSpectrogram(n_mels=n_mels)(tensor(padded)).numpy()
    assert got.shape == ref.shape == (n_mels, 3000)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=2e-4)


def test_melspectrogram_gradient_matches_finite_differences():
    ember.manual_seed(0)
    x = ember.randn(300, dtype=ember.float64, requires_grad=True)
    m = T.MelSpectrogram(sample_rate=8000, n_fft=64, n_mels=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = m.to(ember.float64)
    assert ember.autograd.gradcheck(lambda t: m(t), (x,), eps=1e-6, atol=1e-5)
