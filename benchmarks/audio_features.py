"""Audio features and resampling: ember-audio beside librosa, soxr and (where installed) torchaudio.

    python benchmarks/audio_features.py [--rounds 5]

Workloads: MelSpectrogram of 60 s of 16 kHz audio (n_fft 400, hop 160, 80 mels, power 2),
resampling 60 s of audio 48 kHz -> 44.1 kHz and 16 kHz -> 8 kHz (ember and torchaudio: the
default windowed sinc, width 6; librosa: its default soxr_hq; soxr: "HQ").  Each library that
imports is timed (median of ``--rounds`` after one warm-up); the ratio column is ember's time over
the row's.  torchaudio cannot be installed beside PyTorch 2.13.0: run this script in a venv
holding torch==2.8.0 and torchaudio==2.8.0 for its rows.  Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _time(fn, rounds):
    fn()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _signal(sr, seconds=60, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(sr * seconds) / sr
    return (0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(t.size)).astype(np.float32)


def workloads():
    x16, x48 = _signal(16000), _signal(48000)
    jobs = {"melspectrogram 60 s @16 kHz": {}, "resample 48k->44.1k (60 s)": {}, "resample 16k->8k (60 s)": {}}
    try:
        import ember
        import ember_audio
        mel = ember_audio.transforms.MelSpectrogram(16000, n_fft=400, hop_length=160, n_mels=80)
        e16, e48 = ember.from_numpy(x16), ember.from_numpy(x48)
        r1, r2 = ember_audio.transforms.Resample(48000, 44100), ember_audio.transforms.Resample(16000, 8000)
        jobs["melspectrogram 60 s @16 kHz"]["ember"] = lambda: mel(e16)
        jobs["resample 48k->44.1k (60 s)"]["ember"] = lambda: r1(e48)
        jobs["resample 16k->8k (60 s)"]["ember"] = lambda: r2(e16)
    except ImportError:
        pass
    try:
        import torch
        import torchaudio
        tmel = torchaudio.transforms.MelSpectrogram(16000, n_fft=400, hop_length=160, n_mels=80)
        t16, t48 = torch.from_numpy(x16), torch.from_numpy(x48)
        tr1, tr2 = torchaudio.transforms.Resample(48000, 44100), torchaudio.transforms.Resample(16000, 8000)
        name = f"torchaudio {torchaudio.__version__}"
        jobs["melspectrogram 60 s @16 kHz"][name] = lambda: tmel(t16)
        jobs["resample 48k->44.1k (60 s)"][name] = lambda: tr1(t48)
        jobs["resample 16k->8k (60 s)"][name] = lambda: tr2(t16)
    except ImportError:
        pass
    try:
        import librosa
        name = f"librosa {librosa.__version__}"
        jobs["melspectrogram 60 s @16 kHz"][name] = lambda: librosa.feature.melspectrogram(
            y=x16, sr=16000, n_fft=400, hop_length=160, n_mels=80, htk=True, norm=None, pad_mode="reflect")
        jobs["resample 48k->44.1k (60 s)"][name] = lambda: librosa.resample(x48, orig_sr=48000, target_sr=44100)
        jobs["resample 16k->8k (60 s)"][name] = lambda: librosa.resample(x16, orig_sr=16000, target_sr=8000)
    except ImportError:
        pass
    try:
        import soxr
        name = f"soxr {soxr.__version__}"
        jobs["resample 48k->44.1k (60 s)"][name] = lambda: soxr.resample(x48, 48000, 44100, quality="HQ")
        jobs["resample 16k->8k (60 s)"][name] = lambda: soxr.resample(x16, 16000, 8000, quality="HQ")
    except ImportError:
        pass
    return jobs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    print("| workload | library | median time | ember / library |")
    print("|---|---|---|---|")
    for workload, libs in workloads().items():
        times = {name: _time(fn, args.rounds) for name, fn in libs.items()}
        for name, t in times.items():
            ratio = f"{times['ember'] / t:.2f}" if "ember" in times and name != "ember" else ""
            print(f"| {workload} | {name} | {t * 1000:.1f} ms | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
