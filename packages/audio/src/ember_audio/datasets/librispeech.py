"""LibriSpeech-style corpora (Panayotov et al., ICASSP 2015): ``<speaker>/<chapter>/
<speaker>-<chapter>-<utt>.flac`` with one ``<speaker>-<chapter>.trans.txt`` transcript file per
chapter (``<utterance id> <TRANSCRIPT>`` lines).  Source: torchaudio 2.8 ``datasets.LIBRISPEECH``."""

from __future__ import annotations

import os
from pathlib import Path

from ember.utils.data import Dataset

from .._io_helpers import load_wave
from .utils import download_url, extract_archive

__all__ = ["LIBRISPEECH"]

SAMPLE_RATE = 16000
_SUBSETS = ("dev-clean", "dev-other", "test-clean", "test-other", "train-clean-100", "train-clean-360",
            "train-other-500")
_CHECKSUMS = {
    "dev-clean": "76f87d090650617fca0cac8f88b9416e0ebf80350acb97b343a85fa903728ab3",
    "dev-other": "12661c48e8c3fe1de2c1caa4c3e135193bfb1811584f11f569dd12645aa84365",
    "test-clean": "39fde525e59672dc6d1551919b1478f724438a95aa55f874b576be21967e6c23",
    "test-other": "d09c181bba5cf717b3dee7d4d592af11a3ee3a09e08ae025c5506f6ebe961c29",
    "train-clean-100": "d4ddd1d5a6ab303066f14971d768ee43278a5f2a0aa43dc716b0e64ecbbbf6e2",
    "train-clean-360": "146a56496217e96c14334a160df97fffedd6e0a04e66b9c5af0d40be3c792ecf",
    "train-other-500": "ddb22f27f96ec163645d53215559df6aa36515f26e01dd70798188350adcb6d2",
}


class LIBRISPEECH(Dataset):
    """LibriSpeech (Panayotov et al., 2015; torchaudio.datasets.LIBRISPEECH): items are
    ``(waveform [1, time] float32, sample_rate (16000 Hz), transcript, speaker_id, chapter_id,
    utterance_id)``.

    Args:
        root: the folder holding ``folder_in_archive`` (and the downloaded archive).
        url: the subset ("train-clean-100", "dev-clean", "test-other", ...).
        folder_in_archive: the archive's top folder.
        download: fetch and unpack the subset from openslr.org (sha256-checked) when missing.

    Raises ValueError for an unknown subset when downloading, RuntimeError when the folder is
    missing, FileNotFoundError when an utterance has no transcript line.
    """

    _ext_txt = ".trans.txt"
    _ext_audio = ".flac"

    def __init__(self, root, url="train-clean-100", folder_in_archive="LibriSpeech", download=False):
        root = os.fspath(root)
        self._archive = os.path.join(root, folder_in_archive)
        self._path = os.path.join(self._archive, url)
        if download and not os.path.isdir(self._path):
            if url not in _SUBSETS:
                raise ValueError(f"Invalid url {url!r}: expected one of {list(_SUBSETS)}")
            archive = download_url(f"http://www.openslr.org/resources/12/{url}.tar.gz", root,
                                   sha256=_CHECKSUMS[url])
            extract_archive(archive, root)
        if not os.path.isdir(self._path):
            raise RuntimeError(f"Dataset not found at {self._path}. Please set `download=True` to download it.")
        self._walker = sorted(p.stem for p in Path(self._path).glob("*/*/*" + self._ext_audio))

    def get_metadata(self, n):
        """``(relative audio path, sample_rate, transcript, speaker_id, chapter_id, utterance_id)``."""
        fileid = self._walker[n]
        speaker, chapter, utterance = fileid.split("-")
        folder = os.path.join(self._path, speaker, chapter)
        with open(os.path.join(folder, f"{speaker}-{chapter}{self._ext_txt}")) as f:
            for line in f:
                key, _, transcript = line.strip().partition(" ")
                if key == fileid:
                    break
            else:
                raise FileNotFoundError(f"Translation not found for {fileid}")
        relpath = os.path.relpath(os.path.join(folder, fileid + self._ext_audio), self._archive)
        return relpath, SAMPLE_RATE, transcript, int(speaker), int(chapter), int(utterance)

    def __getitem__(self, n):
        relpath, sr, transcript, speaker, chapter, utterance = self.get_metadata(n)
        return load_wave(os.path.join(self._archive, relpath), sr), sr, transcript, speaker, chapter, utterance

    def __len__(self):
        return len(self._walker)
