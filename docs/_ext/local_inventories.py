"""intersphinx inventories read from this machine, so that the build needs no network.

Python's comes from Debian's ``python3-doc`` (its HTML documentation ships ``objects.inv``).
numpy publishes no offline inventory, so ``write_numpy_inventory`` writes one from the
installed numpy's namespace, pointing each name at the page numpy's reference gives it
(``reference/generated/numpy.<name>.html``; scalar types on ``reference/arrays.scalars.html``).
"""

from __future__ import annotations

import glob
import os
import zlib

NUMPY_URL = "https://numpy.org/doc/stable/"
PYTHON_URL = "https://docs.python.org/3/"


def python_inventory() -> str:
    """The path of Python's ``objects.inv`` from Debian's python3-doc.

    Raises:
        FileNotFoundError: python3-doc is not installed (``apt-get install python3-doc``).
    """
    found = sorted(glob.glob("/usr/share/doc/python3*/html/objects.inv"))
    if not found:
        raise FileNotFoundError("no /usr/share/doc/python3*/html/objects.inv: install Debian's python3-doc "
                                "(the docs session does)")
    return found[-1]


def _numpy_entries() -> list[str]:
    import numpy as np

    entries = []
    for name in sorted(n for n in dir(np) if not n.startswith("_")):
        obj = getattr(np, name)
        full = f"numpy.{name}"
        if isinstance(obj, type) and issubclass(obj, np.generic):
            entries.append(f"{full} py:class 1 reference/arrays.scalars.html#$ -")
        elif isinstance(obj, type):
            entries.append(f"{full} py:class 1 reference/generated/$.html#$ -")
        elif callable(obj):
            entries.append(f"{full} py:function 1 reference/generated/$.html#$ -")
    for name in ("ArrayLike", "DTypeLike", "NDArray"):
        entries.append(f"numpy.typing.{name} py:data 1 reference/typing.html#$ -")
    entries.append("numpy.random.Generator py:class 1 reference/random/generator.html#$ -")
    return entries


def write_numpy_inventory(path: str) -> str:
    """Write numpy's inventory (Sphinx's objects.inv version 2 format) to ``path``; return it."""
    import numpy as np

    header = ("# Sphinx inventory version 2\n# Project: NumPy\n"
              f"# Version: {np.__version__}\n# The remainder of this file is compressed using zlib.\n")
    body = "\n".join(_numpy_entries()) + "\n"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header.encode() + zlib.compress(body.encode()))
    os.replace(tmp, path)
    return path
