"""Models: Wav2Letter and Conv-TasNet (torchaudio's layouts), M5 and a small MFCC keyword-spotting CNN, CTC decoders."""

from . import decoder
from .conv_tasnet import ConvTasNet, conv_tasnet_base
from .m5 import M5, KWSNet
from .wav2letter import Wav2Letter

__all__ = ["ConvTasNet", "KWSNet", "M5", "Wav2Letter", "conv_tasnet_base", "decoder"]
