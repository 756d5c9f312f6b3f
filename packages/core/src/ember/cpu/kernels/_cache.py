"""numba's cache locator for ember's own cache folder (``_runtime.cache_dir``).

numba files a kernel under ``<cache>/<folder>_<hash of the folder's absolute path>``, so
the same ember installed in two places (two virtual environments, a wheel and a checkout)
compiles every kernel again in each: about 100 s on a 2-core machine.  Ember's folder is
already named by a hash of the kernel sources and numba checks each file's content hash
before it loads a kernel, so the install path adds no safety and is left out here: a
kernel lives under ``<cache>/<folder name>`` wherever its module is installed. A second
install loads the first one's kernels with numba 0.68 or later; earlier versions (0.62 to
0.67 were tried) compile them again there.

Named in numba's ``CACHE_LOCATOR_CLASSES`` (by ``_runtime.jit``), and imported by numba
when a kernel is decorated, never by ``import ember``.
"""

from __future__ import annotations

import os

from numba.core import config
from numba.core.caching import UserProvidedCacheLocator


class InstallIndependentLocator(UserProvidedCacheLocator):
    """``UserProvidedCacheLocator`` without the hash of the source folder's absolute path."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        folder = os.path.basename(os.path.dirname(os.path.abspath(py_file)))
        self._cache_path = os.path.join(config.CACHE_DIR, folder)
