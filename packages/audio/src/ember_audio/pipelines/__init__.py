"""Pretrained pipeline bundles (torchaudio.pipelines' style): ``get_model()``, ``sample_rate``,
``get_labels()``; weights ship inside the package."""

from ._spoken_digits import SPOKEN_DIGITS_KWS, SpokenDigitBundle, SpokenDigitFeatures

__all__ = ["SPOKEN_DIGITS_KWS", "SpokenDigitBundle", "SpokenDigitFeatures"]
