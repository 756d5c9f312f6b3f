"""Feature extraction that matches other toolkits' outputs (torchaudio.compliance)."""

from . import kaldi

__all__ = ["kaldi"]
