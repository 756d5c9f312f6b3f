"""load / save / info through soundfile: formats, bit-exact PCM round trips, file-like objects,
offsets, layouts, and errors naming the file.  Files are checked with soundfile itself (the
libsndfile reader) as the independent reference."""

import io
import os

import numpy as np
import pytest
import soundfile

import ember
import ember_audio

RNG = np.random.default_rng(0)


def _pcm(dtype, channels=2, frames=1000):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=(channels, frames), endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype,subtype", [("int16", "PCM_16"), ("int32", "PCM_32"), ("uint8", "PCM_U8")])
def test_wav_pcm_round_trip_bit_exact(tmp_path, dtype, subtype):
    src = _pcm(dtype)
    path = tmp_path / "a.wav"
    ember_audio.save(path, ember.from_numpy(src), 8000)
    assert soundfile.info(str(path)).subtype == subtype
    wav, sr = ember_audio.load(path, normalize=False)
    assert sr == 8000
    assert str(wav.dtype) == f"ember.{dtype}"
    np.testing.assert_array_equal(wav.numpy(), src)


def test_wav_int16_normalized_is_divided_by_32768(tmp_path):
    src = _pcm("int16", channels=1)
    path = tmp_path / "a.wav"
    soundfile.write(str(path), src.T, 16000, subtype="PCM_16")
    wav, sr = ember_audio.load(path)
    assert wav.dtype == ember.float32 and tuple(wav.shape) == (1, 1000)
    np.testing.assert_array_equal(wav.numpy(), src.astype(np.float32) / 32768)


def test_wav_24_bit_round_trip(tmp_path):
    # 24-bit samples come back left-justified in int32 (the low byte zero).
    src = (RNG.integers(-(2 ** 23), 2 ** 23, size=(2, 500)) << 8).astype(np.int32)
    path = tmp_path / "a.wav"
    ember_audio.save(path, ember.from_numpy(src), 48000, bits_per_sample=24)
    meta = ember_audio.info(path)
    assert (meta.bits_per_sample, meta.encoding, meta.num_channels, meta.num_frames) == (24, "PCM_S", 2, 500)
    wav, _ = ember_audio.load(path, normalize=False)
    np.testing.assert_array_equal(wav.numpy(), src)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_wav_float_round_trip(tmp_path, dtype):
    src = RNG.uniform(-1, 1, size=(3, 700)).astype(dtype)
    path = tmp_path / "f.wav"
    ember_audio.save(path, ember.from_numpy(src), 22050)
    meta = ember_audio.info(path)
    assert (meta.encoding, meta.bits_per_sample) == ("PCM_F", 32 if dtype == "float32" else 64)
    wav, _ = ember_audio.load(path, normalize=False)
    assert str(wav.dtype) == f"ember.{dtype}"
    np.testing.assert_array_equal(wav.numpy(), src)


@pytest.mark.parametrize("bits", [16, 24])
def test_flac_round_trip_bit_exact(tmp_path, bits):
    ints = RNG.integers(-(2 ** (bits - 1)), 2 ** (bits - 1), size=(2, 1200))
    src = (ints / 2 ** (bits - 1)).astype(np.float32)  # exactly representable at this depth
    path = tmp_path / "a.flac"
    ember_audio.save(path, ember.from_numpy(src), 44100, bits_per_sample=bits)
    meta = ember_audio.info(path)
    assert (meta.sample_rate, meta.num_frames, meta.num_channels, meta.bits_per_sample, meta.encoding) == \
        (44100, 1200, 2, bits, "FLAC")
    wav, _ = ember_audio.load(path)
    np.testing.assert_array_equal(wav.numpy(), src)
    ref, _ = soundfile.read(str(path), dtype="float32", always_2d=True)
    np.testing.assert_array_equal(wav.numpy(), ref.T)


def test_ogg_vorbis_round_trip_is_close(tmp_path):
    t = np.arange(16000) / 16000
    src = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None]
    path = tmp_path / "a.ogg"
    ember_audio.save(path, ember.from_numpy(src), 16000)
    meta = ember_audio.info(path)
    assert (meta.encoding, meta.bits_per_sample, meta.num_channels, meta.sample_rate) == ("VORBIS", 0, 1, 16000)
    wav, sr = ember_audio.load(path)
    assert sr == 16000 and wav.shape[0] == 1
    n = min(wav.shape[1], src.shape[1])
    err = wav.numpy()[0, :n] - src[0, :n]
    # lossy: the 440 Hz tone survives with a signal-to-error ratio above 20 dB
    assert 10 * np.log10(np.sum(src[0, :n] ** 2) / np.sum(err ** 2)) > 20


def test_mp3_round_trip(tmp_path):
    # soundfile's wheels (libsndfile >= 1.1) bundle the mp3 codec
    t = np.arange(16000) / 16000
    src = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None]
    path = tmp_path / "a.mp3"
    ember_audio.save(path, ember.from_numpy(src), 16000)
    assert ember_audio.info(path).encoding == "MP3"
    wav, sr = ember_audio.load(path)
    assert sr == 16000
    spectrum = np.abs(np.fft.rfft(wav.numpy()[0]))
    assert abs(np.argmax(spectrum) * sr / wav.shape[1] - 440) < 2


def test_file_like_objects_both_ways():
    src = _pcm("int16")
    buf = io.BytesIO()
    ember_audio.save(buf, ember.from_numpy(src), 8000, format="wav")
    buf.seek(0)
    ref, sr = soundfile.read(buf, dtype="int16", always_2d=True)
    np.testing.assert_array_equal(ref.T, src)
    buf.seek(0)
    assert ember_audio.info(buf).num_frames == 1000
    buf.seek(0)
    wav, sr = ember_audio.load(buf, normalize=False)
    np.testing.assert_array_equal(wav.numpy(), src)


def test_save_to_file_object_requires_format():
    with pytest.raises(RuntimeError, match="format"):
        ember_audio.save(io.BytesIO(), ember.zeros(1, 10), 8000)


def test_frame_offset_num_frames_and_channels_last(tmp_path):
    src = _pcm("int16", channels=2, frames=100)
    path = tmp_path / "a.wav"
    soundfile.write(str(path), src.T, 8000, subtype="PCM_16")
    wav, _ = ember_audio.load(path, frame_offset=10, num_frames=20, normalize=False)
    np.testing.assert_array_equal(wav.numpy(), src[:, 10:30])
    wav, _ = ember_audio.load(path, frame_offset=90, num_frames=50, normalize=False)  # fewer at the end
    np.testing.assert_array_equal(wav.numpy(), src[:, 90:])
    wav, _ = ember_audio.load(path, normalize=False, channels_first=False)
    np.testing.assert_array_equal(wav.numpy(), src.T)
    out = tmp_path / "b.wav"
    ember_audio.save(out, ember.from_numpy(np.ascontiguousarray(src.T)), 8000, channels_first=False)
    np.testing.assert_array_equal(soundfile.read(str(out), dtype="int16")[0], src.T)


@pytest.mark.parametrize("encoding,bits,subtype", [("PCM_S", 16, "PCM_16"), ("PCM_S", None, "PCM_32"),
                                                   ("PCM_U", None, "PCM_U8"), ("PCM_F", 64, "DOUBLE"),
                                                   ("ULAW", None, "ULAW"), ("ALAW", 8, "ALAW")])
def test_wav_encoding_options(tmp_path, encoding, bits, subtype):
    path = tmp_path / "e.wav"
    ember_audio.save(path, ember.zeros(1, 64), 8000, encoding=encoding, bits_per_sample=bits)
    assert soundfile.info(str(path)).subtype == subtype


def test_bad_encoding_raises_value_error(tmp_path):
    with pytest.raises(ValueError, match="8-bit signed"):
        ember_audio.save(tmp_path / "x.wav", ember.zeros(1, 8), 8000, encoding="PCM_S", bits_per_sample=8)
    with pytest.raises(ValueError, match="flac does not support"):
        ember_audio.save(tmp_path / "x.flac", ember.zeros(1, 8), 8000, bits_per_sample=32)
    with pytest.raises(ValueError, match="2D"):
        ember_audio.save(tmp_path / "x.wav", ember.zeros(8), 8000)
    assert not any(p.name.startswith(".tmp") for p in tmp_path.iterdir())


def test_missing_and_corrupt_files_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.wav"):
        ember_audio.load(tmp_path / "nope.wav")
    bad = tmp_path / "corrupt.wav"
    bad.write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunkjunkjunk")
    with pytest.raises(RuntimeError, match="corrupt.wav") as e:
        ember_audio.load(bad)
    assert "RIFF" in str(e.value)  # what was found
    with pytest.raises(RuntimeError, match="corrupt.wav"):
        ember_audio.info(bad)


def test_save_is_atomic_and_replaces(tmp_path):
    path = tmp_path / "a.wav"
    ember_audio.save(path, ember.zeros(1, 10, dtype=ember.int16), 8000)
    ember_audio.save(path, ember.ones(1, 20, dtype=ember.int16), 8000)
    assert soundfile.info(str(path)).frames == 20
    assert sorted(os.listdir(tmp_path)) == ["a.wav"]


def test_real_speech_file_metadata(speech_file):
    meta = ember_audio.info(speech_file)
    ref = soundfile.info(str(speech_file))
    assert (meta.sample_rate, meta.num_frames, meta.num_channels, meta.bits_per_sample, meta.encoding) == \
        (ref.samplerate, ref.frames, ref.channels, 16, "PCM_S")
    wav, sr = ember_audio.load(speech_file)
    assert tuple(wav.shape) == (1, ref.frames) and sr == ref.samplerate


def test_top_level_names_match_io():
    assert ember_audio.load is ember_audio.io.load and ember_audio.info is ember_audio.io.info
    assert ember_audio.list_audio_backends() == ["soundfile"]
    with pytest.raises(ValueError, match="ffmpeg"):
        ember_audio.load("x.wav", backend="ffmpeg")
