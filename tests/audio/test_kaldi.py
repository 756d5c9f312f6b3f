"""compliance.kaldi against torchaudio 2.8's compliance.kaldi (stored in fixtures/kaldi.npz by
fixtures/make_fixtures.py) on a real 8 kHz recording (asterisk's spoken "seven")."""

import os

import numpy as np
import pytest
from _audio_helpers import tensor

import ember
from ember_audio.compliance import kaldi

FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "kaldi.npz"))

CASES = {
    "fbank_default": (kaldi.fbank, dict(sample_frequency=8000, dither=0.0)),
    "fbank_opts": (kaldi.fbank, dict(sample_frequency=8000, dither=0.0, num_mel_bins=40, frame_length=20.0,
                                     frame_shift=8.0, window_type="hamming", use_energy=True, low_freq=50.0,
                                     high_freq=-200.0, snip_edges=False, htk_compat=True, use_power=False,
                                     preemphasis_coefficient=0.9, remove_dc_offset=False, subtract_mean=True)),
    "fbank_hanning": (kaldi.fbank, dict(sample_frequency=8000, dither=0.0, window_type="hanning",
                                        round_to_power_of_two=False, use_log_fbank=False, raw_energy=False,
                                        use_energy=True, energy_floor=0.0)),
    "fbank_vtln": (kaldi.fbank, dict(sample_frequency=8000, dither=0.0, vtln_warp=0.9, num_mel_bins=20,
                                     window_type="blackman", blackman_coeff=0.42)),
    "mfcc_default": (kaldi.mfcc, dict(sample_frequency=8000, dither=0.0)),
    "mfcc_opts": (kaldi.mfcc, dict(sample_frequency=8000, dither=0.0, num_ceps=20, num_mel_bins=30,
                                   cepstral_lifter=0.0, use_energy=True, htk_compat=True, snip_edges=False,
                                   window_type="rectangular")),
    "spectrogram_default": (kaldi.spectrogram, dict(sample_frequency=8000, dither=0.0)),
    "spectrogram_opts": (kaldi.spectrogram, dict(sample_frequency=8000, dither=0.0, snip_edges=False,
                                                 raw_energy=False, window_type="hanning", subtract_mean=True)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torchaudio(name):
    fn, kw = CASES[name]
    got = fn(tensor(FIX["wave"]), **kw).numpy()
    ref = FIX[name]
    assert got.shape == ref.shape
    # log-domain features: absolute error; linear fbank (fbank_hanning): relative
    if name == "fbank_hanning":
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6 * np.abs(ref).max())
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3)


def test_fixture_versions_are_pinned():
    torch_v, torchaudio_v = (str(v) for v in FIX["versions"][:2])
    assert torch_v.startswith("torch==2.8.0") and torchaudio_v.startswith("torchaudio==2.8.0")


def test_fbank_is_differentiable_and_checks_options():
    x = ember.tensor(FIX["wave"][:, :2000].astype(np.float64), requires_grad=True)
    kaldi.fbank(x, sample_frequency=8000).sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0
    with pytest.raises(ValueError, match="window type"):
        kaldi.fbank(tensor(FIX["wave"]), sample_frequency=8000, window_type="sine")
    with pytest.raises(ValueError, match="num_ceps"):
        kaldi.mfcc(tensor(FIX["wave"]), sample_frequency=8000, num_ceps=30)
    with pytest.raises(ValueError, match="high-freq"):
        kaldi.fbank(tensor(FIX["wave"]), sample_frequency=8000, high_freq=6000.0)
