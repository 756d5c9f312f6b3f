"""Helpers shared by the model builders: fixed-parameter checks, channel rounding and the
legacy ``pretrained=`` keyword (as torchvision.models._utils behaves)."""

from __future__ import annotations

import functools
import hashlib
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from ._api import WeightsEnum

_MISSING = object()

__all__ = ["_ovewrite_named_param", "_ovewrite_value_param", "_make_divisible", "handle_legacy_interface",
           "_load_weights"]


def _ovewrite_named_param(kwargs: dict[str, Any], param: str, new_value: Any) -> None:
    """Pin ``kwargs[param]`` to ``new_value`` (weights fix e.g. ``num_classes``).

    Raises ValueError when the caller passed a different value.
    """
    given = kwargs.setdefault(param, new_value)
    if given != new_value:
        raise ValueError(f"The parameter '{param}' expected value {new_value} but got {given} instead.")


def _ovewrite_value_param(param: str, actual: Any, expected: Any) -> Any:
    """``expected``, after checking that ``actual`` (unless None) equals it; ValueError otherwise."""
    if actual is not None and actual != expected:
        raise ValueError(f"The parameter '{param}' expected value {expected} but got {actual} instead.")
    return expected


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """``v`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``, default
    ``divisor``), bumped up one step when rounding lost more than 10% (MobileNet's rule)."""
    floor = divisor if min_value is None else min_value
    rounded = max(floor, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


def _load_weights(model, weights: WeightsEnum | None, progress: bool):
    """Load ``weights`` (hash-checked download) into ``model`` when given; returns the model."""
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


def handle_legacy_interface(**legacy: tuple[str, Any]) -> Callable:
    """Builder decorator keeping torchvision's pre-0.13 calling conventions working, with a
    UserWarning each time:

    * positional arguments for the keyword-only parameters (``resnet18(None, True)``);
    * ``pretrained=True`` / ``pretrained=False`` instead of ``weights=``: True means the
      default weights (a member, or a callable of the keyword arguments returning one),
      False means ``weights=None``. ValueError when True and the model has no weights.

    Usage: ``@handle_legacy_interface(weights=("pretrained", ResNet18_Weights.IMAGENET1K_V1))``.
    """
    def decorate(builder: Callable) -> Callable:
        params = list(inspect.signature(builder).parameters.values())
        kwonly = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
        n_positional = next(i for i, p in enumerate(params) if p.kind is p.KEYWORD_ONLY)

        @functools.wraps(builder)
        def wrapper(*args: Any, **kwargs: Any):
            if len(args) > n_positional:
                moved = dict(zip(kwonly, args[n_positional:]))
                args = args[:n_positional]
                warnings.warn(f"Using {', '.join(repr(k) for k in moved)} as positional parameter(s) is "
                              "deprecated since 0.13 and may be removed in the future. Please use keyword "
                              "parameter(s) instead.", stacklevel=2)
                kwargs.update(moved)
            for weights_param, (old_param, default) in legacy.items():
                given = kwargs.get(weights_param, _MISSING)
                # new-style calls pass through untouched (a ``pretrained=`` beside them then
                # reaches the model class, which rejects it with a TypeError, as torchvision does)
                if (given is _MISSING and old_param not in kwargs) or given is None \
                        or isinstance(given, WeightsEnum) or (isinstance(given, str) and given != "legacy"):
                    continue
                positional = given is not _MISSING  # the old flag given in the ``weights`` slot
                flag = kwargs.pop(weights_param) if positional else kwargs.pop(old_param)
                if flag:
                    chosen = default if isinstance(default, WeightsEnum) or not callable(default) \
                        else default({old_param: flag, **kwargs})
                    if not isinstance(chosen, WeightsEnum):
                        raise ValueError(f"No weights available for model {builder.__name__}")
                else:
                    chosen = None
                if not positional:
                    warnings.warn(f"The parameter '{old_param}' is deprecated since 0.13 and may be removed in "
                                  f"the future, please use '{weights_param}' instead.", stacklevel=2)
                msg = (f"Arguments other than a weight enum or `None` for '{weights_param}' are deprecated since "
                       f"0.13 and may be removed in the future. The current behavior is equivalent to passing "
                       f"`{weights_param}={chosen}`.")
                if flag:
                    msg += (f" You can also use `{weights_param}={type(chosen).__name__}.DEFAULT` to get the most "
                            "up-to-date weights.")
                warnings.warn(msg, stacklevel=2)
                kwargs.pop(old_param, None)
                kwargs[weights_param] = chosen
            return builder(*args, **kwargs)
        return wrapper
    return decorate


def _check_sha256_prefix(path: str, prefix: str) -> None:
    """Raise RuntimeError unless the sha256 of the file at ``path`` starts with ``prefix``."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    if not digest.hexdigest().startswith(prefix):
        raise RuntimeError(f"invalid hash value for {path}: expected a sha256 starting with {prefix}, "
                           f"got {digest.hexdigest()}")
