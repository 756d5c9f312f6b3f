"""Running a module on parameters and buffers passed in (torch.func.functional_call,
stack_module_state)."""

from __future__ import annotations

import contextlib

__all__ = ["functional_call", "stack_module_state"]


def _owner(module, dotted: str):
    """(submodule, attribute name) of a dotted parameter or buffer name."""
    *path, attr = dotted.split(".")
    for part in path:
        module = getattr(module, part)
    return module, attr


@contextlib.contextmanager
def _swapped(module, tensors: dict):
    """Within the block, ``module``'s parameters and buffers named in ``tensors`` are those
    tensors (stored in the owning module's parameter or buffer table, so forward reads them
    as its attributes); the originals come back afterwards, whatever happens."""
    saved = []
    try:
        for name, value in tensors.items():
            owner, attr = _owner(module, name)
            table = owner._parameters if attr in owner._parameters else owner._buffers if attr in owner._buffers \
                else None
            if table is None:
                saved.append((owner.__dict__, attr, owner.__dict__.get(attr, _MISSING)))
                owner.__dict__[attr] = value
            else:
                saved.append((table, attr, table[attr]))
                table[attr] = value
        yield
    finally:
        for table, attr, old in reversed(saved):
            if old is _MISSING:
                del table[attr]
            else:
                table[attr] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the tensors in
    ``parameter_and_buffer_dicts`` (a dict of name -> tensor, or a tuple of such dicts, which
    must not share keys). Names not given keep the module's own. With ``tie_weights``, a
    tensor given for one of several names sharing a parameter replaces all of them. With
    ``strict``, the names must be exactly the module's. ``args`` is a tuple of positional
    arguments (a single non-tuple value is one argument), ``kwargs`` a dict of keyword
    ones (torch.func.functional_call).

    Raises ValueError for keys in several dicts and RuntimeError (torch's message) for
    unexpected or missing keys under ``strict``."""
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (tuple, list)) else (
        parameter_and_buffer_dicts,)
    tensors: dict = {}
    for d in dicts:
        repeated = [k for k in d if k in tensors]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        tensors.update(d)
    names = [n for n, _ in module.named_parameters(remove_duplicate=False)] + \
        [n for n, _ in module.named_buffers(remove_duplicate=False)]
    if strict:
        unexpected = [k for k in tensors if k not in names]
        missing = [k for k in names if k not in tensors]
        if unexpected or missing:
            lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if unexpected:
                lines.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
            if missing:
                lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in sorted(missing)) + ".")
            raise RuntimeError("\n".join(lines))
    if tie_weights:
        groups: dict = {}
        for name, p in list(module.named_parameters(remove_duplicate=False)) + list(
                module.named_buffers(remove_duplicate=False)):
            groups.setdefault(id(p), []).append(name)
        for group in groups.values():
            given = [n for n in group if n in tensors]
            if given:
                for n in group:
                    tensors.setdefault(n, tensors[given[0]])
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, tensors):
        return module(*args, **(kwargs or {}))


def stack_module_state(models):
    """``(params, buffers)``: each name's tensors of ``models`` (modules of one layout)
    stacked along a new first dimension; the stacked parameters are new leaves that require
    grad where the originals do (torch.func.stack_module_state).

    Raises RuntimeError for an empty list or models of different layouts."""
    from ..ops.shape import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first_names = [n for n, _ in models[0].named_parameters()]
    if any([n for n, _ in m.named_parameters()] != first_names for m in models):
        raise RuntimeError("stack_module_state: Expected all models to have the same parameter names.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {name: stack([p[name].detach() for p in all_params]).requires_grad_(
        all(p[name].requires_grad for p in all_params)) for name in first_names}
    buffers = {name: stack([b[name] for b in all_buffers]) for name in all_buffers[0]}
    return params, buffers
