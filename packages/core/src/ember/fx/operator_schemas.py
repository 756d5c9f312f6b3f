"""Argument normalization (torch.fx.operator_schemas): match a call's args/kwargs to the
callee's signature, fill in defaults, and return them positionally or all as keywords."""

from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

from ._compatibility import compatibility

__all__ = ["ArgsKwargsPair", "normalize_function", "normalize_module"]


@compatibility(is_backward_compatible=True)
class ArgsKwargsPair(NamedTuple):
    """Normalized ``args`` (tuple) and ``kwargs`` (dict)."""
    args: tuple
    kwargs: dict


_SUPPORTED_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _args_kwargs_to_normalized_args_kwargs(sig: inspect.Signature, args: tuple, kwargs: dict,
                                           normalize_to_only_use_kwargs: bool) -> ArgsKwargsPair | None:
    """Bind to ``sig`` with defaults applied; as many leading parameters as there were
    positional arguments stay positional (none when ``normalize_to_only_use_kwargs``).
    None for signatures with positional-only or variadic parameters, as torch."""
    if any(p.kind not in _SUPPORTED_KINDS for p in sig.parameters.values()):
        return None
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    new_args, new_kwargs = [], {}
    for i, name in enumerate(sig.parameters):
        if not normalize_to_only_use_kwargs and i < len(args):
            new_args.append(bound.arguments[name])
        else:
            new_kwargs[name] = bound.arguments[name]
    return ArgsKwargsPair(tuple(new_args), new_kwargs)


@compatibility(is_backward_compatible=False)
def normalize_function(target: Callable[..., Any], args: tuple, kwargs: dict | None = None,
                       arg_types: tuple | None = None, kwarg_types: dict | None = None,
                       normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """``target``'s call normalized against its Python signature (ember's ops are Python
    functions, so no overload schemas are needed: ``arg_types``/``kwarg_types`` are
    accepted and unused). None when the signature cannot be read or has ``*args``,
    ``**kwargs`` or positional-only parameters; ``TypeError`` when the call does not bind."""
    try:
        sig = inspect.signature(inspect.unwrap(target))
    except (TypeError, ValueError):
        return None
    return _args_kwargs_to_normalized_args_kwargs(sig, args, kwargs or {}, normalize_to_only_use_kwargs)


@compatibility(is_backward_compatible=False)
def normalize_module(root, target: str, args: tuple, kwargs: dict | None = None,
                     normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """A call of submodule ``target`` of ``root`` normalized against its ``forward``; only
    for ember.nn's own module classes (None for others), as torch limits it to torch.nn's.
    ``RuntimeError`` when ``root`` has no such submodule."""
    from .. import nn
    try:
        submod = root.get_submodule(target)
    except AttributeError as e:
        raise RuntimeError(f"Tried to normalize node with target {target} but root did not have that target!") from e
    cls = type(submod)
    if getattr(nn, cls.__name__, None) is cls:
        sig = inspect.signature(inspect.unwrap(submod.forward))
        return _args_kwargs_to_normalized_args_kwargs(sig, args, kwargs or {}, normalize_to_only_use_kwargs)
    return None
