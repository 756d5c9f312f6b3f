"""StreamReader: an audio file decoded chunk by chunk, so a long recording never sits in memory.

The API is torchaudio 2.8's ``torchaudio.io.StreamReader`` for audio: ``add_basic_audio_stream``
/ ``add_audio_stream``, ``stream()``, ``seek``, ``fill_buffer``/``pop_chunks``.  Decoding goes
through soundfile (libsndfile), so it reads the audio files soundfile reads (wav, flac,
ogg/vorbis, mp3 where the bundled libsndfile has it, ...); video streams, devices, network
sources and FFmpeg filter graphs are out of scope (``filter_desc`` other than None raises).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

import ember

from ..functional._resample import _StreamingResampler
from ._soundfile import _SUBTYPE_TO_BITS, _name, _open

__all__ = ["StreamReader", "SourceAudioStream", "OutputAudioStream", "ChunkTensor"]

# torchaudio's sample formats for output streams (planar names as FFmpeg's).
_FORMATS = {"u8": "uint8", "u8p": "uint8", "s16": "int16", "s16p": "int16", "s32": "int32", "s32p": "int32",
            "s64": "int64", "s64p": "int64", "flt": "float32", "fltp": "float32", "dbl": "float64",
            "dblp": "float64"}


@dataclass
class SourceAudioStream:
    """The source stream's description (torchaudio.io.StreamReader.SourceAudioStream)."""

    media_type: str
    codec: str
    codec_long_name: str
    format: str
    bit_rate: int
    num_frames: int
    bits_per_sample: int
    metadata: dict = field(default_factory=dict)
    sample_rate: float = 0.0
    num_channels: int = 0


@dataclass
class OutputAudioStream:
    """An output stream's configuration (torchaudio.io.StreamReader.OutputAudioStream)."""

    source_index: int
    filter_description: str
    media_type: str
    format: str
    sample_rate: float
    num_channels: int


class ChunkTensor(ember.Tensor):
    """A chunk ``[frames, channels]``: a Tensor with ``pts``, the time of its first frame in
    seconds (torchaudio.io.StreamReader's ChunkTensor).  Results of ops on it are plain Tensors."""

    __slots__ = ("pts",)

    @classmethod
    def _wrap(cls, t, pts):
        c = object.__new__(cls)
        for name in ember.Tensor.__slots__:
            if name != "__weakref__":
                try:
                    setattr(c, name, getattr(t, name))
                except AttributeError:  # a slot left unset on the source tensor
                    pass
        c.pts = pts
        return c


class _Output:
    def __init__(self, frames_per_chunk, buffer_chunk_size, dtype, sample_rate, num_channels, src_rate, src_channels):
        self.frames_per_chunk = frames_per_chunk
        self.buffer_chunk_size = buffer_chunk_size
        self.dtype = dtype
        self.sample_rate = sample_rate or src_rate
        self.num_channels = num_channels or src_channels
        self.src_rate = src_rate
        self.src_channels = src_channels
        self.reset(0)

    def reset(self, start_frame):
        self.pending = []  # [channels, time] float tensors at the output rate
        self.pending_len = 0
        self.next_frame = start_frame  # output frame index of the first pending sample
        self.resampler = (_StreamingResampler(self.src_rate, self.sample_rate)
                          if self.sample_rate != self.src_rate else None)

    def push(self, block):  # block: [channels, time] float32 at the source rate
        if self.num_channels != self.src_channels:
            block = block.mean(0, keepdim=True)
        if self.resampler is not None:
            block = self.resampler.push(block)
        self._append(block)

    def flush(self):
        if self.resampler is not None:
            tail = self.resampler.flush()
            if tail is not None:
                self._append(tail)

    def _append(self, block):
        if block.shape[-1]:
            self.pending.append(block)
            self.pending_len += block.shape[-1]

    def ready(self):
        return self.pending_len >= self.frames_per_chunk

    def pop(self, n=None):
        """Up to n frames as ``[frames, channels]`` in the output dtype, with ``pts`` in seconds."""
        if not self.pending_len:
            return None
        n = self.pending_len if n is None else min(n, self.pending_len)
        whole = ember.cat(self.pending, -1) if len(self.pending) > 1 else self.pending[0]
        out, rest = whole[..., :n], whole[..., n:]
        self.pending = [rest] if rest.shape[-1] else []
        self.pending_len -= n
        chunk = ChunkTensor._wrap(_convert(out.t().contiguous(), self.dtype), self.next_frame / self.sample_rate)
        self.next_frame += n
        return chunk


def _convert(x, dtype):
    """float32 samples in [-1, 1] to the requested sample format (FFmpeg's scaling)."""
    if dtype in ("float32", "float64"):
        return x.to(getattr(ember, dtype))
    bits = {"uint8": 8, "int16": 16, "int32": 32, "int64": 64}[dtype]
    arr = x.detach().cpu().numpy().astype(np.float64)
    scale = float(2 ** (bits - 1))
    ints = np.clip(np.round(arr * scale), -scale, scale - 1)
    if dtype == "uint8":
        ints = ints + 128
    return ember.from_numpy(ints.astype(dtype))


class StreamReader:
    """Read an audio file (a path or a seekable file-like object) chunk by chunk.

    ``add_basic_audio_stream(frames_per_chunk, sample_rate=...)`` adds an output stream;
    ``stream()`` then yields, for each decoding step, a tuple with one chunk per output stream
    (``Tensor [frames, channels]`` with a ``pts`` attribute in seconds, or None when that
    stream has no chunk ready).  Resampling is streamed with ``functional.resample``'s kernel,
    so the concatenated chunks equal ``resample`` of the whole file.  The last chunk may be
    shorter than ``frames_per_chunk``.

    Only audio is read (one source stream, index 0): video, capture devices, network
    protocols and FFmpeg filter descriptions are out of scope.  Raises FileNotFoundError or
    RuntimeError naming the file when it cannot be opened.  Source: torchaudio 2.8
    ``torchaudio.io.StreamReader``.

    Args:
        src: a path or a seekable file-like object.
        format: the container name, validated (ValueError for an unknown one); libsndfile
            reads the container from the data's header.
        option: FFmpeg demuxer options in torchaudio; accepted and ignored.
        buffer_size: frames decoded per read (at least 256), and the chunk of a stream added
            with ``frames_per_chunk=-1``.
    """

    def __init__(self, src, format=None, option=None, buffer_size=4096):
        self._src = src
        self._file = _open(src, format)
        self._block = max(int(buffer_size), 256)
        self._outputs = []
        self._eof = False

    # -- description -------------------------------------------------------------------
    @property
    def num_src_streams(self) -> int:
        return 1

    @property
    def num_out_streams(self) -> int:
        return len(self._outputs)

    @property
    def default_audio_stream(self):
        return 0

    @property
    def default_video_stream(self):
        return None

    def get_metadata(self) -> dict:
        return {}

    def get_src_stream_info(self, i: int) -> SourceAudioStream:
        self._check_src(i)
        f = self._file
        bits = _SUBTYPE_TO_BITS.get(f.subtype, 0)
        return SourceAudioStream(media_type="audio", codec=f.subtype.lower(), codec_long_name=f.subtype_info,
                                 format=f.format.lower(), bit_rate=f.samplerate * f.channels * bits,
                                 num_frames=f.frames, bits_per_sample=bits, metadata={},
                                 sample_rate=float(f.samplerate), num_channels=f.channels)

    def get_out_stream_info(self, i: int) -> OutputAudioStream:
        o = self._outputs[i]
        fmt = {v: k for k, v in _FORMATS.items() if k.endswith("p")}[o.dtype]
        return OutputAudioStream(source_index=0, filter_description="", media_type="audio", format=fmt,
                                 sample_rate=float(o.sample_rate), num_channels=o.num_channels)

    def _check_src(self, i):
        if i not in (0, None):
            raise IndexError(f"{_name(self._src)!r} has one audio stream (index 0); got stream_index={i}")

    # -- configuration -----------------------------------------------------------------
    def add_basic_audio_stream(self, frames_per_chunk, buffer_chunk_size=3, *, stream_index=None, decoder=None,
                               decoder_option=None, format="fltp", sample_rate=None, num_channels=None):
        """Add an output stream of ``frames_per_chunk`` frames (-1: whatever one decoding step
        gives), in sample ``format`` ("u8p", "s16p", "s32p", "s64p", "fltp", "dblp"), resampled to
        ``sample_rate`` Hz and mixed to ``num_channels`` (the source's, or 1) when given."""
        self._check_src(stream_index)
        if decoder is not None:
            raise ValueError(f"decoder={decoder!r}: ember_audio decodes through libsndfile only")
        if format not in _FORMATS and format is not None:
            raise ValueError(f"unsupported sample format {format!r}; expected one of {sorted(_FORMATS)}")
        if frames_per_chunk == 0 or frames_per_chunk < -1:
            raise ValueError(f"frames_per_chunk must be positive or -1, got {frames_per_chunk}")
        f = self._file
        if sample_rate is not None and (sample_rate <= 0 or int(sample_rate) != sample_rate):
            raise ValueError(f"sample_rate must be a positive integer (Hz), got {sample_rate}")
        if num_channels not in (None, 1, f.channels):
            raise ValueError(f"num_channels={num_channels}: the source has {f.channels}; only mixing down to 1 "
                             f"channel is supported")
        fpc = self._block if frames_per_chunk == -1 else int(frames_per_chunk)
        self._outputs.append(_Output(fpc, buffer_chunk_size, _FORMATS[format or "fltp"],
                                     int(sample_rate) if sample_rate else None, num_channels, f.samplerate,
                                     f.channels))

    def add_audio_stream(self, frames_per_chunk, buffer_chunk_size=3, *, stream_index=None, decoder=None,
                         decoder_option=None, filter_desc=None):
        """An output stream of float32 samples at the source rate (``filter_desc`` must be None)."""
        if filter_desc is not None:
            raise ValueError("filter_desc: FFmpeg filter graphs are not supported (no FFmpeg); use "
                             "add_basic_audio_stream's sample_rate/num_channels/format")
        self.add_basic_audio_stream(frames_per_chunk, buffer_chunk_size, stream_index=stream_index,
                                    decoder=decoder, decoder_option=decoder_option)

    def remove_stream(self, i: int) -> None:
        del self._outputs[i]

    # -- decoding ----------------------------------------------------------------------
    def seek(self, timestamp: float, mode: str = "precise") -> None:
        """Move to ``timestamp`` seconds ("precise"; "key" and "any" behave the same for PCM)."""
        if mode not in ("key", "any", "precise"):
            raise ValueError(f"mode must be 'key', 'any' or 'precise', got {mode!r}")
        if timestamp < 0:
            raise ValueError(f"timestamp must be non-negative, got {timestamp}")
        frame = min(int(round(timestamp * self._file.samplerate)), self._file.frames)
        self._file.seek(frame)
        self._eof = False
        for o in self._outputs:
            o.reset(math.floor(frame * o.sample_rate / o.src_rate))

    def process_packet(self, timeout=None, backoff=10.0) -> int:
        """Decode one block of the source; 0 when done, 1 at the end of the file."""
        if self._eof:
            return 1
        data = self._file.read(self._block, dtype="float32", always_2d=True)
        if data.shape[0]:
            block = ember.from_numpy(np.ascontiguousarray(data.T))
            for o in self._outputs:
                o.push(block)
        if data.shape[0] < self._block:
            self._eof = True
            for o in self._outputs:
                o.flush()
            return 1
        return 0

    def process_all_packets(self) -> None:
        while not self.process_packet():
            pass

    def is_buffer_ready(self) -> bool:
        return all(o.ready() for o in self._outputs)

    def fill_buffer(self, timeout=None, backoff=10.0) -> int:
        """Decode until every output stream has a chunk ready (or the file ends); 1 at the end."""
        while not self.is_buffer_ready():
            if self.process_packet():
                return 1
        return 0

    def pop_chunks(self):
        """One chunk (or None) per output stream; after the end of the file, what remains."""
        return tuple(o.pop(o.frames_per_chunk) if (o.ready() or self._eof) else None for o in self._outputs)

    def stream(self, timeout=None, backoff=10.0):
        """Yield a tuple of chunks (one per output stream) until the file is exhausted."""
        if not self._outputs:
            raise RuntimeError("No output stream is configured: call add_basic_audio_stream first.")
        while True:
            ended = self.fill_buffer()
            chunks = self.pop_chunks()
            if any(c is not None for c in chunks):
                yield chunks
            if ended:
                while any(o.pending_len for o in self._outputs):
                    yield tuple(o.pop(o.frames_per_chunk) for o in self._outputs)
                return

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
