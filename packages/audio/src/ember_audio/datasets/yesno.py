"""The YesNo dataset (OpenSLR 1): 60 recordings of one speaker saying eight "yes"/"no" words,
each file named by its labels, e.g. ``0_1_0_0_1_0_1_1.wav`` (8 kHz).  Source: torchaudio 2.8
``datasets.YESNO``."""

from __future__ import annotations

import os
from pathlib import Path

from ember.utils.data import Dataset

from .._io_helpers import load_wave
from .utils import download_url, extract_archive

__all__ = ["YESNO"]

_URL = "http://www.openslr.org/resources/1/waves_yesno.tar.gz"
_SHA256 = "c3f49e0cca421f96b75b41640749167b52118f232498667ca7a5f9416aef8e73"


class YESNO(Dataset):
    """YesNo (torchaudio.datasets.YESNO): 60 recordings of eight Hebrew yes/no words at 8 kHz;
    items are ``(waveform [1, time] float32, sample_rate, labels: list of 8 ints (1 = yes))``.

    Args:
        root: the folder holding ``folder_in_archive`` (and the downloaded archive).
        url: the archive's address (openslr.org's by default; only that one is sha256-checked).
        folder_in_archive: the archive's top folder.
        download: fetch and unpack the archive when the folder is missing.

    Raises RuntimeError when ``root/folder_in_archive`` is missing and ``download`` is False.
    """

    def __init__(self, root, url=_URL, folder_in_archive="waves_yesno", download=False):
        self._path = os.path.join(os.fspath(root), folder_in_archive)
        if download and not os.path.isdir(self._path):
            archive = download_url(url, os.fspath(root), sha256=_SHA256 if url == _URL else None)
            extract_archive(archive, os.fspath(root))
        if not os.path.isdir(self._path):
            raise RuntimeError(f"Dataset not found at {self._path}. Please set `download=True` to download it.")
        self._walker = sorted(p.stem for p in Path(self._path).glob("*.wav"))

    def get_metadata(self, n):
        """``(file name, sample_rate, labels)`` without decoding (the rate is read from the header)."""
        from ..io import info
        fileid = self._walker[n]
        name = f"{fileid}.wav"
        return name, info(os.path.join(self._path, name)).sample_rate, [int(c) for c in fileid.split("_")]

    def __getitem__(self, n):
        name, sample_rate, labels = self.get_metadata(n)
        return load_wave(os.path.join(self._path, name), sample_rate), sample_rate, labels

    def __len__(self):
        return len(self._walker)
