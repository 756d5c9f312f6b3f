"""Small helpers shared by the audio tests."""

import numpy as np

import ember


def tensor(a):
    """An ember tensor holding a copy of the numpy array ``a``."""
    return ember.from_numpy(np.ascontiguousarray(a).copy())
