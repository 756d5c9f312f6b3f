"""Where the dynamic dims of an op's results come from.

A recorder with dynamic input dims needs, for every tensor the program makes, which of
its sizes are symbolic and how each is computed. ``result_dims`` answers per op family
from the call's arguments and the results' shapes, as a *source* per dynamic result dim:

- ``("dim", tensor, j)``: the size of dim ``j`` of an input (a batch dim passing through);
- ``("sym", expr)``: a symbolic size the program gave the op (``view(n, -1)``);
- ``("prod", [source or int, ...])``: their product (``flatten``);
- ``("infer", tensor, sizes, i)``: a ``view``'s ``-1`` at position ``i``: static when the
  symbolic sizes of ``tensor`` and of ``sizes`` cancel out, else the elements of ``tensor``
  over the product of the other sizes;
- ``None``: the result's own size, read from it at run time (a convolution's output
  length, a ``view``'s ``-1``).

The layout ops, reductions, products, convolutions and pools, the factories given sizes,
indexing, concatenation, splits and broadcasting ops have rules; any other op with a
dynamic input has every result dim dynamic with its own size: a static size read as
symbolic costs a node, a dynamic one read as static would be baked in.
"""

from __future__ import annotations

from ._symbolic_shapes import SymInt

__all__ = ["result_dims"]

_PERMUTING = {"transpose", "swapaxes", "swapdims", "t", "permute"}
_SIZED_VIEWS = {"view", "reshape", "_unsafe_view", "expand"}
_FACTORIES = {"zeros", "ones", "empty", "rand", "randn", "full"}
_NEW_FACTORIES = {"new_zeros", "new_ones", "new_empty", "new_full"}
_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "std", "var", "logsumexp", "argmax", "argmin",
               "norm", "all", "any", "nansum", "nanmean", "median", "count_nonzero"}
_PRODUCTS = {"matmul", "mm", "bmm"}
_SAME_AS_INPUT = {"batch_norm", "group_norm", "instance_norm", "layer_norm", "rms_norm", "local_response_norm"}
_SPLITS = {"split", "chunk", "unbind", "tensor_split", "split_with_sizes", "unsafe_split"}
_SEVERAL = {"max", "min", "median", "sort", "topk", "kthvalue", "mode", "cummax", "cummin", "var_mean", "std_mean",
            "aminmax"}
# ops whose result may have the broadcast shape while its dims come from other positions
_NOT_BROADCAST = ("index", "gather", "scatter", "take", "masked_select", "nonzero", "one_hot", "repeat", "tile",
                  "diag", "rot90", "movedim", "moveaxis", "einsum", "unfold", "fold", "tensordot", "kron", "outer",
                  "cross", "cdist", "bilinear", "grid")


def live_sym(x) -> bool:
    """A symbolic size of the recording running on this thread."""
    return isinstance(x, SymInt) and x.owner.is_current()


def _flat(value, out):
    if isinstance(value, (list, tuple)):
        for v in value:
            _flat(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flat(v, out)
    elif isinstance(value, slice):
        out.extend((value.start, value.stop, value.step))
    else:
        out.append(value)
    return out


def result_dims(name: str, args, kwargs, results, dims_of, is_tensor):
    """``(sources, specialize)``: for each tensor of ``results`` a dict ``{dim: source}`` of
    its dynamic dims, and the ``(tensor, dim)`` pairs whose size the op fixes (the number
    of pieces a split makes, a ``view`` to static sizes): the recorder guards those sizes
    as they are. ``dims_of(tensor)`` gives an input's dynamic dims."""
    leaves = _flat((args, kwargs), [])
    tensors = [x for x in leaves if is_tensor(x)]
    if not any(live_sym(x) for x in leaves) and not any(dims_of(t) for t in tensors):
        return [{} for _ in results], []
    first = tensors[0] if tensors else None
    try:
        out = _rule(name, args, kwargs, results, dims_of, tensors, first)
    except (IndexError, TypeError, ValueError, KeyError, AttributeError):
        out = None
    if out is None:
        return [dict.fromkeys(range(r.dim())) for r in results], []
    return out


def _arg(args, kwargs, pos, key, default=None):
    if key in kwargs:
        return kwargs[key]
    return args[pos] if len(args) > pos else default


def _sizes(args, kwargs, start, key):
    """A size list given as varargs from ``start`` or as one sequence (or keyword ``key``)."""
    if key in kwargs:
        value = kwargs[key]
    else:
        rest = args[start:]
        value = rest[0] if len(rest) == 1 and isinstance(rest[0], (list, tuple)) else rest
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _wrap(d, rank):
    return d % rank if rank else 0


def _through(x, dims_of, mapping):
    """``{out dim: ("dim", x, in dim)}`` for the dynamic dims of ``x`` that ``mapping``
    (in dim -> out dim or None) carries to the result."""
    out = {}
    for j in dims_of(x):
        i = mapping(j)
        if i is not None:
            out[i] = ("dim", x, j)
    return out


def _rule(name, args, kwargs, results, dims_of, tensors, first):
    n = len(results)
    if name in _SPLITS:
        x = first
        pos = 1 if name == "unbind" else 2
        dim = _wrap(_arg(args, kwargs, pos, "dim", 0), x.dim())
        fixed = [(x, dim)] if dim in dims_of(x) else []
        if name == "unbind":
            one = _through(x, dims_of, lambda j: None if j == dim else (j if j < dim else j - 1))
        else:
            one = _through(x, dims_of, lambda j: None if j == dim else j)
        return [dict(one) for _ in results], fixed
    if n != 1:
        if name in _SEVERAL:
            one = _rule_one(name, args, kwargs, results[0], dims_of, tensors, first)
            return None if one is None else ([dict(one[0]) for _ in results], one[1])
        return None
    one = _rule_one(name, args, kwargs, results[0], dims_of, tensors, first)
    return None if one is None else ([one[0]], one[1])


def _rule_one(name, args, kwargs, result, dims_of, tensors, first):
    """``({out dim: source}, specialize)`` for a one-result op, or None (no rule)."""
    rank = result.dim()
    shape = tuple(result.shape)
    if name in _PERMUTING:
        r = first.dim()
        if name == "t":
            perm = [1, 0] if r == 2 else list(range(r))
        elif name == "permute":
            perm = [_wrap(p, r) for p in _sizes(args, kwargs, 1, "dims")]
        else:
            a, b = _wrap(_arg(args, kwargs, 1, "dim0"), r), _wrap(_arg(args, kwargs, 2, "dim1"), r)
            perm = list(range(r))
            perm[a], perm[b] = perm[b], perm[a]
        return {i: ("dim", first, p) for i, p in enumerate(perm) if p in dims_of(first)}, []
    if name in _SIZED_VIEWS or name in _FACTORIES or name in _NEW_FACTORIES:
        return _sized(name, args, kwargs, rank, first, dims_of)
    if name == "flatten":
        r = first.dim()
        if r == 0:
            return {}, []
        start = _wrap(_arg(args, kwargs, 1, "start_dim", 0), r)
        end = _wrap(_arg(args, kwargs, 2, "end_dim", -1), r)
        d = dims_of(first)
        out = _through(first, dims_of, lambda j: j if j < start else (j - (end - start) if j > end else None))
        if any(start <= j <= end for j in d):
            out[start] = ("prod", [("dim", first, j) if j in d else first.shape[j] for j in range(start, end + 1)])
        return out, []
    if name == "unsqueeze":
        dim = _wrap(_arg(args, kwargs, 1, "dim"), rank)
        return _through(first, dims_of, lambda j: j if j < dim else j + 1), []
    if name == "squeeze":
        kept = [j for j in range(first.dim()) if not _squeezed(first, j, _arg(args, kwargs, 1, "dim"))]
        if len(kept) != rank:
            return None
        return {k: ("dim", first, j) for k, j in enumerate(kept) if j in dims_of(first)}, []
    if name in ("cat", "concat", "concatenate"):
        parts = [t for t in tensors if t.dim() == rank]
        dim = _wrap(_arg(args, kwargs, 1, "dim", 0), rank)
        out = {}
        for t in parts:
            for j in dims_of(t):
                if j != dim:
                    out.setdefault(j, ("dim", t, j))
        if any(dim in dims_of(t) for t in parts):
            out[dim] = None
        return out, []
    if name == "stack":
        dim = _wrap(_arg(args, kwargs, 1, "dim", 0), rank)
        out = {}
        for t in tensors:
            for j in dims_of(t):
                out.setdefault(j if j < dim else j + 1, ("dim", t, j))
        return out, []
    if name == "getitem":
        return _index(first, _arg(args, kwargs, 1, "index"), rank, dims_of)
    if name == "narrow":
        dim = _wrap(args[1], first.dim())
        out = _through(first, dims_of, lambda j: None if j == dim else j)
        length = args[3] if len(args) > 3 else kwargs.get("length")
        if live_sym(length):
            out[dim] = ("sym", length.expr)
        elif dim in dims_of(first):
            out[dim] = None
        return out, []
    if name in _SAME_AS_INPUT and shape == tuple(first.shape):
        return _through(first, dims_of, lambda j: j), []
    if name in ("interpolate", "upsample", "upsample_nearest", "upsample_bilinear") and first.dim() == rank:
        out = _through(first, dims_of, lambda j: j if j < 2 else None)
        size = _arg(args, kwargs, 1, "size")
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * (rank - 2)
        for i, s in enumerate(sizes):
            if live_sym(s):
                out[i + 2] = ("sym", s.expr)
            elif size is None and i + 2 in dims_of(first):
                out[i + 2] = None
        return out, []
    if name == "embedding":
        return _through(first, dims_of, lambda j: j), []
    if name == "linear":
        return _through(first, dims_of, lambda j: j if j < first.dim() - 1 else None), []
    if name in _PRODUCTS:
        return _product(tensors[0], tensors[1], rank, dims_of)
    if name.startswith(("conv", "max_pool", "avg_pool", "lp_pool")) and first.dim() == rank:
        out = _through(first, dims_of, lambda j: j if j == 0 or (j == 1 and not name.startswith("conv")) else None)
        out.update((j, None) for j in dims_of(first) if j >= 2)  # output lengths: read from the result
        return out, []
    if name.startswith("adaptive_") and first.dim() == rank:
        return _through(first, dims_of, lambda j: j if j < 2 else None), []
    if name in _REDUCTIONS and first is not None and len(tensors) == 1:
        return _reduce(first, args, kwargs, rank, dims_of)
    if any(k in name for k in _NOT_BROADCAST):
        return None
    out = _broadcast(tensors, shape, dims_of)
    if out is None and first is not None and shape == tuple(first.shape):
        # the shape of its first input (attention: the query's): its dims pass through
        return _through(first, dims_of, lambda j: j), []
    return out


def _sized(name, args, kwargs, rank, first, dims_of):
    if name in _SIZED_VIEWS:
        sizes = _sizes(args, kwargs, 1, "size" if name == "expand" else "shape")
    elif name in _NEW_FACTORIES:
        sizes = _sizes(args[:2] if name == "new_full" else args, kwargs, 1, "size")
    else:
        sizes = _sizes(args[:1] if name == "full" else args, kwargs, 0, "size")
    if len(sizes) != rank:
        return None
    viewed = dims_of(first) if first is not None and name in _SIZED_VIEWS else frozenset()
    out = {}
    for i, s in enumerate(sizes):
        if live_sym(s):
            out[i] = ("sym", s.expr)
        elif s == -1 and name == "expand":
            j = i - (rank - first.dim())
            if j >= 0 and j in viewed:
                out[i] = ("dim", first, j)
        elif s == -1 and viewed:
            out[i] = ("infer", first, sizes, i)  # static when the symbolic sizes cancel out
    fixed = []
    if viewed and name != "expand" and not out:  # static sizes for a symbolic number of elements
        fixed = [(first, j) for j in sorted(viewed)]
    if name == "expand":
        lead = rank - first.dim()
        fixed = [(first, j) for j in sorted(viewed) if j + lead not in out]  # a static size given for it
    return out, fixed


def _product(a, b, rank, dims_of):
    da, db = dims_of(a), dims_of(b)
    if a.dim() >= 2 and b.dim() >= 2:
        out = {}
        if a.dim() - 2 in da:
            out[rank - 2] = ("dim", a, a.dim() - 2)
        if b.dim() - 1 in db:
            out[rank - 1] = ("dim", b, b.dim() - 1)
        for t, dt in ((a, da), (b, db)):
            for j in dt:
                if j < t.dim() - 2 and t.shape[j] != 1:
                    out.setdefault(j + rank - t.dim(), ("dim", t, j))
        return out, []
    if b.dim() == 1 and a.dim() >= 2:
        return _through(a, dims_of, lambda j: j if j < a.dim() - 1 else None), []
    return None


def _squeezed(x, i, dim) -> bool:
    if x.shape[i] != 1:
        return False
    if dim is None:
        return True
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    return i in {_wrap(d, x.dim()) for d in dims}


def _reduce(x, args, kwargs, rank, dims_of):
    dim = _arg(args, kwargs, 1, "dim")
    keep = bool(_arg(args, kwargs, 2, "keepdim", False))
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        return {}, []
    if not isinstance(dim, (int, list, tuple)) or isinstance(dim, bool):
        return None
    reduced = {_wrap(d, x.dim()) for d in (dim if isinstance(dim, (list, tuple)) else [dim])}
    if keep:
        return (_through(x, dims_of, lambda j: None if j in reduced else j), []) if rank == x.dim() else None
    kept = [j for j in range(x.dim()) if j not in reduced]
    if len(kept) != rank:
        return None
    return {k: ("dim", x, j) for k, j in enumerate(kept) if j in dims_of(x)}, []


def _index(x, index, rank, dims_of):
    items = list(index) if isinstance(index, tuple) else [index]
    if any(not (i is None or i is Ellipsis or isinstance(i, (int, slice))) or isinstance(i, bool) for i in items):
        return None
    d = dims_of(x)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        used = sum(1 for i in items if i is not None and i is not Ellipsis)
        items[at:at + 1] = [slice(None)] * (x.dim() - used)
    items += [slice(None)] * (x.dim() - sum(1 for i in items if i is not None))
    out, pos, dim = {}, 0, 0
    for item in items:
        if item is None:
            pos += 1
            continue
        if isinstance(item, slice):
            if item == slice(None) and dim in d:
                out[pos] = ("dim", x, dim)
            elif dim in d or any(live_sym(v) for v in (item.start, item.stop, item.step)):
                out[pos] = None  # a slice's length: read from the result
            pos += 1
        dim += 1
    return (out, []) if pos == rank else None


def _broadcast(tensors, shape, dims_of):
    """Result dims of an op whose result has the broadcast shape of its tensor inputs."""
    rank = len(shape)
    broadcast = [1] * rank
    for t in tensors:
        if t.dim() > rank:
            return None
        for j, s in enumerate(t.shape):
            i = j + rank - t.dim()
            if s != 1:
                if broadcast[i] not in (1, s):
                    return None
                broadcast[i] = s
    if tuple(broadcast) != tuple(shape):
        return None
    out = {}
    for t in tensors:
        for j in dims_of(t):
            if t.shape[j] != 1:
                out.setdefault(j + rank - t.dim(), ("dim", t, j))
    for t in tensors:  # a symbolic size that is 1 now may broadcast to more later: read the result's
        for j in dims_of(t):
            out.setdefault(j + rank - t.dim(), None)
    return out, []
