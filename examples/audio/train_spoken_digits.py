"""Train a spoken-digit classifier ("zero" to "nine") on real recordings available offline.

Training data: the ten digit prompts of Debian's ``asterisk-core-sounds-en-wav`` (one voice,
one take each, 8 kHz), augmented on the fly: speed (0.85-1.15x), pitch (-3..+3 semitones),
gain (-12..+6 dB), time shift inside the 1 s window and noise at 5-30 dB SNR.  The model is
``ember_audio.models.KWSNet`` over ``ember_audio.pipelines.SpokenDigitFeatures`` (20 MFCCs).

Evaluated twice, reported side by side:
  * held out: fresh augmentations of the same recordings (another random stream);
  * other voices: the digits rendered by Debian's ``espeak-ng`` in several voices and speeds
    (a different "speaker": the honest generalisation figure).

    apt-get install asterisk-core-sounds-en-wav espeak-ng
    python examples/audio/train_spoken_digits.py --steps 300 --out spoken_digits_kws.pt

It prints both accuracies, saves the weights and a confusion-matrix PNG (pillow).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import subprocess
import tempfile
import time

import numpy as np

import ember
import ember_audio
from ember_audio import functional as AF
from ember_audio.models import KWSNet
from ember_audio.pipelines import SpokenDigitFeatures
from ember_audio.pipelines._spoken_digits import LABELS

SOURCE_DIR = "/usr/share/asterisk/sounds/en/digits"
SAMPLE_RATE = 8000
VOICES = ["en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-029",
          "en-us+f3", "en-gb+f2"]
SPEEDS = [130, 175]


def load_digits(source_dir):
    waves = []
    for d in range(10):
        path = os.path.join(source_dir, f"{d}.wav")
        if not os.path.exists(path):
            raise SystemExit(f"{path} is missing: apt-get install asterisk-core-sounds-en-wav (or --source-dir)")
        wav, sr = ember_audio.load(path)
        if sr != SAMPLE_RATE:
            wav = AF.resample(wav, sr, SAMPLE_RATE)
        waves.append(wav[0])
    return waves


def render_espeak(tmp):
    """The ten digit words spoken by espeak-ng in each voice and speed, resampled to 8 kHz."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise SystemExit("espeak-ng is missing: apt-get install espeak-ng")
    clips = []
    for voice in VOICES:
        for speed in SPEEDS:
            for d, word in enumerate(LABELS):
                path = os.path.join(tmp, f"{voice}-{speed}-{d}.wav")
                subprocess.run([exe, "-v", voice, "-s", str(speed), "-w", path, word], check=True,
                               capture_output=True)
                wav, sr = ember_audio.load(path)
                clips.append((AF.resample(wav[0], sr, SAMPLE_RATE), d))
    return clips


def shift_pitch(x, steps, n_fft=256, hop=64):
    """Pitch moved by ``steps`` semitones, duration kept: resample to a nearby multiple of 100 Hz
    (so the resampling kernel stays small; functional.pitch_shift's rates are coprime with 8000
    and its kernel is huge), then time-stretch back with the phase vocoder."""
    target = int(round(SAMPLE_RATE * 2 ** (-steps / 12) / 100) * 100)
    y = AF.resample(x, SAMPLE_RATE, target)
    window = ember.hann_window(n_fft)
    spec = ember.stft(y, n_fft, hop, window=window, return_complex=True)
    advance = ember.linspace(0, math.pi * hop, n_fft // 2 + 1)[..., None]
    spec = AF.phase_vocoder(spec, target / SAMPLE_RATE, advance)
    return ember.istft(spec, n_fft, hop, window=window, length=x.shape[-1])


def augment(wave, rng):
    """One random variant of ``wave`` (1-d, 8 kHz) placed in a 1 s window."""
    x = wave
    factor = rng.choice([0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15])
    if factor != 1.0:
        x, _ = AF.speed(x, SAMPLE_RATE, factor)
    steps = rng.choice([-3, -2, -1, 0, 0, 1, 2, 3])
    if steps:
        x = shift_pitch(x, steps)
    x = AF.gain(x, rng.uniform(-12.0, 6.0))
    n = SAMPLE_RATE
    if x.shape[-1] > n:
        start = rng.randint(0, x.shape[-1] - n)
        x = x[start:start + n]
    left = rng.randint(0, n - x.shape[-1])
    x = ember.nn.functional.pad(x, (left, n - x.shape[-1] - left))
    noise = ember.randn(n)
    if rng.random() < 0.5:  # brown noise: integrated white noise, low-frequency heavy
        noise = ember.cumsum(noise, 0)
        noise = noise - noise.mean()
    snr = ember.tensor(rng.uniform(5.0, 30.0))
    return ember.clamp(AF.add_noise(x, noise, snr), -1.0, 1.0)


def batch(waves, rng, size, features):
    labels = [rng.randrange(10) for _ in range(size)]
    x = ember.stack([augment(waves[d], rng) for d in labels])
    return features(x), ember.tensor(labels)


def evaluate(model, features, clips):
    x = ember.stack([features.fit_length(w) for w, _ in clips])
    with ember.no_grad():
        pred = model(features(x)).argmax(-1).numpy()
    truth = np.array([d for _, d in clips])
    confusion = np.zeros((10, 10), np.int64)
    np.add.at(confusion, (truth, pred), 1)
    return float((pred == truth).mean()), confusion


def save_confusion_png(path, matrices, titles):
    from PIL import Image, ImageDraw
    cell, pad = 28, 40
    width = len(matrices) * (10 * cell + 2 * pad)
    img = Image.new("RGB", (width, 10 * cell + 2 * pad), "white")
    draw = ImageDraw.Draw(img)
    for k, (m, title) in enumerate(zip(matrices, titles)):
        x0 = k * (10 * cell + 2 * pad) + pad
        draw.text((x0, 10), title, fill="black")
        rows = m / np.maximum(m.sum(1, keepdims=True), 1)
        for i in range(10):
            draw.text((x0 - 14, pad + i * cell + 8), str(i), fill="black")
            draw.text((x0 + i * cell + 10, pad + 10 * cell + 4), str(i), fill="black")
            for j in range(10):
                shade = int(255 * (1 - rows[i, j]))
                box = [x0 + j * cell, pad + i * cell, x0 + (j + 1) * cell - 1, pad + (i + 1) * cell - 1]
                draw.rectangle(box, fill=(shade, shade, 255))
                if m[i, j]:
                    draw.text((box[0] + 8, box[1] + 8), str(m[i, j]), fill="black" if shade > 120 else "white")
    tmp = path + ".tmp.png"
    img.save(tmp)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source-dir", default=SOURCE_DIR, help="folder holding 0.wav .. 9.wav")
    p.add_argument("--steps", type=int, default=250)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--heldout", type=int, default=300, help="held-out augmented clips")
    p.add_argument("--out", default="spoken_digits_kws.pt", help="where the trained weights go")
    p.add_argument("--confusion-png", default="spoken_digits_confusion.png")
    args = p.parse_args(argv)

    start = time.time()
    ember.manual_seed(args.seed)
    rng = random.Random(args.seed)
    waves = load_digits(args.source_dir)
    features = SpokenDigitFeatures(SAMPLE_RATE)
    model = KWSNet(n_classes=10)
    opt = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-3)
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    for step in range(1, args.steps + 1):
        x, y = batch(waves, rng, args.batch_size, features)
        model.train()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 50 == 0 or step == args.steps:
            print(f"step {step:4d}  loss {float(loss):.3f}  {time.time() - start:.0f} s", flush=True)
    train_time = time.time() - start
    model.eval()

    held_rng = random.Random(10_000 + args.seed)
    heldout = []
    for i in range(args.heldout):
        d = i % 10
        heldout.append((augment(waves[d], held_rng), d))
    acc_held, conf_held = evaluate(model, features, heldout)
    with tempfile.TemporaryDirectory() as tmp:
        acc_voices, conf_voices = evaluate(model, features, render_espeak(tmp))

    print()
    print("| evaluation | clips | accuracy |")
    print("|---|---|---|")
    print(f"| held-out augmentations of the training voice | {args.heldout} | {acc_held:.1%} |")
    print(f"| other voices (espeak-ng, {len(VOICES)} voices x {len(SPEEDS)} speeds) | "
          f"{10 * len(VOICES) * len(SPEEDS)} | {acc_voices:.1%} |")
    print(f"training: {args.steps} steps of {args.batch_size}, {train_time:.0f} s; total {time.time() - start:.0f} s")
    tmp = args.out + ".tmp"
    ember.save(model.state_dict(), tmp)
    os.replace(tmp, args.out)
    save_confusion_png(args.confusion_png, [conf_held, conf_voices],
                       [f"held-out augmentations {acc_held:.1%}", f"espeak-ng voices {acc_voices:.1%}"])
    print(f"saved {args.out} and {args.confusion_png}")
    return acc_held, acc_voices


if __name__ == "__main__":
    main()
