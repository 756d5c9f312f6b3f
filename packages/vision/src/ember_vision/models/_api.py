"""The model registry and the pretrained-weights descriptors (torchvision.models._api).

* ``Weights``: url, a transforms factory and a meta dict for one set of weights.
* ``WeightsEnum``: base of every ``<Model>_Weights`` enum; ``.url``, ``.transforms``,
  ``.meta``, ``verify(obj)`` and ``get_state_dict(...)`` (a cached, hash-checked download
  through ``ember.hub.load_state_dict_from_url``).
* ``register_model(name=None)``, ``get_model``, ``get_model_builder``,
  ``get_model_weights``, ``get_weight``, ``list_models``.

Source: https://pytorch.org/vision/stable/models.html
"""

from __future__ import annotations

import fnmatch
import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from functools import partial
from types import ModuleType
from typing import Any, get_args

__all__ = ["WeightsEnum", "Weights", "register_model", "get_model", "get_model_builder", "get_model_weights",
           "get_weight", "list_models"]


@dataclass
class Weights:
    """One set of pretrained weights.

    Args:
        url: where the checkpoint lives; its file name reads ``<name>-<sha256 prefix>.pth``.
        transforms: a callable that builds the inference preprocessing (built on demand, since a
            transform object may hold state).
        meta: facts about the weights: ``categories``, ``num_params``, ``_metrics``, ``recipe``...
    """

    url: str
    transforms: Callable
    meta: dict[str, Any]

    def __eq__(self, other: Any) -> bool:
        # ``partial`` objects compare by identity, and Enum's deepcopy/unpickle looks the value
        # up by equality: compare a partial by what it would call instead.
        if not isinstance(other, Weights):
            return NotImplemented
        if self.url != other.url or self.meta != other.meta:
            return False
        a, b = self.transforms, other.transforms
        if isinstance(a, partial) and isinstance(b, partial):
            return (a.func, a.args, a.keywords) == (b.func, b.args, b.keywords)
        return a == b


class WeightsEnum(Enum):
    """Base of the ``<Model>_Weights`` enums; each member's value is a ``Weights``.

    A subclass may define ``DEFAULT = <member>`` (an Enum alias) naming the best weights.
    """

    @classmethod
    def verify(cls, obj: Any) -> Any:
        """``obj`` as a member of this enum.

        Accepts None (returned as is), a member, or its name as a string, with or without the
        class prefix (``"IMAGENET1K_V1"``, ``"ResNet18_Weights.IMAGENET1K_V1"``, ``"DEFAULT"``).

        Raises:
            TypeError: ``obj`` is a member of another enum or not a string.
            KeyError: a string naming no member of this enum.
        """
        if obj is None or isinstance(obj, cls):
            return obj
        if type(obj) is str:
            key = obj.removeprefix(cls.__name__ + ".")
            try:
                return cls[key]
            except KeyError:
                raise KeyError(f"{cls.__name__} has no member {key!r}; expected one of "
                               f"{sorted(cls.__members__)}") from None
        raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but received "
                        f"{obj.__class__.__name__}.")

    def get_state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The checkpoint at ``self.url``, downloaded once into the hub cache; the arguments
        are ``ember.hub.load_state_dict_from_url``'s (``progress=``, ``check_hash=``...)."""
        from ember.hub import load_state_dict_from_url
        return load_state_dict_from_url(self.url, *args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}.{self._name_}"

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def transforms(self) -> Callable:
        return self.value.transforms

    @property
    def meta(self) -> dict[str, Any]:
        return self.value.meta


# name -> builder; filled by ``register_model`` when the family modules are imported
BUILTIN_MODELS: dict[str, Callable[..., Any]] = {}


def register_model(name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator adding a builder to the registry under ``name`` (default: the function's name).

    Raises ValueError when the name is already taken.
    """
    def wrapper(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = name if name is not None else fn.__name__
        if key in BUILTIN_MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        BUILTIN_MODELS[key] = fn
        return fn
    return wrapper


def _as_patterns(filters: Iterable[str] | str) -> list[str]:
    return [filters] if isinstance(filters, str) else list(filters)


def list_models(module: ModuleType | None = None, include: Iterable[str] | str | None = None,
                exclude: Iterable[str] | str | None = None) -> list[str]:
    """The sorted names of the registered models.

    Args:
        module: keep only the builders defined directly in this package (e.g.
            ``ember_vision.models``); None keeps all.
        include: fnmatch pattern(s); a name is kept when it matches any of them.
        exclude: fnmatch pattern(s) applied after ``include``; a name matching any is dropped.
    """
    names = {k for k, fn in BUILTIN_MODELS.items()
             if module is None or fn.__module__.rsplit(".", 1)[0] == module.__name__}
    if include:
        names = {n for pat in _as_patterns(include) for n in fnmatch.filter(names, pat)}
    if exclude:
        for pat in _as_patterns(exclude):
            names -= set(fnmatch.filter(names, pat))
    return sorted(names)


def get_model_builder(name: str) -> Callable[..., Any]:
    """The builder registered under ``name`` (case-insensitive). Raises ValueError if unknown."""
    try:
        return BUILTIN_MODELS[name.lower()]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name: str, **config: Any):
    """``get_model_builder(name)(**config)``: the model registered under ``name``
    (case-insensitive) built with the keyword arguments ``config``, e.g.
    ``get_model("resnet18", weights=None)`` (torchvision.models.get_model). Raises ValueError
    for an unknown name."""
    return get_model_builder(name)(**config)


def _weights_enum_of(fn: Callable[..., Any]) -> type[WeightsEnum]:
    # the enum is read from the ``weights`` annotation (``Optional[ResNet18_Weights]``)
    try:
        sig = inspect.signature(fn, eval_str=True)
    except NameError:
        sig = inspect.signature(fn)
    if "weights" not in sig.parameters:
        raise ValueError("The method is missing the 'weights' argument.")
    ann = sig.parameters["weights"].annotation
    for t in (ann, *get_args(ann)):
        if isinstance(t, type) and issubclass(t, WeightsEnum):
            return t
    raise ValueError("The WeightsEnum class for the specific method couldn't be retrieved. "
                     "Make sure the typing info is correct.")


def get_model_weights(name: Callable[..., Any] | str) -> type[WeightsEnum]:
    """The ``WeightsEnum`` subclass of a builder, ``name`` being the builder or its registered
    name (torchvision.models.get_model_weights).

    Raises ValueError for an unknown name or a builder without a typed ``weights`` argument.
    """
    return _weights_enum_of(get_model_builder(name) if isinstance(name, str) else name)


def get_weight(name: str) -> WeightsEnum:
    """A weights member from its full ``name``, e.g. ``"ResNet50_Weights.IMAGENET1K_V1"``
    (torchvision.models.get_weight).

    The enum is looked up in ``ember_vision.models`` and its sub-packages.

    Raises:
        ValueError: the name is not ``<Enum>.<member>``, or no such enum exists.
        KeyError: the enum has no such member.
    """
    try:
        enum_name, member = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None
    base = importlib.import_module(__name__.rsplit(".", 1)[0])
    packages = [base] + [m for _, m in inspect.getmembers(base, inspect.ismodule)
                         if (getattr(m, "__file__", None) or "").endswith("__init__.py")]
    for pkg in packages:
        found = pkg.__dict__.get(enum_name)
        if isinstance(found, type) and issubclass(found, WeightsEnum):
            return found[member]
    raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")
