"""The audio_classifier handler over the socket with ember-audio's spoken-digit bundle: wav files
written here (Debian's asterisk digit recordings re-written as wav, espeak-ng speech at 22050 Hz
in stereo) through /predictions and the protocol, against the bundle run here."""

import io
import os
import shutil
import subprocess

import numpy as np
import pytest
import soundfile
import tritonclient.http as httpclient
from conftest import ServerProcess, http, http_json

import ember
import ember_audio
from ember_audio.pipelines import SPOKEN_DIGITS_KWS
from ember_serve import create_archive

DIGITS = "/usr/share/asterisk/sounds/en/digits"
LABELS = SPOKEN_DIGITS_KWS.get_labels()


@pytest.fixture(scope="module")
def audio_server(tmp_path_factory):
    store = tmp_path_factory.mktemp("audio")
    path = create_archive(store / "digits.emar", name="digits", version="1", handler="audio_classifier",
                          config={"max_batch_size": 8, "max_batch_delay_ms": 5, "handler_config": {"topk": 3}})
    encoded = create_archive(store / "digitfiles.emar", name="digitfiles", version="1", handler="audio_classifier",
                             config={"max_batch_size": 8, "inputs": [{"name": "audio", "datatype": "BYTES",
                                                                      "shape": [-1]}],
                                     "outputs": [{"name": "probabilities", "datatype": "FP32", "shape": [-1, 10]},
                                                 {"name": "topk", "datatype": "BYTES", "shape": [-1, 1]}],
                                     "handler_config": {"topk": 1}})
    server = ServerProcess(["--models", f"digits={path}", f"digitfiles={encoded}"])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def wavs(tmp_path_factory):
    """{name: wav bytes}: the ten asterisk digits (8 kHz) and espeak-ng's "seven" (22050 Hz, stereo)."""
    assert os.path.isdir(DIGITS), "asterisk-core-sounds-en-wav is required (the noxfile installs it)"
    out = {}
    for d in range(10):
        data, sr = soundfile.read(os.path.join(DIGITS, f"{d}.wav"), dtype="float32")
        buf = io.BytesIO()
        soundfile.write(buf, data, sr, format="WAV", subtype="PCM_16")
        out[LABELS[d]] = buf.getvalue()
    exe = shutil.which("espeak-ng")
    assert exe, "espeak-ng is required (the noxfile installs it)"
    folder = tmp_path_factory.mktemp("espeak")
    subprocess.run([exe, "-v", "en-us", "-s", "150", "-w", str(folder / "seven.wav"), "seven"], check=True,
                   capture_output=True)
    mono, sr = soundfile.read(folder / "seven.wav", dtype="float32")
    buf = io.BytesIO()
    soundfile.write(buf, np.stack([mono, 0.5 * mono], axis=1), sr, format="WAV", subtype="FLOAT")
    out["espeak-seven"] = buf.getvalue()
    return out


def local_probs(wav: bytes):
    """The bundle's probabilities for one encoded clip, computed here."""
    wave, sr = ember_audio.load(io.BytesIO(wav))
    wave = wave.mean(dim=0)
    if sr != SPOKEN_DIGITS_KWS.sample_rate:
        wave = ember_audio.functional.resample(wave, sr, SPOKEN_DIGITS_KWS.sample_rate)
    features, model = SPOKEN_DIGITS_KWS.get_features(), SPOKEN_DIGITS_KWS.get_model()
    with ember.no_grad():
        return model(features(features.fit_length(wave)[None])).softmax(dim=1)[0].numpy()


def test_wav_bodies_through_predictions(audio_server, wavs):
    right = 0
    for name, wav in wavs.items():
        status, got = http_json("POST", audio_server.inference + "/predictions/digits", wav,
                                {"Content-Type": "audio/wav"})
        assert status == 200 and len(got) == 3
        p = local_probs(wav)
        order = np.argsort(-p)[:3]
        assert list(got) == [LABELS[i] for i in order], name
        np.testing.assert_allclose(list(got.values()), p[order], rtol=1e-4, atol=1e-6)
        right += next(iter(got)) == name
    assert right >= 9  # the recordings the bundle was trained on (the audio tests ask the same)
    status, got = http_json("POST", audio_server.inference + "/predictions/digits", b"RIFF not a wav")
    assert status == 400 and "cannot decode the audio" in got["error"]
    assert http("GET", audio_server.inference + "/ping")[0] == 200


def test_waveform_tensors_and_encoded_files_over_the_protocol(audio_server, wavs):
    c = httpclient.InferenceServerClient(audio_server.hostport)
    names = ["two", "five"]
    waves = [soundfile.read(io.BytesIO(wavs[n]), dtype="float32")[0] for n in names]
    n = min(len(w) for w in waves)
    x = np.stack([w[:n] for w in waves])  # 8 kHz, the bundle's rate
    inp = httpclient.InferInput("waveform", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    r = c.infer("digits", [inp])
    want = []
    for w in x:
        buf = io.BytesIO()
        soundfile.write(buf, w, 8000, format="WAV", subtype="FLOAT")
        want.append(local_probs(buf.getvalue()))
    np.testing.assert_allclose(r.as_numpy("probabilities"), np.stack(want), rtol=1e-4, atol=1e-6)
    assert [row[0].decode().split(":")[2] for row in r.as_numpy("topk")] == [LABELS[int(np.argmax(p))] for p in want]
    meta = c.get_model_metadata("digits")
    assert meta["inputs"] == [{"name": "waveform", "datatype": "FP32", "shape": [-1, -1]}]
    # the same clips at 16 kHz with the sample_rate parameter are resampled first
    x16 = ember_audio.functional.resample(ember.from_numpy(x), 8000, 16000).numpy()
    inp = httpclient.InferInput("waveform", list(x16.shape), "FP32")
    inp.set_data_from_numpy(np.ascontiguousarray(x16))
    r16 = c.infer("digits", [inp], parameters={"sample_rate": 16000})
    want16 = []
    for w in x16:
        buf = io.BytesIO()
        soundfile.write(buf, w, 16000, format="WAV", subtype="FLOAT")
        want16.append(local_probs(buf.getvalue()))
    np.testing.assert_allclose(r16.as_numpy("probabilities"), np.stack(want16), rtol=1e-4, atol=1e-6)
    # encoded files as BYTES, where the config declares that input
    files = [wavs["espeak-seven"], wavs["nine"]]
    inp = httpclient.InferInput("audio", [2], "BYTES")
    inp.set_data_from_numpy(np.array(files, dtype=object))
    r = c.infer("digitfiles", [inp])
    np.testing.assert_allclose(r.as_numpy("probabilities"), np.stack([local_probs(f) for f in files]), rtol=1e-4,
                               atol=1e-6)
    c.close()
