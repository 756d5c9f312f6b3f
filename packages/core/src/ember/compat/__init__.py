"""Run PyTorch programs unmodified: ``torch``, ``torchvision``, ``torchaudio`` and
``torchtext`` (and all their submodules) resolve to ember's packages.

    python -m ember.compat train.py --epochs 3     # a script, as ``python train.py`` would
    python -m ember.compat -m mypackage.train      # a module, as ``python -m`` would

or, in a notebook or a program that imports it first::

    import ember.compat
    ember.compat.install()
    import torch.nn as nn                          # ember.nn

Nothing is aliased until ``install()`` is called: a venv holding real torch beside ember
keeps working. The alias is an import hook at the front of ``sys.meta_path``: ``torch.X``
is the very module ``ember.X`` (``torch.nn is ember.nn``), so objects, isinstance checks
and pickled references agree. A name whose ember package is not installed fails to import
with a message naming the distribution to install. Processes started with the ``spawn``
method (``torch.multiprocessing.spawn``, DataLoader workers under ``spawn``) install the
alias before they import the program's main module, as the parent has it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import multiprocessing.spawn
import sys

__all__ = ["install", "uninstall", "is_installed", "ALIASES"]

# torch's package -> (ember's package, the distribution that holds it, its folder in the checkout)
ALIASES = {
    "torch": ("ember", "ember-core", "packages/core"),
    "torchvision": ("ember_vision", "ember-vision", "packages/vision"),
    "torchaudio": ("ember_audio", "ember-audio", "packages/audio"),
    "torchtext": ("ember_text", "ember-text", "packages/text"),
}


class _Existing(importlib.abc.Loader):
    """Hands the import system a module that is already imported (ember's)."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        top, _, rest = fullname.partition(".")
        if top not in ALIASES:
            return None
        package, dist, folder = ALIASES[top]
        target_name = package + ("." + rest if rest else "")
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as e:
            if e.name == package:
                raise ModuleNotFoundError(
                    f"No module named {fullname!r}: under ember it is {package!r}, from the {dist} distribution "
                    f"(pip install {dist}, or ./{folder} from ember's checkout)", name=fullname) from None
            if e.name == target_name:
                raise ModuleNotFoundError(f"No module named {fullname!r} (ember has no {target_name!r})",
                                          name=fullname) from None
            raise
        return importlib.machinery.ModuleSpec(fullname, _Existing(module), is_package=hasattr(module, "__path__"))


_FINDER = _AliasFinder()


def is_installed() -> bool:
    """Whether ``install()`` is in effect: ``import torch`` gives ember."""
    return _FINDER in sys.meta_path


def install() -> None:
    """Make ``import torch`` (and torchvision, torchaudio, torchtext) give ember's packages.

    Raises RuntimeError when one of those names is already imported as another package (a
    program that imported real torch first would then hold two different ``torch``)."""
    for name in ALIASES:
        module = sys.modules.get(name)
        if module is not None and module.__name__ == name:
            raise RuntimeError(f"{name!r} is already imported from {getattr(module, '__file__', '?')}: install "
                               f"ember's alias before anything imports {name}")
    if not is_installed():
        sys.meta_path.insert(0, _FINDER)
        multiprocessing.spawn.get_command_line = _command_line_with_alias


def uninstall() -> None:
    """Remove the alias and the aliased names from ``sys.modules`` (ember's modules stay)."""
    if is_installed():
        sys.meta_path.remove(_FINDER)
        multiprocessing.spawn.get_command_line = _plain_command_line
    for name in list(sys.modules):
        top = name.partition(".")[0]
        if top in ALIASES and sys.modules[name].__name__ != name:
            del sys.modules[name]


_plain_command_line = multiprocessing.spawn.get_command_line


def _command_line_with_alias(**kwds):
    """multiprocessing's command line for a spawned child, whose ``-c`` program first installs
    the alias: the child re-imports the program's main module, which imports ``torch``."""
    line = _plain_command_line(**kwds)
    if "-c" in line:
        i = line.index("-c") + 1
        line[i] = "import ember.compat; ember.compat.install(); " + line[i]
    return line
