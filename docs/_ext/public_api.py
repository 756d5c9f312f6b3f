"""The public modules of every package and the public names of each: one source for the API
pages (``ember_api_pages``) and the docstring checker (``docs/check_docstrings.py``).

A module's public names are its ``__all__``; a module without one (``ember``,
``ember_vision.models``) offers every attribute whose name has no leading underscore and that
is neither a submodule nor a ``from __future__`` flag nor a class or function imported from
outside the package (``enum.Enum``), plus the names it resolves lazily in its ``__getattr__``
(listed in ``LAZY_NAMES``). A module that re-exports a standard-library module (``REEXPORTS``)
leaves out the names it takes from it unchanged: they are Python's API, and its page links
Python's documentation for them.
"""

from __future__ import annotations
import __future__

import importlib
import types

# package -> its public modules, in the order the API index lists them
PUBLIC_MODULES = {
    "ember-core": [
        "ember", "ember.nn", "ember.nn.functional", "ember.nn.init", "ember.nn.utils", "ember.nn.utils.rnn",
        "ember.nn.utils.parametrize", "ember.nn.utils.prune", "ember.nn.parallel", "ember.nn.attention",
        "ember.optim", "ember.optim.lr_scheduler", "ember.optim.swa_utils", "ember.utils.data",
        "ember.utils.checkpoint", "ember.utils.tensorboard", "ember.autograd", "ember.autograd.functional",
        "ember.linalg", "ember.fft", "ember.special", "ember.sparse", "ember.distributions", "ember.random",
        "ember.amp", "ember.func", "ember.fx", "ember.compiler", "ember._dynamo", "ember.jit", "ember.onnx",
        "ember.distributed", "ember.distributed.optim", "ember.distributed.algorithms", "ember.futures",
        "ember.multiprocessing",
        "ember.profiler", "ember.cuda", "ember.accelerator", "ember.serialization",
        "ember.sharded", "ember.hub", "ember.compat", "ember.testing",
    ],
    "ember-vision": [
        "ember_vision", "ember_vision.datasets", "ember_vision.transforms", "ember_vision.transforms.functional",
        "ember_vision.models", "ember_vision.models.detection", "ember_vision.io", "ember_vision.ops",
        "ember_vision.utils",
    ],
    "ember-text": [
        "ember_text", "ember_text.tokenization", "ember_text.vocab", "ember_text.transforms",
        "ember_text.functional", "ember_text.data.utils", "ember_text.datasets", "ember_text.models",
    ],
    "ember-audio": [
        "ember_audio", "ember_audio.io", "ember_audio.functional", "ember_audio.transforms",
        "ember_audio.compliance.kaldi", "ember_audio.datasets", "ember_audio.models", "ember_audio.models.decoder",
        "ember_audio.pipelines",
    ],
    "ember-serve": ["ember_serve", "ember_serve.archive", "ember_serve.handlers", "ember_serve.server"],
}

# names a module answers through its module-level __getattr__ (absent from dir())
LAZY_NAMES = {
    "ember": ["compile", "save", "load", "sparse_coo_tensor"],
}


# module -> the standard-library module whose names it re-exports (torch.multiprocessing is
# Python's multiprocessing plus names of its own)
REEXPORTS = {
    "ember.multiprocessing": "multiprocessing",
}


def all_modules() -> list[str]:
    return [m for mods in PUBLIC_MODULES.values() for m in mods]


def public_names(module_name: str) -> list[str]:
    """The public names of ``module_name``, in ``__all__``'s order or sorted; dunders left out."""
    module = importlib.import_module(module_name)
    declared = getattr(module, "__all__", None)
    if declared is not None:
        names = list(dict.fromkeys(declared))
    else:
        top = module_name.split(".")[0]
        names = sorted(n for n, obj in vars(module).items() if not n.startswith("_") and _defined_in(obj, top))
        names += [n for n in LAZY_NAMES.get(module_name, []) if n not in names]
    reexported = set(reexported_names(module_name))
    return [n for n in names
            if not n.startswith("__") and n not in reexported and _is_documentable(getattr(module, n))]


def reexported_names(module_name: str) -> list[str]:
    """The names of ``module_name``'s ``__all__`` bound to the very objects of the standard-library
    module ``REEXPORTS`` gives it (none for another module)."""
    if module_name not in REEXPORTS:
        return []
    module, origin = importlib.import_module(module_name), importlib.import_module(REEXPORTS[module_name])
    absent = object()
    return [n for n in getattr(module, "__all__", []) if getattr(origin, n, absent) is getattr(module, n)]


def _defined_in(obj, package: str) -> bool:
    # a class or function imported from elsewhere (enum.Enum, typing's names) is not this
    # module's API; data has no home module and stays
    home = getattr(obj, "__module__", None) if isinstance(obj, type) or callable(obj) else None
    return home is None or home == package or home.startswith(package + ".")


def _is_documentable(obj) -> bool:
    return not isinstance(obj, (types.ModuleType, __future__._Feature))


def kind(obj) -> str:
    """``class``, ``function`` (any other callable) or ``data``."""
    if isinstance(obj, type):
        return "class"
    if callable(obj):
        return "function"
    return "data"
