"""The shipped spoken-digit bundle: its packaged weights classify the real recordings it was
trained on and, above chance, other voices (espeak-ng); the example script runs end to end."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember_audio
from ember_audio import functional as AF
from ember_audio.pipelines import SPOKEN_DIGITS_KWS, SpokenDigitBundle

DIGITS = "/usr/share/asterisk/sounds/en/digits"
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "audio")


def _classify(waves):
    features, model = SPOKEN_DIGITS_KWS.get_features(), SPOKEN_DIGITS_KWS.get_model()
    x = ember.stack([features.fit_length(w) for w in waves])
    with ember.no_grad():
        return model(features(x)).argmax(-1).tolist()


def test_bundle_metadata_and_training_voice():
    assert SPOKEN_DIGITS_KWS.sample_rate == 8000
    assert SPOKEN_DIGITS_KWS.get_labels()[:3] == ("zero", "one", "two")
    assert os.path.isdir(DIGITS), "asterisk-core-sounds-en-wav is required (the noxfile installs it)"
    waves = []
    for d in range(10):
        wav, sr = ember_audio.load(os.path.join(DIGITS, f"{d}.wav"))
        waves.append(wav[0])
    pred = _classify(waves)
    assert sum(p == d for d, p in enumerate(pred)) >= 9, pred


def test_bundle_generalises_above_chance_to_espeak_voices(tmp_path):
    exe = shutil.which("espeak-ng")
    assert exe, "espeak-ng is required (the noxfile installs it)"
    waves, truth = [], []
    for voice in ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-029",
                  "en-us+f3", "en-gb+f2"):
        for d, word in enumerate(SPOKEN_DIGITS_KWS.get_labels()):
            path = tmp_path / f"{voice}-{d}.wav"
            subprocess.run([exe, "-v", voice, "-s", "150", "-w", str(path), word], check=True, capture_output=True)
            wav, sr = ember_audio.load(path)
            waves.append(AF.resample(wav[0], sr, 8000))
            truth.append(d)
    acc = np.mean(np.array(_classify(waves)) == np.array(truth))
    # chance is 0.1 (at most 16 of 90 by luck with probability ~1%); the README reports the full figure
    assert acc >= 0.18


def test_missing_weights_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="weights"):
        SpokenDigitBundle(str(tmp_path / "none.pt")).get_model()


def test_example_runs_end_to_end(tmp_path, monkeypatch):
    from PIL import Image
    monkeypatch.syspath_prepend(EXAMPLE)
    sys.modules.pop("train_spoken_digits", None)
    import train_spoken_digits
    monkeypatch.setattr(train_spoken_digits, "VOICES", ["en-us", "en-gb"])
    out, png = tmp_path / "w.pt", tmp_path / "c.png"
    acc_held, acc_voices = train_spoken_digits.main(["--steps", "3", "--batch-size", "8", "--heldout", "20",
                                                     "--out", str(out), "--confusion-png", str(png)])
    assert 0.0 <= acc_held <= 1.0 and 0.0 <= acc_voices <= 1.0
    assert SpokenDigitBundle(str(out)).get_model().classifier.out_features == 10
    with Image.open(png) as img:
        assert img.size == (2 * (10 * 28 + 80), 10 * 28 + 80)


def test_a_clips_features_do_not_depend_on_its_batch():
    features = SPOKEN_DIGITS_KWS.get_features()
    quiet, loud = ember.randn(8000) * 1e-3, ember.randn(8000)
    alone = features(quiet)
    batched = features(ember.stack([quiet, loud]))
    assert ember.allclose(batched[0], alone, atol=1e-5)
