"""load / save / info through soundfile (libsndfile bundled in its wheels: no FFmpeg, no sox).

Semantics follow torchaudio 2.8's soundfile backend (``torchaudio.load``/``save``/``info``):
waveforms are ``[channels, frames]`` (``channels_first=True``) and sample rates are in Hz.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import numpy as np

import ember

__all__ = ["AudioMetaData", "load", "save", "info"]

# Bits per sample of each libsndfile subtype; 0 where it does not apply (lossy or ADPCM codecs).
_SUBTYPE_TO_BITS = {
    "PCM_S8": 8, "PCM_U8": 8, "PCM_16": 16, "PCM_24": 24, "PCM_32": 32, "FLOAT": 32, "DOUBLE": 64,
    "ULAW": 8, "ALAW": 8, "IMA_ADPCM": 0, "MS_ADPCM": 0, "GSM610": 0, "VOX_ADPCM": 0, "G721_32": 0,
    "G723_24": 0, "G723_40": 0, "DWVW_12": 12, "DWVW_16": 16, "DWVW_24": 24, "VORBIS": 0, "OPUS": 0,
    "MPEG_LAYER_I": 0, "MPEG_LAYER_II": 0, "MPEG_LAYER_III": 0,
}
_SUBTYPE_TO_ENCODING = {
    "PCM_S8": "PCM_S", "PCM_16": "PCM_S", "PCM_24": "PCM_S", "PCM_32": "PCM_S", "PCM_U8": "PCM_U",
    "FLOAT": "PCM_F", "DOUBLE": "PCM_F", "ULAW": "ULAW", "ALAW": "ALAW", "VORBIS": "VORBIS", "OPUS": "OPUS",
    "MPEG_LAYER_III": "MP3",
}
# Container formats by the name torchaudio takes (file extension or ``format=``).
_FORMATS = {"wav": "WAV", "flac": "FLAC", "ogg": "OGG", "vorbis": "OGG", "mp3": "MP3", "sph": "NIST",
            "aiff": "AIFF", "aif": "AIFF", "au": "AU", "w64": "W64", "caf": "CAF", "opus": "OGG"}


@dataclass
class AudioMetaData:
    """What ``info`` reports (torchaudio.AudioMetaData).

    Args:
        sample_rate: in Hz.
        num_frames: samples per channel.
        num_channels: channel count.
        bits_per_sample: bits of one sample; 0 for lossy or ADPCM codecs.
        encoding: "PCM_S", "PCM_U", "PCM_F", "ULAW", "ALAW", "FLAC", "VORBIS", "OPUS", "MP3"
            or "UNKNOWN".
    """

    sample_rate: int
    num_frames: int
    num_channels: int
    bits_per_sample: int
    encoding: str


def _sf():
    import soundfile
    return soundfile


def _name(uri) -> str:
    if isinstance(uri, (str, os.PathLike)):
        return os.fspath(uri)
    return getattr(uri, "name", None) or f"<{type(uri).__name__} object>"


def _format_name(format):
    if format is None:
        return None
    key = format.lower()
    if key not in _FORMATS:
        raise ValueError(f"unsupported format {format!r}: expected one of {sorted(_FORMATS)}")
    return _FORMATS[key]


def _open(uri, format):
    """A soundfile.SoundFile for reading, with errors that name the file and what was found."""
    sf = _sf()
    if isinstance(uri, (str, os.PathLike)) and not os.path.exists(uri):
        raise FileNotFoundError(f"no such audio file: {_name(uri)!r}")
    _format_name(format)  # validated; libsndfile tells containers apart from their headers
    try:
        return sf.SoundFile(uri, "r")
    except sf.LibsndfileError as e:
        head = _peek(uri)
        raise RuntimeError(f"failed to open audio file {_name(uri)!r}: {e.error_string} "
                           f"(first bytes {head!r}; readable formats: wav, flac, ogg/vorbis"
                           f"{', mp3' if 'MP3' in sf.available_formats() else ''} and the rest of libsndfile's)"
                           ) from None


def _peek(uri) -> bytes:
    try:
        if isinstance(uri, (str, os.PathLike)):
            with open(uri, "rb") as f:
                return f.read(12)
        pos = uri.tell()
        head = uri.read(12)
        uri.seek(pos)
        return bytes(head)
    except Exception:
        return b""


def _check_backend(backend):
    if backend not in (None, "soundfile"):
        raise ValueError(f"backend {backend!r} is not available: ember_audio reads and writes through "
                         f"'soundfile' only (no FFmpeg, no sox)")


def info(uri, format=None, buffer_size=4096, backend=None) -> AudioMetaData:
    """The metadata of the audio file ``uri`` (a path or a file-like object) without decoding it,
    as an :class:`AudioMetaData`.

    ``format`` is validated (one of wav, flac, ogg, vorbis, mp3, sph, aiff, au, w64, caf,
    opus; libsndfile tells containers apart from their headers); ``buffer_size`` is accepted
    for torchaudio's signature and unused; ``backend`` must be None or "soundfile" (ValueError
    otherwise).

    Raises FileNotFoundError for a missing path, RuntimeError naming the file for an
    unreadable or corrupt one.  Source: torchaudio 2.8 ``torchaudio.info`` (soundfile backend).
    """
    _check_backend(backend)
    with _open(uri, format) as f:
        subtype = f.subtype
        encoding = "FLAC" if f.format == "FLAC" else _SUBTYPE_TO_ENCODING.get(subtype, "UNKNOWN")
        return AudioMetaData(sample_rate=f.samplerate, num_frames=f.frames, num_channels=f.channels,
                             bits_per_sample=_SUBTYPE_TO_BITS.get(subtype, 0), encoding=encoding)


def _native_dtype(subtype: str):
    """The integer dtype ``normalize=False`` returns for a PCM wav subtype (None: float32)."""
    return {"PCM_U8": "uint8", "PCM_S8": "int8", "PCM_16": "int16", "PCM_24": "int32", "PCM_32": "int32",
            "FLOAT": "float32", "DOUBLE": "float64"}.get(subtype)


def _read(f, frames: int, normalize: bool) -> np.ndarray:
    """``frames`` frames from an open SoundFile as ``[frames, channels]``."""
    dtype = None if normalize or f.format != "WAV" else _native_dtype(f.subtype)
    if dtype is None or dtype == "float32":
        return f.read(frames, dtype="float32", always_2d=True)
    if dtype in ("uint8", "int8"):
        # libsndfile reads 8-bit PCM only into int16 (left-justified); shift back to 8 bits.
        data = f.read(frames, dtype="int16", always_2d=True) >> 8
        return (data + 128).astype(np.uint8) if dtype == "uint8" else data.astype(np.int8)
    # 24-bit PCM comes back left-justified in int32, as torchaudio's FFmpeg path returns it.
    return f.read(frames, dtype=dtype, always_2d=True)


def load(uri, frame_offset=0, num_frames=-1, normalize=True, channels_first=True, format=None,
         buffer_size=4096, backend=None):
    """Decode an audio file into ``(waveform, sample_rate)``.

    Args:
        uri: a path (str or os.PathLike) or a readable, seekable file-like object.
        frame_offset: frames to skip from the start.
        num_frames: frames to read; -1 reads to the end (fewer come back at the end of the file).
        normalize: True gives float32 in [-1, 1]; False keeps integer PCM wav samples in their
            native dtype (uint8, int16, int32 for 24- and 32-bit, left-justified); other
            formats always come back as float32.
        channels_first: ``[channels, frames]`` when True, ``[frames, channels]`` when False.
        format: the container ("wav", "flac", "ogg", ...), validated; libsndfile reads the
            container from the data's header.
        buffer_size: accepted for torchaudio's signature; unused.
        backend: None or "soundfile" (ValueError otherwise): the only backend.

    Returns:
        ``(Tensor [channels, frames], int sample rate in Hz)``.

    Raises:
        FileNotFoundError: a missing path.
        RuntimeError: an unreadable or corrupt file (the message names it).
        ValueError: bad arguments.

    Source: torchaudio 2.8 ``torchaudio.load``.
    """
    _check_backend(backend)
    if frame_offset < 0:
        raise ValueError(f"frame_offset must be non-negative, got {frame_offset}")
    if num_frames == 0 or num_frames < -1:
        raise ValueError(f"num_frames must be -1 or positive, got {num_frames}")
    with _open(uri, format) as f:
        if frame_offset:
            f.seek(min(frame_offset, f.frames))
        try:
            data = _read(f, num_frames, normalize)
        except _sf().LibsndfileError as e:
            raise RuntimeError(f"failed to decode audio file {_name(uri)!r}: {e.error_string}") from None
        sample_rate = f.samplerate
    arr = np.ascontiguousarray(data.T if channels_first else data)
    return ember.from_numpy(arr), sample_rate


_DTYPE_TO_SUBTYPE = {"uint8": "PCM_U8", "int16": "PCM_16", "int32": "PCM_32", "float32": "FLOAT", "float64": "DOUBLE"}


def _wav_subtype(dtype: str, encoding, bits_per_sample):
    if not encoding:
        if not bits_per_sample:
            if dtype not in _DTYPE_TO_SUBTYPE:
                raise ValueError(f"unsupported dtype for wav: {dtype} (expected uint8, int16, int32, float32 or "
                                 f"float64)")
            return _DTYPE_TO_SUBTYPE[dtype]
        if bits_per_sample == 8:
            return "PCM_U8"
        if bits_per_sample not in (16, 24, 32):
            raise ValueError(f"wav does not support bits_per_sample={bits_per_sample} (expected 8, 16, 24 or 32)")
        return f"PCM_{bits_per_sample}"
    if encoding == "PCM_S":
        if not bits_per_sample:
            return "PCM_32"
        if bits_per_sample == 8:
            raise ValueError("wav does not support 8-bit signed PCM encoding.")
        if bits_per_sample not in (16, 24, 32):
            raise ValueError(f"wav does not support bits_per_sample={bits_per_sample} with PCM_S")
        return f"PCM_{bits_per_sample}"
    if encoding == "PCM_U":
        if bits_per_sample in (None, 8):
            return "PCM_U8"
        raise ValueError("wav only supports 8-bit unsigned PCM encoding.")
    if encoding == "PCM_F":
        if bits_per_sample in (None, 32):
            return "FLOAT"
        if bits_per_sample == 64:
            return "DOUBLE"
        raise ValueError("wav only supports 32/64-bit float PCM encoding.")
    if encoding in ("ULAW", "ALAW"):
        if bits_per_sample in (None, 8):
            return encoding
        raise ValueError(f"wav only supports 8-bit {encoding} encoding.")
    raise ValueError(f"wav does not support {encoding}.")


def _subtype(fmt: str, dtype: str, encoding, bits_per_sample):
    if fmt == "WAV":
        return _wav_subtype(dtype, encoding, bits_per_sample)
    if fmt == "FLAC":
        if encoding:
            raise ValueError("flac does not support encoding.")
        if not bits_per_sample:
            return "PCM_16"
        if bits_per_sample not in (8, 16, 24):
            raise ValueError(f"flac does not support bits_per_sample={bits_per_sample} (expected 8, 16 or 24)")
        return "PCM_S8" if bits_per_sample == 8 else f"PCM_{bits_per_sample}"
    if fmt == "OGG":
        if encoding not in (None, "VORBIS", "OPUS"):
            raise ValueError(f"ogg does not support encoding {encoding!r} (expected VORBIS or OPUS)")
        return encoding or "VORBIS"
    if fmt == "MP3":
        return "MPEG_LAYER_III"
    if fmt == "NIST":
        return "PCM_16" if not bits_per_sample else ("PCM_S8" if bits_per_sample == 8 else f"PCM_{bits_per_sample}")
    return _wav_subtype(dtype, encoding, bits_per_sample)


def save(uri, src, sample_rate, channels_first=True, format=None, encoding=None, bits_per_sample=None,
         buffer_size=4096, backend=None, compression=None):
    """Encode ``src`` (``[channels, frames]``, or ``[frames, channels]`` with
    ``channels_first=False``) into wav, flac, ogg/vorbis (and mp3 where the bundled libsndfile
    has it) at ``sample_rate`` Hz.

    The wav subtype follows the dtype when neither ``encoding`` nor ``bits_per_sample`` is
    given (uint8 -> PCM_U8, int16 -> PCM_16, int32 -> PCM_32, float32 -> FLOAT, float64 ->
    DOUBLE); flac defaults to 16 bits.  Float input is expected in [-1, 1].  A path is written
    to a temporary name in the same folder and renamed, so a crash never leaves half a file.
    For a file-like object ``format`` is required.

    ``uri`` is a path or a writable file-like object; ``encoding`` ("PCM_S", "PCM_U", "PCM_F",
    "ULAW", "ALAW") and ``bits_per_sample`` pick the subtype; ``buffer_size`` is accepted for
    torchaudio's signature and unused; ``backend`` must be None or "soundfile".
    ``compression`` must be None (libsndfile's default levels are used).

    Raises TypeError for a non-tensor ``src``; ValueError for a bad shape, dtype, format or
    encoding; RuntimeError naming the file when libsndfile refuses to write, or for a file
    object without ``format``.  Source: torchaudio 2.8 ``torchaudio.save``.
    """
    _check_backend(backend)
    if not isinstance(src, ember.Tensor):
        raise TypeError(f"src must be a Tensor, got {type(src).__name__}")
    if src.ndim != 2:
        raise ValueError(f"expected a 2D tensor [channels, frames] (channels_first={channels_first}), "
                         f"got {src.ndim}D with shape {list(src.shape)}")
    is_path = isinstance(uri, (str, os.PathLike))
    if format is None:
        if not is_path:
            raise RuntimeError("`format` is required when saving to a file object.")
        ext = os.path.splitext(os.fspath(uri))[1].lstrip(".")
        if not ext:
            raise ValueError(f"cannot tell the format of {os.fspath(uri)!r}: give format= or an extension")
        format = ext
    fmt = _format_name(format)
    dtype = str(src.dtype).rsplit(".", 1)[-1]
    subtype = _subtype(fmt, dtype, encoding, bits_per_sample)
    sf = _sf()
    if fmt not in sf.available_formats():
        raise RuntimeError(f"the bundled libsndfile cannot write {format!r} "
                           f"(available: {sorted(sf.available_formats())})")
    arr = src.detach().cpu().numpy()
    if channels_first:
        arr = arr.T
    if arr.dtype == np.uint8:
        # soundfile writes no uint8 arrays: centre to int16, which PCM_U8 stores exactly.
        arr = (arr.astype(np.int16) - 128) << 8
    elif arr.dtype == np.int8:
        arr = arr.astype(np.int16) << 8
    elif arr.dtype not in (np.int16, np.int32, np.float32, np.float64):
        raise ValueError(f"unsupported dtype {dtype}: expected uint8, int8, int16, int32, float32 or float64")
    arr = np.ascontiguousarray(arr)
    kwargs = {}
    if compression is not None:
        # libsndfile's scale (0..1) is not torchaudio's per-format one (flac 0..8, vorbis -1..10).
        raise ValueError(f"compression={compression!r} is not supported: ember_audio writes libsndfile's defaults")
    if not is_path:
        _write(uri, arr, sample_rate, subtype, fmt, kwargs)
        return
    path = os.fspath(uri)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.splitext(path)[1], dir=folder)
    os.close(fd)
    try:
        _write(tmp, arr, sample_rate, subtype, fmt, kwargs, name=path)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _write(target, arr, sample_rate, subtype, fmt, kwargs, name=None):
    sf = _sf()
    try:
        sf.write(target, arr, int(sample_rate), subtype=subtype, format=fmt, **kwargs)
    except (sf.LibsndfileError, ValueError, TypeError) as e:
        msg = getattr(e, "error_string", None) or str(e)
        raise RuntimeError(f"failed to write audio file {name or _name(target)!r} as {fmt}/{subtype}: {msg}") from None
