"""``python -m ember.compat [-m MODULE | SCRIPT] [ARGS...]``: run a PyTorch program on ember.

The program sees what it would see run directly: ``sys.argv`` (its own path or module name
first), ``__name__ == "__main__"``, ``__file__``, its directory first on ``sys.path``, and a
traceback that starts at its own code. ``--version`` prints the versions ember reports.
"""

from __future__ import annotations

import builtins
import importlib
import os
import runpy
import sys
import traceback
import types

from . import ALIASES, install

USAGE = "usage: python -m ember.compat [--version] [-m MODULE | SCRIPT] [ARGS...]"


def _versions() -> str:
    import ember

    lines = [f"torch API {ember.version.TORCH_API_VERSION} (torch.__version__ reads {ember.__version__})",
             f"ember-core {ember.version.EMBER_VERSION}"]
    for alias, (package, dist, _) in sorted(ALIASES.items()):
        if alias == "torch":
            continue
        try:
            module = importlib.import_module(package)
            lines.append(f"{alias}: {dist} {getattr(module, '__version__', '?')}")
        except ImportError:
            lines.append(f"{alias}: not installed ({dist})")
    return "\n".join(lines)


def _run(argv: list[str]) -> None:
    if argv[0] == "-m":
        if len(argv) < 2:
            raise SystemExit(USAGE)
        sys.argv = [argv[1], *argv[2:]]  # runpy replaces argv[0] by the module's path
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        script = argv[0]
        if not os.path.exists(script):
            raise SystemExit(f"python -m ember.compat: can't open file {script!r}: no such file")
        # as ``python SCRIPT`` does: argv[0] as given, an absolute __file__, a fresh __main__
        path = os.path.abspath(script)
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        main = types.ModuleType("__main__")
        main.__file__, main.__builtins__ = path, builtins
        sys.modules["__main__"] = main
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(path))
        exec(code, main.__dict__)


_LAUNCHER_FILES = {os.path.abspath(__file__), os.path.abspath(runpy.__file__), "<frozen runpy>"}


def _program_frames(tb):
    """The traceback from the program's first frame on: this module's and runpy's frames cut."""
    while tb is not None and (tb.tb_frame.f_code.co_filename in _LAUNCHER_FILES
                              or os.path.abspath(tb.tb_frame.f_code.co_filename) in _LAUNCHER_FILES):
        tb = tb.tb_next
    return tb


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        print(__doc__.split("\n\n")[1])
        raise SystemExit(0 if argv else 2)
    if argv[0] == "--version":
        print(_versions())
        return
    install()
    try:
        _run(argv)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:  # noqa: BLE001  (shown as Python shows an uncaught exception, then exit 1)
        traceback.print_exception(type(e), e, _program_frames(e.__traceback__))
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
