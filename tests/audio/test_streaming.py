"""StreamingMelSpectrogram / StreamingMFCC: chunks of any size give the frames of the offline
transform with center=False on the same samples."""

import numpy as np
import pytest
from _audio_helpers import tensor

import ember
from ember_audio import transforms as T


def _chunked(stream, x, sizes):
    out, i = [], 0
    for n in sizes:
        out.append(stream(x[..., i:i + n]))
        i += n
    out.append(stream(x[..., i:]))
    return ember.cat(out, -1)


def _random_sizes(rng, total, high):
    sizes = []
    while sum(sizes) < total:
        sizes.append(int(rng.integers(0, high)))
    return sizes


@pytest.mark.parametrize("high", [1, 7, 160, 401, 5000])
def test_streaming_melspectrogram_equals_offline(speech_16k, high):
    data, sr = speech_16k
    x = tensor(data[:12000])
    rng = np.random.default_rng(high)
    kw = dict(sample_rate=sr, n_fft=400, hop_length=160, n_mels=64)
    stream = T.StreamingMelSpectrogram(**kw)
    got = _chunked(stream, x, _random_sizes(rng, 12000, high) if high > 1 else [1] * 3000)
    ref = T.MelSpectrogram(center=False, **kw)(x)
    assert tuple(got.shape) == tuple(ref.shape) == (64, 1 + (12000 - 400) // 160)
    # equal up to float32 rounding: BLAS's matrix product rounds differently for different frame counts
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-6, atol=1e-6 * float(ref.max()))


def test_streaming_mfcc_equals_offline_without_the_global_floor(speech_16k):
    data, sr = speech_16k
    x = tensor(np.stack([data[:9000], data[5000:14000]]))  # a batch of two streams [2, time]
    melkwargs = dict(n_fft=400, hop_length=160, n_mels=40)
    stream = T.StreamingMFCC(sample_rate=sr, n_mfcc=13, melkwargs=melkwargs)
    got = _chunked(stream, x, [100, 1000, 1, 399, 2500])
    offline = T.MFCC(sample_rate=sr, n_mfcc=13, melkwargs={**melkwargs, "center": False})
    offline.amplitude_to_DB.top_db = None
    ref = offline(x)
    assert tuple(got.shape) == tuple(ref.shape)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-4)
    # log_mels=True has no global floor at all
    s2 = T.StreamingMFCC(sample_rate=sr, n_mfcc=13, log_mels=True, melkwargs=melkwargs)
    o2 = T.MFCC(sample_rate=sr, n_mfcc=13, log_mels=True, melkwargs={**melkwargs, "center": False})
    np.testing.assert_allclose(_chunked(s2, x, [3000, 3000]).numpy(), o2(x).numpy(), rtol=1e-5, atol=1e-4)


def test_streaming_state_is_bounded_and_resettable(speech_16k):
    data, sr = speech_16k
    stream = T.StreamingMelSpectrogram(sample_rate=sr, n_fft=400, hop_length=160, n_mels=32)
    empty = stream(tensor(data[:399]))
    assert tuple(empty.shape) == (32, 0)
    for i in range(0, 16000, 1000):
        stream(tensor(data[i:i + 1000]))
        assert stream._buffer.shape[-1] < 400 + 160
    stream.reset()
    first = stream(tensor(data[:400]))
    ref = T.MelSpectrogram(sample_rate=sr, n_fft=400, hop_length=160, n_mels=32, center=False)(tensor(data[:400]))
    np.testing.assert_allclose(first.numpy(), ref.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="reset"):
        stream(tensor(np.zeros((2, 100), np.float32)))
