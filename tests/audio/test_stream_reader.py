"""io.StreamReader: chunks equal the whole file, streamed resampling equals functional.resample,
pts, seek, several output streams, sample formats and errors."""

import numpy as np
import pytest
import soundfile

import ember_audio
from ember_audio.io import StreamReader

RNG = np.random.default_rng(1)


@pytest.fixture
def stereo_wav(tmp_path):
    data = RNG.integers(-30000, 30000, size=(10_007, 2)).astype(np.int16)
    path = tmp_path / "long.wav"
    soundfile.write(str(path), data, 16000, subtype="PCM_16")
    return path, data


@pytest.mark.parametrize("frames_per_chunk,buffer_size", [(1000, 4096), (333, 256), (5000, 700)])
def test_chunks_concatenate_to_the_file(stereo_wav, frames_per_chunk, buffer_size):
    path, data = stereo_wav
    r = StreamReader(str(path), buffer_size=buffer_size)
    r.add_basic_audio_stream(frames_per_chunk)
    chunks = [c for (c,) in r.stream()]
    assert all(c.shape[0] == frames_per_chunk for c in chunks[:-1]) and 0 < chunks[-1].shape[0] <= frames_per_chunk
    assert [c.pts for c in chunks] == [i * frames_per_chunk / 16000 for i in range(len(chunks))]
    whole = np.concatenate([c.numpy() for c in chunks])
    np.testing.assert_array_equal(whole, data.astype(np.float32) / 32768)  # [frames, channels]


def test_streamed_resampling_equals_offline_resample(stereo_wav):
    path, data = stereo_wav
    r = StreamReader(str(path), buffer_size=512)
    r.add_basic_audio_stream(700, sample_rate=8000)
    r.add_basic_audio_stream(1000)
    got_8k, got_16k = [], []
    for a, b in r.stream():
        if a is not None:
            got_8k.append(a.numpy())
        if b is not None:
            got_16k.append(b.numpy())
    wav, _ = ember_audio.load(path)
    expected = ember_audio.functional.resample(wav, 16000, 8000).numpy().T
    out = np.concatenate(got_8k)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(np.concatenate(got_16k), wav.numpy().T)
    info = r.get_out_stream_info(0)
    assert (info.sample_rate, info.num_channels, info.format) == (8000.0, 2, "fltp")


def test_source_info_mono_mix_and_int_format(stereo_wav):
    path, data = stereo_wav
    r = StreamReader(str(path))
    src = r.get_src_stream_info(0)
    assert (src.media_type, src.sample_rate, src.num_channels, src.num_frames, src.bits_per_sample) == \
        ("audio", 16000.0, 2, 10_007, 16)
    r.add_basic_audio_stream(4096, format="s16p")
    r.add_basic_audio_stream(4096, num_channels=1)
    s16, mono = zip(*r.stream())
    s16 = np.concatenate([c.numpy() for c in s16])
    assert s16.dtype == np.int16
    np.testing.assert_array_equal(s16, data)
    mono = np.concatenate([c.numpy() for c in mono])
    np.testing.assert_allclose(mono[:, 0], data.astype(np.float32).mean(1) / 32768, atol=1e-7)


def test_seek(stereo_wav):
    path, data = stereo_wav
    r = StreamReader(str(path))
    r.add_basic_audio_stream(500)
    r.seek(0.5)
    (first,) = next(iter(r.stream()))
    assert first.pts == 0.5
    np.testing.assert_array_equal(first.numpy(), data[8000:8500].astype(np.float32) / 32768)


def test_errors(tmp_path, stereo_wav):
    with pytest.raises(FileNotFoundError, match="missing.flac"):
        StreamReader(str(tmp_path / "missing.flac"))
    path, _ = stereo_wav
    r = StreamReader(str(path))
    with pytest.raises(RuntimeError, match="add_basic_audio_stream"):
        next(iter(r.stream()))
    with pytest.raises(ValueError, match="filter"):
        r.add_audio_stream(100, filter_desc="aresample=8000")
    with pytest.raises(IndexError, match="stream_index=1"):
        r.add_basic_audio_stream(100, stream_index=1)
    with pytest.raises(ValueError, match="sample format"):
        r.add_basic_audio_stream(100, format="s24p")


def test_file_like_source():
    import io
    buf = io.BytesIO()
    data = RNG.uniform(-1, 1, size=(3000, 1)).astype(np.float32)
    soundfile.write(buf, data, 8000, format="FLAC", subtype="PCM_24")
    buf.seek(0)
    r = StreamReader(buf)
    r.add_basic_audio_stream(1024)
    out = np.concatenate([c.numpy() for (c,) in r.stream()])
    buf.seek(0)
    np.testing.assert_array_equal(out, soundfile.read(buf, dtype="float32", always_2d=True)[0])


def test_memory_stays_bounded_on_a_long_file(tmp_path):
    # 60 s at 16 kHz: the reader never holds more than one decode block plus one chunk per stream
    path = tmp_path / "minute.flac"
    t = np.arange(16000 * 60) / 16000
    soundfile.write(str(path), (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000, subtype="PCM_16")
    r = StreamReader(str(path), buffer_size=2048)
    r.add_basic_audio_stream(1600, sample_rate=8000)
    total, peak = 0, 0
    for (chunk,) in r.stream():
        total += chunk.shape[0]
        peak = max(peak, r._outputs[0].pending_len)
    assert total == 16000 * 60 // 2
    assert peak <= 1600 + 2048
