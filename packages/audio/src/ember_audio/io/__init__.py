"""Audio io through soundfile: load, save, info, and StreamReader for chunked reading."""

from ._soundfile import AudioMetaData, info, load, save
from ._stream_reader import StreamReader

__all__ = ["AudioMetaData", "StreamReader", "info", "load", "save"]
