"""Wav2Letter (Collobert, Puhrsch & Synnaeve, "Wav2Letter: an End-to-End ConvNet-based Speech
Recognition System", 2016), with torchaudio 2.8's layout and state_dict keys."""

from __future__ import annotations

from ember import nn

__all__ = ["Wav2Letter"]


def _conv(cin, cout, k, s, p):
    return [nn.Conv1d(cin, cout, kernel_size=k, stride=s, padding=p), nn.ReLU(inplace=True)]


class Wav2Letter(nn.Module):
    """``[batch, num_features, time]`` -> log-probabilities ``[batch, num_classes, frames]``
    (log_softmax over classes, for CTC).  ``input_type``: "waveform" (a strided conv front end,
    250-sample windows every 160 samples), "power_spectrum" or "mfcc" (``num_features`` bins).
    ``num_classes``: output classes, the CTC blank included.  Raises ValueError for another input
    type.  Source: Collobert et al., 2016, arXiv:1609.03193; torchaudio 2.8 ``models.Wav2Letter``."""

    def __init__(self, num_classes: int = 40, input_type: str = "waveform", num_features: int = 1) -> None:
        super().__init__()
        if input_type not in ("waveform", "power_spectrum", "mfcc"):
            raise ValueError(f"input_type must be 'waveform', 'power_spectrum' or 'mfcc', got {input_type!r}")
        acoustic_in = 250 if input_type == "waveform" else num_features
        layers = _conv(acoustic_in, 250, 48, 2, 23)
        for _ in range(7):
            layers += _conv(250, 250, 7, 1, 3)
        layers += _conv(250, 2000, 32, 1, 16) + _conv(2000, 2000, 1, 1, 0) + _conv(2000, num_classes, 1, 1, 0)
        acoustic = nn.Sequential(*layers)
        if input_type == "waveform":
            self.acoustic_model = nn.Sequential(nn.Sequential(*_conv(num_features, 250, 250, 160, 45)), acoustic)
        else:
            self.acoustic_model = acoustic

    def forward(self, x):
        return nn.functional.log_softmax(self.acoustic_model(x), dim=1)
