"""Datasets on small trees written here in the real layouts (real wav/flac files), downloads
over a real local HTTP server (127.0.0.1) with checksums, safe extraction, pad_collate."""

import functools
import http.server
import io
import os
import tarfile
import threading

import numpy as np
import pytest
import soundfile

import ember
from ember.utils.data import DataLoader
from ember_audio.datasets import LIBRISPEECH, SPEECHCOMMANDS, YESNO, AudioFolder, extract_archive, pad_collate
from ember_audio.datasets import speechcommands as sc_module
from ember_audio.datasets import yesno as yesno_module

RNG = np.random.default_rng(0)


def _wav(path, n, sr=16000, fmt="WAV"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = RNG.integers(-3000, 3000, size=n).astype(np.int16)
    soundfile.write(str(path), data, sr, format=fmt, subtype="PCM_16")
    return data


def _speech_commands(root):
    base = root / "SpeechCommands" / "speech_commands_v0.02"
    files = {}
    for label in ("yes", "no"):
        for spk in ("aaaa1111", "bbbb2222", "cccc3333"):
            for k in range(2):
                rel = f"{label}/{spk}_nohash_{k}.wav"
                files[rel] = _wav(base / rel, 1600 + k)
    _wav(base / "_background_noise_" / "noise.wav", 3200)
    (base / "validation_list.txt").write_text("yes/bbbb2222_nohash_0.wav\nno/bbbb2222_nohash_1.wav\n")
    (base / "testing_list.txt").write_text("yes/cccc3333_nohash_0.wav\n")
    return base, files


def test_speechcommands_subsets_and_items(tmp_path):
    base, files = _speech_commands(tmp_path)
    full = SPEECHCOMMANDS(tmp_path)
    assert len(full) == 12
    train, val, test = (SPEECHCOMMANDS(tmp_path, subset=s) for s in ("training", "validation", "testing"))
    assert (len(train), len(val), len(test)) == (9, 2, 1)
    wave, sr, label, speaker, utt = test[0]
    assert (sr, label, speaker, utt) == (16000, "yes", "cccc3333", 0)
    np.testing.assert_array_equal(wave.numpy()[0], files["yes/cccc3333_nohash_0.wav"] / 32768)
    assert val.get_metadata(1)[0] == os.path.join("speech_commands_v0.02", "no", "bbbb2222_nohash_1.wav")
    names = {train.get_metadata(i)[0] for i in range(len(train))}
    assert not any("bbbb2222_nohash_0" in n and "yes" in n for n in names)
    with pytest.raises(ValueError, match="subset"):
        SPEECHCOMMANDS(tmp_path, subset="train")
    with pytest.raises(RuntimeError, match="download=True"):
        SPEECHCOMMANDS(tmp_path / "missing")


def test_yesno_and_librispeech_layouts(tmp_path):
    for name in ("0_0_1_0_1_0_1_1", "1_1_1_0_0_0_1_0"):
        _wav(tmp_path / "waves_yesno" / f"{name}.wav", 800, sr=8000)
    ds = YESNO(tmp_path)
    wave, sr, labels = ds[1]
    assert (len(ds), sr, labels, tuple(wave.shape)) == (2, 8000, [1, 1, 1, 0, 0, 0, 1, 0], (1, 800))

    chapter = tmp_path / "LibriSpeech" / "dev-clean" / "84" / "121123"
    d0 = _wav(chapter / "84-121123-0000.flac", 1000, fmt="FLAC")
    _wav(chapter / "84-121123-0001.flac", 1200, fmt="FLAC")
    (chapter / "84-121123.trans.txt").write_text("84-121123-0000 GO DO YOU HEAR\n84-121123-0001 BUT IN LESS\n")
    ls = LIBRISPEECH(tmp_path, url="dev-clean")
    wave, sr, text, spk, chap, utt = ls[0]
    assert (len(ls), sr, text, spk, chap, utt) == (2, 16000, "GO DO YOU HEAR", 84, 121123, 0)
    np.testing.assert_array_equal(wave.numpy()[0], d0 / 32768)
    assert ls.get_metadata(1)[2] == "BUT IN LESS"


def test_audio_folder_resamples_and_pad_collate(tmp_path):
    _wav(tmp_path / "cat" / "a.wav", 800, sr=8000)
    _wav(tmp_path / "dog" / "b.wav", 1000, sr=16000)
    _wav(tmp_path / "dog" / "c.flac", 1200, sr=16000, fmt="FLAC")
    (tmp_path / "dog" / "notes.txt").write_text("not audio")
    ds = AudioFolder(tmp_path, sample_rate=16000)
    assert ds.classes == ["cat", "dog"] and len(ds) == 3 and ds.targets == [0, 1, 1]
    wave, target = ds[0]
    assert tuple(wave.shape) == (1, 1600) and target == 0  # 8 kHz resampled to 16 kHz
    waves, lengths, targets = next(iter(DataLoader(ds, batch_size=3, collate_fn=pad_collate)))
    assert tuple(waves.shape) == (3, 1, 1600)
    assert lengths.tolist() == [1600, 1000, 1200] and targets.tolist() == [0, 1, 1]
    assert float(waves[1, 0, 1000:].abs().sum()) == 0.0
    with pytest.raises(ValueError, match="leading shape"):
        pad_collate([(ember.zeros(1, 5), 0), (ember.zeros(2, 5), 1)])
    with pytest.raises(FileNotFoundError, match="no audio files"):
        AudioFolder(tmp_path / "cat")


class _Server:
    def __init__(self, folder):
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
        handler.log_message = lambda *a: None
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _tar_of(folder, out, arcroot=""):
    with tarfile.open(out, "w:gz") as tar:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                tar.add(p, arcname=os.path.join(arcroot, str(p.relative_to(folder))))


def test_download_with_checksum_over_http(tmp_path, monkeypatch):
    src = tmp_path / "src"
    _speech_commands(src)
    served = tmp_path / "served"
    served.mkdir()
    archive = served / "speech_commands_v0.02.tar.gz"
    _tar_of(src / "SpeechCommands" / "speech_commands_v0.02", archive)
    import hashlib
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    server = _Server(served)
    try:
        url = f"{server.url}/speech_commands_v0.02.tar.gz"
        monkeypatch.setitem(sc_module._CHECKSUMS, url, digest)
        ds = SPEECHCOMMANDS(tmp_path / "data", url=url, download=True, subset="testing")
        assert len(ds) == 1 and ds[0][2] == "yes"
        monkeypatch.setitem(sc_module._CHECKSUMS, url, "0" * 64)
        with pytest.raises(RuntimeError, match="hash"):
            SPEECHCOMMANDS(tmp_path / "other", url=url, download=True)
        assert not any(p.name.endswith(".partial") for p in (tmp_path / "other").iterdir())
        # YESNO: the archive holds waves_yesno/
        ydir = tmp_path / "ysrc" / "waves_yesno"
        _wav(ydir / "0_1_0_1_0_1_0_1.wav", 400, sr=8000)
        _tar_of(tmp_path / "ysrc", served / "waves_yesno.tar.gz")
        monkeypatch.setattr(yesno_module, "_URL", f"{server.url}/waves_yesno.tar.gz")
        monkeypatch.setattr(yesno_module, "_SHA256",
                            hashlib.sha256((served / "waves_yesno.tar.gz").read_bytes()).hexdigest())
        ds = YESNO(tmp_path / "y", url=f"{server.url}/waves_yesno.tar.gz", download=True)
        assert ds[0][2] == [0, 1, 0, 1, 0, 1, 0, 1]
    finally:
        server.close()


def test_extraction_refuses_paths_leaving_root(tmp_path):
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as tar:
        data = b"owned"
        info = tarfile.TarInfo("../escaped.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(RuntimeError, match="escaped.txt"):
        extract_archive(str(evil), str(tmp_path / "out"))
    assert not (tmp_path / "escaped.txt").exists()
    link = tmp_path / "link.tar"
    with tarfile.open(link, "w") as tar:
        info = tarfile.TarInfo("inner/l")
        info.type = tarfile.SYMTYPE
        info.linkname = "../../../etc/passwd"
        tar.addfile(info)
    with pytest.raises(RuntimeError, match="points outside"):
        extract_archive(str(link), str(tmp_path / "out2"))
