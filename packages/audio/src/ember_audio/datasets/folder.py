"""A generic class-per-folder audio dataset (the audio counterpart of torchvision's ImageFolder)
and a collate function that pads variable-length waveforms and returns their lengths."""

from __future__ import annotations

import os

import ember
from ember.utils.data import Dataset

from ..functional import resample
from ..io import load

__all__ = ["AudioFolder", "pad_collate"]

AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".mp3", ".aiff", ".aif", ".au")


class AudioFolder(Dataset):
    """``root/<class>/<file>`` audio files; items are ``(waveform [channels, time], class index)``.

    Args:
        root: the folder of class folders (sorted names give indices 0, 1, ...).
        sample_rate: resample every file to this rate (Hz) when given; otherwise files keep theirs.
        transform: applied to the waveform.
        target_transform: applied to the class index.
        extensions: file endings to include (case-insensitive).

    Attributes: ``classes``, ``class_to_idx``, ``samples`` (path, index) as ImageFolder's.
    Raises FileNotFoundError when ``root`` has no class folder holding audio files.
    """

    def __init__(self, root, sample_rate=None, transform=None, target_transform=None, extensions=AUDIO_EXTENSIONS):
        self.root = os.fspath(root)
        self.sample_rate = sample_rate
        self.transform = transform
        self.target_transform = target_transform
        exts = tuple(e.lower() for e in extensions)
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"no such folder: {self.root!r}")
        self.classes = sorted(d.name for d in os.scandir(self.root) if d.is_dir())
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self.samples = []
        for c in self.classes:
            for dirpath, _, files in sorted(os.walk(os.path.join(self.root, c), followlinks=True)):
                for f in sorted(files):
                    if f.lower().endswith(exts):
                        self.samples.append((os.path.join(dirpath, f), self.class_to_idx[c]))
        if not self.samples:
            raise FileNotFoundError(f"found no audio files ({', '.join(exts)}) in the class folders of {self.root!r}")
        self.targets = [t for _, t in self.samples]

    def __getitem__(self, index):
        path, target = self.samples[index]
        waveform, rate = load(path)
        if self.sample_rate is not None and rate != self.sample_rate:
            waveform = resample(waveform, rate, self.sample_rate)
        if self.transform is not None:
            waveform = self.transform(waveform)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return waveform, target

    def __len__(self):
        return len(self.samples)


def pad_collate(batch, padding_value=0.0):
    """Collate ``(waveform [channels, time], *fields)`` items of different lengths into
    ``(waveforms [batch, channels, max_time], lengths [batch] int64, *fields collated)``:
    waveforms are right-padded with ``padding_value``; the other fields go through
    ``default_collate``.  ``batch`` is the list of items (an item may also be a bare
    waveform, giving ``(waveforms, lengths)``).  Raises ValueError when channel counts differ."""
    from ember.utils.data import default_collate
    waves = [item[0] if isinstance(item, (tuple, list)) else item for item in batch]
    channels = {tuple(w.shape[:-1]) for w in waves}
    if len(channels) != 1:
        raise ValueError(f"waveforms must share their leading shape, got {sorted(channels)}")
    lengths = ember.tensor([w.shape[-1] for w in waves], dtype=ember.int64)
    longest = int(lengths.max())
    out = ember.full((len(waves),) + tuple(waves[0].shape[:-1]) + (longest,), padding_value, dtype=waves[0].dtype)
    for i, w in enumerate(waves):
        out[i, ..., :w.shape[-1]] = w
    if not isinstance(batch[0], (tuple, list)):
        return out, lengths
    rest = [default_collate([item[k] for item in batch]) for k in range(1, len(batch[0]))]
    return (out, lengths, *rest)
