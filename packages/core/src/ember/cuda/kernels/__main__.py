"""``python -m ember.cuda.kernels --list-sources DIR``: write every kernel source that
lives in a Python string as ``DIR/<family>.cu``, a complete translation unit."""

from __future__ import annotations

import argparse
import os
import tempfile

from . import sources


def write_sources(directory: str) -> list[str]:
    """Write each family's source to ``directory`` (made if missing); returns the paths.
    Each file is written to a temporary name and renamed, so a reader never sees half of one."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for family, kernel in sources().items():
        path = os.path.join(directory, f"{family}.cu")
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{family}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(kernel.source)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        paths.append(path)
    return paths


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ember.cuda.kernels", description=__doc__)
    parser.add_argument("--list-sources", metavar="DIR", required=True,
                        help="the folder to write <family>.cu files into")
    args = parser.parse_args(argv)
    for path in write_sources(args.list_sources):
        print(path)


if __name__ == "__main__":
    main()
