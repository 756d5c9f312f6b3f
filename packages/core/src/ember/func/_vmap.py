"""``vmap``: a function of one example run on a batch, with batching rules on the dispatch
seam (one batched call per op, not a Python loop)."""

from __future__ import annotations

import functools
import warnings

from .._tensor import Tensor
from ..ops import _dispatch
from . import _batching_rules as rules
from ._batched import is_batched_at, pop_level, push_level, unwrap, wrap
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["vmap"]


class _VmapMode(_dispatch.Mode):
    """Routes the ops called with tensors batched at one level to their batching rules."""

    def __init__(self, level):
        self.level = level

    def __ember_op__(self, op, args, kwargs, proceed):
        level = self.level
        if not rules.has_level(args, kwargs, level):
            if op.name not in rules.RANDOM or level.randomness == "same":
                return proceed(args, kwargs)
            if level.randomness == "error":
                raise RuntimeError(rules.RANDOM_ERROR)
            if op.name.endswith("_"):
                raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This "
                                   "will appear like same randomness.")
            return _stack([proceed(args, kwargs) for _ in range(level.size)], level, op.name)  # a draw per example
        if op.name in rules.RANDOM:
            if level.randomness == "same":
                return rules.same_randomness(op, level, args, kwargs)
            out = rules.random_rule(op, level, args, kwargs, proceed)
        else:
            rule = rules.RULES.get(op.name)
            out = None if rule is None else rule(op, level, args, kwargs)
        if out is None:
            return _per_example(op, level, args, kwargs, quiet=op.name in rules.RULES)
        return out


_WARNED: set = set()


def _per_example(op, level, args, kwargs, quiet=False):
    """The op once per example, results stacked: for ops without a batching rule (with a
    warning, once per op) and for the cases a rule leaves to it."""
    if not quiet and op.name not in _WARNED:
        _WARNED.add(op.name)
        warnings.warn(f"There is a performance drop because ember has no batching rule for {op.name}: vmap runs it "
                      f"once per example.", UserWarning, stacklevel=4)

    def pick(x, b):
        if is_batched_at(x, level):
            return x._full.select(x._bdim, b)
        if isinstance(x, (list, tuple)) and any(is_batched_at(t, level) for t in x):
            return type(x)(pick(t, b) for t in x)
        return x

    results = [op.fn(*[pick(a, b) for a in args], **{k: pick(v, b) for k, v in kwargs.items()})
               for b in range(level.size)]
    if op.name.endswith("_") and args and is_batched_at(args[0], level):
        return args[0]  # in place: each example was written into the batch
    return _stack(results, level, op.name)


def _stack(results, level, name):
    from ..ops.shape import stack
    first = results[0]
    if isinstance(first, Tensor):
        return wrap(stack(results), 0, level)
    if isinstance(first, (tuple, list)):
        items = [_stack([r[i] for r in results], level, name) for i in range(len(first))]
        return type(first)(*items) if hasattr(first, "_fields") else type(first)(items)
    if first is None:
        return None
    raise RuntimeError(f"vmap: {name} returned a {type(first).__name__} that depends on the batch: vmap needs "
                       f"tensors (data-dependent Python values cannot be batched)")


def _broadcast_dims(dims, tree, name):
    """``dims`` (an int, None, or a structure matching a prefix of ``tree``) as one entry per leaf."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(tree_flatten(tree)[0])
    if isinstance(dims, (list, tuple)) and isinstance(tree, (list, tuple)) and len(dims) == len(tree):
        return [d for sub, t in zip(dims, tree) for d in _broadcast_dims(sub, t, name)]
    if isinstance(dims, dict) and isinstance(tree, dict) and set(dims) == set(tree):
        return [d for k in tree for d in _broadcast_dims(dims[k], tree[k], name)]
    raise ValueError(f"vmap({name}, in_dims={dims}, ...)(<inputs>): in_dims is not compatible with the structure of "
                     f"`inputs`. in_dims has structure {type(dims).__name__} but inputs has structure "
                     f"{type(tree).__name__}.")


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size: int | None = None):
    """``func`` mapped over a dimension of its inputs (torch.func.vmap).

    ``in_dims``: per positional argument (an int, None for an argument not mapped, or a
    nested structure matching the argument's tensors); keyword arguments are not mapped.
    ``out_dims``: where the batch dimension goes in each output (None: an output that
    does not depend on the batch). ``randomness``: "error" (random ops raise), "different"
    (a draw per example) or "same" (one draw shared by the examples). ``chunk_size``: run
    the batch in chunks of this many examples (None: all at once). vmap nests and composes
    with ``grad``, ``vjp`` and ``jacrev`` (per-example gradients: ``vmap(grad(f))``).

    Raises ValueError for in_dims that do not fit the inputs, a mapped dimension out of
    range, mapped sizes that differ, or no mapped input; RuntimeError where torch's vmap
    does (``.item()``, data-dependent control flow, random ops under "error")."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...): expected `in_dims` to be int or a (potentially "
                             f"nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
        if isinstance(in_dims, tuple) and len(in_dims) != len(args):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                             f"structure of `inputs`. in_dims has structure {len(in_dims)} entries but inputs has "
                             f"{len(args)}.")
        leaves, spec = tree_flatten(list(args))
        dims = _broadcast_dims(list(in_dims) if isinstance(in_dims, tuple) else in_dims, list(args), name)
        sizes = []
        for x, d in zip(leaves, dims):
            if d is None:
                continue
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                                 f"the input is of type {type(x)}. We cannot vmap over non-Tensor arguments, please "
                                 f"use None as the respective in_dim")
            if not -x.dim() <= d < max(x.dim(), 1) or x.dim() == 0:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                                 f"but that input is a Tensor of dimensionality {x.dim()} so expected in_dim to "
                                 f"satisfy -{x.dim()} <= in_dim < {x.dim()}.")
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input must be a Tensor "
                             f"with a mapped dimension (in_dims not None)")
        if len(set(sizes)) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        size = sizes[0]
        if chunk_size is not None and chunk_size < size:
            return _chunked(wrapped_once, leaves, dims, spec, kwargs, size, chunk_size, out_dims, name)
        return wrapped_once(leaves, dims, spec, kwargs, size)

    def wrapped_once(leaves, dims, spec, kwargs, size):
        level = push_level(size, randomness)
        mode = _VmapMode(level)
        try:
            with mode:
                batched = [x if d is None else wrap(x, d % x.dim(), level) for x, d in zip(leaves, dims)]
                out = func(*tree_unflatten(batched, spec), **kwargs)
        finally:
            pop_level(level)
        return _outputs(out, out_dims, level, name)

    return wrapped


def _chunked(run, leaves, dims, spec, kwargs, size, chunk_size, out_dims, name):
    from ..ops.shape import cat
    pieces = []
    for start in range(0, size, chunk_size):
        n = min(chunk_size, size - start)
        part = [x if d is None else x.narrow(d % x.dim(), start, n) for x, d in zip(leaves, dims)]
        pieces.append(tree_flatten(run(part, dims, spec, kwargs, n)))
    (first, out_spec), flat = pieces[0], [p[0] for p in pieces]
    where = _broadcast_dims(out_dims, tree_unflatten(first, out_spec), name)
    return tree_unflatten([f0 if d is None else cat([f[i] for f in flat], dim=d % f0.dim())
                           for i, (f0, d) in enumerate(zip(first, where))], out_spec)


def _outputs(out, out_dims, level, name):
    leaves, spec = tree_flatten(out)
    dims = _broadcast_dims(out_dims if not isinstance(out_dims, tuple) or not isinstance(out, tuple)
                           else out_dims, out, name)
    result = []
    for x, d in zip(leaves, dims):
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(x)}. Did you mean "
                             f"to set out_dims= to None for output?")
        if d is None:
            if is_batched_at(x, level):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            result.append(x)
            continue
        full = unwrap(x, level) if is_batched_at(x, level) else x.unsqueeze(0).expand(level.size, *x.shape)
        result.append(full.movedim(0, d % full.dim()) if d % full.dim() else full)
    return tree_unflatten(result, spec)
