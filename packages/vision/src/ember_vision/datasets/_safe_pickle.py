"""Loading the python-pickle files of datasets (CIFAR batches) without running code.

A pickle names the callables that rebuild its objects; this unpickler resolves only
numpy's array, dtype and scalar reconstructors (and the bytes decoder protocol-2 files
use), so a file can build dicts, lists, tuples, str, bytes, numbers and numpy arrays,
and nothing else. Any other name is refused before it is imported.
"""

from __future__ import annotations

import _codecs
import os
import pickle

import numpy as np

try:  # numpy >= 2 keeps the reconstructors in numpy._core; files written by numpy 1 name numpy.core
    from numpy._core import multiarray as _multiarray
    from numpy._core import numeric as _numeric
except ImportError:  # pragma: no cover - numpy 1.x
    from numpy.core import multiarray as _multiarray
    from numpy.core import numeric as _numeric

_ALLOWED = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype, ("_codecs", "encode"): _codecs.encode}
for _package in ("numpy.core", "numpy._core"):
    _ALLOWED[(_package + ".multiarray", "_reconstruct")] = _multiarray._reconstruct
    _ALLOWED[(_package + ".multiarray", "scalar")] = _multiarray.scalar
    _ALLOWED[(_package + ".numeric", "_frombuffer")] = _numeric._frombuffer


class _DataOnlyUnpickler(pickle.Unpickler):
    def __init__(self, file, source: str, **kwargs) -> None:
        super().__init__(file, **kwargs)
        self._source = source

    def find_class(self, module: str, name: str):
        obj = _ALLOWED.get((module, name))
        if obj is None:
            raise pickle.UnpicklingError(
                f"{self._source}: refusing to load {module}.{name}; only plain data and numpy arrays "
                "(numpy's array, dtype and scalar reconstructors) are allowed in a dataset file")
        return obj

    def persistent_load(self, pid):
        raise pickle.UnpicklingError(f"{self._source}: persistent ids are not allowed in a dataset file")


def load_data_pickle(path, encoding: str = "latin1"):
    """The object stored in the pickle file ``path``, built without running code.

    ``encoding`` decodes the byte strings of Python 2 pickles (latin1 keeps every byte).

    Raises:
        pickle.UnpicklingError: the file names any callable other than numpy's
            array reconstructors, or is not a valid pickle.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        try:
            obj = _DataOnlyUnpickler(f, path, encoding=encoding).load()
        except (EOFError, ValueError, TypeError, KeyError, IndexError) as e:
            raise pickle.UnpicklingError(f"{path} is not a valid data pickle: {e!r}") from e
    return obj
