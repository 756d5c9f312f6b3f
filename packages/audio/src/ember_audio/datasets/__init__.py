"""Audio datasets read from local folders or downloaded with checksums (torchaudio.datasets' names)."""

from .folder import AudioFolder, pad_collate
from .librispeech import LIBRISPEECH
from .speechcommands import SPEECHCOMMANDS
from .utils import download_url, extract_archive
from .yesno import YESNO

__all__ = ["AudioFolder", "LIBRISPEECH", "SPEECHCOMMANDS", "YESNO", "download_url", "extract_archive",
           "pad_collate"]
