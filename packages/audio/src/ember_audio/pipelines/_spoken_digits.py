"""The spoken-digit classifier bundle: KWSNet trained by ``examples/audio/train_spoken_digits.py``
on the ten digit recordings of Debian's asterisk-core-sounds-en-wav (one voice, one take each,
8 kHz) with on-the-fly augmentation.  The weights ship inside the package: no network."""

from __future__ import annotations

import os

import ember
from ember import nn

from ..models import KWSNet
from ..transforms import MFCC

__all__ = ["SpokenDigitFeatures", "SpokenDigitBundle", "SPOKEN_DIGITS_KWS"]

LABELS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_WEIGHTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "models", "weights", "spoken_digits_kws.pt")


class SpokenDigitFeatures(nn.Module):
    """Waveform ``[..., time]`` at 8 kHz -> model input ``[..., 1, 20, 101]``: centred and
    zero-padded (or centre-cropped) to ``duration`` seconds, 20 MFCCs (n_fft 256, hop 80, 40 HTK
    mels from 50 Hz), each coefficient normalized to zero mean and unit variance over the clip
    (cepstral mean and variance normalization).  ``sample_rate`` (Hz) is the input's and the
    MFCC's; the filter settings are fixed, so 101 frames per clip hold for the default 8 kHz and
    1 s only.  An ember pipeline (no torchaudio counterpart)."""

    def __init__(self, sample_rate=8000, duration=1.0):
        super().__init__()
        self.sample_rate = sample_rate
        self.num_samples = int(sample_rate * duration)
        self.mfcc = MFCC(sample_rate=sample_rate, n_mfcc=20,
                         melkwargs=dict(n_fft=256, hop_length=80, n_mels=40, f_min=50.0))

    def fit_length(self, waveform):
        n = waveform.shape[-1]
        if n >= self.num_samples:
            start = (n - self.num_samples) // 2
            return waveform[..., start:start + self.num_samples]
        left = (self.num_samples - n) // 2
        return nn.functional.pad(waveform, (left, self.num_samples - n - left))

    def forward(self, waveform):
        # one channel axis per clip: the decibel floor (``top_db``) of a 3-d or larger
        # spectrogram is taken per leading item, so each clip of a batch keeps its own
        feats = self.mfcc(self.fit_length(waveform).unsqueeze(-2)).squeeze(-3)
        mean = feats.mean(-1, keepdim=True)
        std = feats.std(-1, keepdim=True)
        return ((feats - mean) / (std + 1e-5)).unsqueeze(-3)


class SpokenDigitBundle:
    """A torchaudio-style pipeline bundle: ``sample_rate`` (Hz), ``get_labels()``, ``get_features()``
    (a ``SpokenDigitFeatures``) and ``get_model()`` (a ``KWSNet`` in eval mode with the packaged
    weights; its outputs are logits ``[batch, 10]`` over ``get_labels()``).  ``weights_path``: the
    state_dict file ``get_model`` loads (default the packaged one); ``get_model`` raises
    FileNotFoundError when it is missing."""

    sample_rate = 8000

    def __init__(self, weights_path=_WEIGHTS):
        self._path = weights_path

    def get_labels(self):
        return LABELS

    def get_features(self):
        return SpokenDigitFeatures(self.sample_rate)

    def get_model(self):
        if not os.path.exists(self._path):
            raise FileNotFoundError(f"the bundle's weights are missing: {self._path!r} (train them with "
                                    f"examples/audio/train_spoken_digits.py)")
        model = KWSNet(n_classes=len(LABELS))
        model.load_state_dict(ember.load(self._path, weights_only=True))
        return model.eval()


SPOKEN_DIGITS_KWS = SpokenDigitBundle()
