"""The Speech Commands dataset layout (Warden, "Speech Commands: A Dataset for Limited-Vocabulary
Speech Recognition", 2018): ``<label>/<speaker>_nohash_<n>.wav`` folders, the splits given by
``validation_list.txt`` and ``testing_list.txt``.  Source: torchaudio 2.8 ``datasets.SPEECHCOMMANDS``.
"""

from __future__ import annotations

import os
from pathlib import Path

from ember.utils.data import Dataset

from .._io_helpers import load_wave
from .utils import download_url, extract_archive

__all__ = ["SPEECHCOMMANDS"]

FOLDER_IN_ARCHIVE = "SpeechCommands"
URL = "speech_commands_v0.02"
HASH_DIVIDER = "_nohash_"
EXCEPT_FOLDER = "_background_noise_"
SAMPLE_RATE = 16000
_CHECKSUMS = {
    "http://download.tensorflow.org/data/speech_commands_v0.01.tar.gz":
        "743935421bb51cccdb6bdd152e04c5c70274e935c82119ad7faeec31780d811d",
    "http://download.tensorflow.org/data/speech_commands_v0.02.tar.gz":
        "af14739ee7dc311471de98f5f9d2c9191b18aedfe957f4a6ff791c709868ff58",
}


def _load_list(root, *filenames):
    out = []
    for name in filenames:
        with open(os.path.join(root, name)) as f:
            out += [os.path.normpath(os.path.join(root, line.strip())) for line in f if line.strip()]
    return out


class SPEECHCOMMANDS(Dataset):
    """Items are ``(waveform [1, time] float32, sample_rate, label, speaker_id, utterance_number)``.

    Args:
        root: the folder holding ``folder_in_archive`` (or where it is downloaded).
        url: "speech_commands_v0.01", "speech_commands_v0.02" or a full archive URL.
        folder_in_archive: the top-level folder ("SpeechCommands").
        download: fetch (sha256-checked) and extract the archive when the folder is missing.
        subset: None (everything), "training" (all but the two lists), "validation" or "testing".

    Raises ValueError for an unknown subset, RuntimeError when the folder is missing and
    ``download`` is False.
    """

    def __init__(self, root, url=URL, folder_in_archive=FOLDER_IN_ARCHIVE, download=False, subset=None):
        if subset is not None and subset not in ("training", "validation", "testing"):
            raise ValueError("When `subset` is not None, it must be one of ['training', 'validation', 'testing'], "
                             f"got {subset!r}.")
        if url in ("speech_commands_v0.01", "speech_commands_v0.02"):
            url = f"http://download.tensorflow.org/data/{url}.tar.gz"
        root = os.fspath(root)
        self._archive = os.path.join(root, folder_in_archive)
        basename = os.path.basename(url)
        self._path = os.path.join(root, folder_in_archive, basename.rsplit(".", 2)[0])
        if download and not os.path.isdir(self._path):
            archive = download_url(url, root, sha256=_CHECKSUMS.get(url))
            extract_archive(archive, self._path)
        if not os.path.exists(self._path):
            raise RuntimeError(f"The path {self._path} doesn't exist. Please check the ``root`` path or set "
                               f"`download=True` to download it")
        if subset == "validation":
            self._walker = _load_list(self._path, "validation_list.txt")
        elif subset == "testing":
            self._walker = _load_list(self._path, "testing_list.txt")
        else:
            excludes = set(_load_list(self._path, "validation_list.txt", "testing_list.txt")) if subset else set()
            walker = sorted(str(p) for p in Path(self._path).glob("*/*.wav"))
            self._walker = [w for w in walker if HASH_DIVIDER in w and EXCEPT_FOLDER not in w
                            and os.path.normpath(w) not in excludes]

    def get_metadata(self, n):
        """``(relative path, sample_rate, label, speaker_id, utterance_number)`` without decoding."""
        relpath = os.path.relpath(self._walker[n], self._archive)
        reldir, filename = os.path.split(relpath)
        label = os.path.basename(reldir)
        stem = os.path.splitext(os.path.splitext(filename)[0])[0]  # some test-set files end in .wav.wav
        speaker_id, utterance = stem.split(HASH_DIVIDER)
        return relpath, SAMPLE_RATE, label, speaker_id, int(utterance)

    def __getitem__(self, n):
        relpath, sample_rate, label, speaker_id, utterance = self.get_metadata(n)
        waveform = load_wave(os.path.join(self._archive, relpath), sample_rate)
        return waveform, sample_rate, label, speaker_id, utterance

    def __len__(self):
        return len(self._walker)
