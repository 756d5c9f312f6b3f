"""vmap's batching rules: how each op runs once on a whole batch.

A rule receives the op, the vmap level, and the call's arguments, in which tensors batched
at that level are ``BatchedTensor``s; it calls ops on the batches (``unwrap``: the batch
dimension first) and wraps the results back. The ops a rule calls are dispatched again,
so an outer vmap level, autocast or the profiler see them as any other call. Kinds:

- elementwise: batched arguments get singleton dimensions after the batch dimension so
  that they broadcast as one example's arguments do;
- batch-first: ops that act on trailing dimensions (linear algebra, layer norm) take the
  batch as one more leading dimension;
- dimension ops: dimension arguments are wrapped against one example's rank and shifted
  past the batch dimension; ``dim=None`` (all dimensions) runs on the batch flattened per
  example;
- batch-as-N: convolution and pooling fold the batch into the N dimension (or a batched
  weight into groups);
- decompositions (dot, outer, addmm, ...): the op rewritten as ops that have rules;
- losses: computed with ``reduction="none"`` and reduced per example;
- random ops follow vmap's ``randomness`` ("error", "different", "same").

An op without a rule is run once per example by the caller, with a warning.
"""

from __future__ import annotations

import inspect
import string

from .._tensor import Tensor
from ._batched import BatchedTensor, is_batched_at, unwrap, wrap

__all__ = ["RULES", "has_level"]

RULES: dict = {}


def has_level(args, kwargs, level) -> bool:
    for a in (*args, *kwargs.values()):
        if type(a) is BatchedTensor:
            if a._level is level:
                return True
        elif isinstance(a, (list, tuple)):
            for x in a:
                if type(x) is BatchedTensor and x._level is level:
                    return True
    return False


# ---- helpers -----------------------------------------------------------------------

_SIGNATURES: dict = {}


def _bind(op, args, kwargs):
    sig = _SIGNATURES.get(op.name)
    if sig is None:
        sig = _SIGNATURES[op.name] = inspect.signature(op.impl)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound


def _call(op, bound):
    return op.fn(*bound.args, **bound.kwargs)


def wrap_out(out, level):
    if isinstance(out, Tensor):
        return wrap(out, 0, level)
    if isinstance(out, tuple):
        items = [wrap_out(o, level) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    if isinstance(out, list):
        return [wrap_out(o, level) for o in out]
    return out


def _rank(x) -> int:
    return x.dim() if isinstance(x, Tensor) else 0


def _pad(full, example_rank, rank):
    """A batch ``[B, *example]`` with singleton dims after B, to ``rank`` example dims."""
    if example_rank >= rank:
        return full
    return full.reshape(full.shape[0], *([1] * (rank - example_rank)), *full.shape[1:])


def _batch(x, level):
    """``x`` as a batch at ``level``, batch dim first; an unbatched tensor is expanded."""
    if is_batched_at(x, level):
        return unwrap(x, level)
    return x.unsqueeze(0).expand(level.size, *x.shape)


def _wrap_dim(dim, n):
    m = max(n, 1)
    if not -m <= dim < m:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], but got {dim})")
    return dim % m


def _shift(dim, n):
    if isinstance(dim, (list, tuple)):
        return type(dim)(_wrap_dim(d, n) + 1 for d in dim)
    return _wrap_dim(dim, n) + 1


def _rule(*names):
    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return register


# ---- elementwise and batch-first ---------------------------------------------------

def elementwise(op, level, args, kwargs):
    rank = max([_rank(a) for a in (*args, *kwargs.values()) if isinstance(a, Tensor)], default=0)

    def prep(x):
        return _pad(unwrap(x, level), x.dim(), rank) if is_batched_at(x, level) else x
    return wrap_out(op.fn(*[prep(a) for a in args], **{k: prep(v) for k, v in kwargs.items()}), level)


def batch_first(op, level, args, kwargs):
    return wrap_out(op.fn(*[unwrap(a, level) for a in args], **{k: unwrap(v, level) for k, v in kwargs.items()}),
                    level)


_ELEMENTWISE = """abs acos acosh asin asinh atan atanh atan2 add addcdiv addcmul angle bitwise_and bitwise_left_shift
bitwise_not bitwise_or bitwise_right_shift bitwise_xor ceil clamp clamp_max clamp_min clone conj contiguous copysign
cos cosh deg2rad detach digamma div elu entr eq erf erfc erfcx erfinv exp exp2 expm1 float_power floor floor_divide
fmod frac ge gelu gt hardswish hardtanh hypot i0 i0e i1 i1e imag isclose isfinite isinf isnan isneginf isposinf isreal
le leaky_relu lerp lgamma log log10 log1p log2 log_ndtr logaddexp logaddexp2 logical_and logical_not logical_or
logical_xor logit lt masked_fill maximum minimum mul mvlgamma nan_to_num ndtr ndtri ne neg polygamma positive pow
rad2deg real reciprocal relu remainder resolve_conj round rsqrt rsub sgn sigmoid sign silu sin sinc sinh softplus
sqrt square sub tan tanh trunc where xlog1py xlogy zeta complex polar view_as_real view_as_complex gammainc gammaincc
float double half bfloat16 long int short bool byte char cpu cuda to type_as zeros_like ones_like full_like
empty_like bessel_j0 bessel_j1 bessel_y0 bessel_y1 modified_bessel_i0 modified_bessel_i1 modified_bessel_k0
modified_bessel_k1 scaled_modified_bessel_k0 scaled_modified_bessel_k1 spherical_bessel_j0 airy_ai
chebyshev_polynomial_t chebyshev_polynomial_u chebyshev_polynomial_v chebyshev_polynomial_w
shifted_chebyshev_polynomial_t shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w hermite_polynomial_h hermite_polynomial_he laguerre_polynomial_l
legendre_polynomial_p masked_scatter celu hardsigmoid mish selu""".split()
for _n in _ELEMENTWISE:
    RULES[_n] = elementwise

# trailing dimensions: linear algebra, last-dims norms, attention
_BATCH_FIRST = """tril triu det logdet slogdet inv pinv cholesky qr eigh eigvalsh svd svdvals solve solve_triangular
lstsq matrix_norm matrix_rank matrix_power vecdot cdist pairwise_distance fft ifft rfft irfft fft2 ifft2 rfft2 irfft2
fftn ifftn rfftn irfftn fftshift ifftshift""".split()
for _n in _BATCH_FIRST:
    RULES[_n] = batch_first


# ---- dimension ops -----------------------------------------------------------------

# op -> (dimension parameters with the rank they wrap against: 0 = one example's rank,
# 1 = one more (a new dimension)); the other tensor parameters are batched alongside
_DIM_OPS = {
    "sum": ("dim",), "mean": ("dim",), "nansum": ("dim",), "nanmean": ("dim",), "prod": ("dim",),
    "amax": ("dim",), "amin": ("dim",), "all": ("dim",), "any": ("dim",), "max": ("dim",), "min": ("dim",),
    "argmax": ("dim",), "argmin": ("dim",), "var": ("dim",), "std": ("dim",), "var_mean": ("dim",),
    "std_mean": ("dim",), "logsumexp": ("dim",), "norm": ("dim",), "vector_norm": ("dim",),
    "count_nonzero": ("dim",), "median": ("dim",), "nanmedian": ("dim",), "mode": ("dim",), "kthvalue": ("dim",),
    "quantile": ("dim",), "nanquantile": ("dim",), "aminmax": ("dim",), "cumsum": ("dim",), "cumprod": ("dim",),
    "cummax": ("dim",), "cummin": ("dim",), "logcumsumexp": ("dim",), "softmax": ("dim",),
    "log_softmax": ("dim",), "sort": ("dim",), "argsort": ("dim",), "topk": ("dim",), "flip": ("dims",),
    "diff": ("dim",), "transpose": ("dim0", "dim1"), "movedim": ("source", "destination"), "narrow": ("dim",),
    "select": ("dim",), "unbind": ("dim",), "split": ("dim",), "chunk": ("dim",), "tensor_split": ("dim",),
    "unflatten": ("dim",), "diagonal": ("dim1", "dim2"), "gather": ("dim",), "scatter": ("dim",),
    "scatter_add": ("dim",), "scatter_reduce": ("dim",), "index_select": ("dim",), "index_add": ("dim",),
    "index_copy": ("dim",), "index_fill": ("dim",), "take_along_dim": ("dim",), "repeat_interleave": ("dim",),
    "cross": ("dim",), "normalize": ("dim",), "flatten": ("start_dim", "end_dim"), "unsqueeze": ("dim+",),
    "diag_embed": ("dim1+", "dim2+"), "cat": ("dim",), "stack": ("dim+",), "roll": ("dims",),
    "scatter_": ("dim",), "scatter_add_": ("dim",), "cosine_similarity": ("dim",),
}
# with dim=None these reduce over every dimension (returning a single tensor)
_ALL_WHEN_NONE = {"sum", "mean", "nansum", "nanmean", "prod", "amax", "amin", "all", "any", "max", "min", "argmax",
                  "argmin", "var", "std", "var_mean", "std_mean", "norm", "vector_norm", "count_nonzero", "median",
                  "nanmedian", "quantile", "nanquantile", "aminmax", "take_along_dim", "repeat_interleave"}
_TUPLE_WHEN_DIM = {"max", "min", "median", "nanmedian"}  # (values, indices) only when given a dim
# index tensors whose values are positions, not data: they stay unbatched when they are
_INDEX_PARAMS = {"index_select": "index", "index_add": "index", "index_copy": "index", "index_fill": "index"}


def _dim_rule(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    params = list(a)
    first = params[0]
    x = a[first]
    example = (x[0] if isinstance(x, (list, tuple)) else x)
    rank = example.dim()
    if op.name == "cosine_similarity":
        rank = max(a["x1"].dim(), a["x2"].dim())
    name = op.name.rstrip("_")
    dims = [d.rstrip("+") for d in _DIM_OPS[op.name]]
    news = [d.endswith("+") for d in _DIM_OPS[op.name]]
    # tensor arguments: the data ones batched together (expanded when unbatched), the
    # positional-index ones left as they are when unbatched
    index_param = _INDEX_PARAMS.get(name)
    if index_param and is_batched_at(a[index_param], level):
        return None  # a batched index: per example
    for p in params:
        v = a[p]
        if isinstance(v, Tensor) and p != index_param:
            if op.name == "cosine_similarity":
                a[p] = _pad(_batch(v, level), v.dim(), rank)
            elif is_batched_at(v, level) or (p != first and v.dim() == rank):
                a[p] = _batch(v, level)
        elif isinstance(v, (list, tuple)) and p == first and v and isinstance(v[0], Tensor):
            a[p] = type(v)(_batch(t, level) for t in v)
    B = level.size
    full = a[first]
    if dims[0] in a and (a[dims[0]] is None or (a[dims[0]] in ((), []) and name in _ALL_WHEN_NONE)):
        if name in _ALL_WHEN_NONE:
            keepdim = a.get("keepdim", False)
            a[first] = full.reshape(B, -1)
            for p in params[1:]:
                if isinstance(a[p], Tensor) and p != index_param and a[p].dim() == full.dim():
                    a[p] = a[p].reshape(B, -1)
            a[dims[0]] = 1
            if "keepdim" in a:
                a["keepdim"] = False
            out = _call(op, bound)
            if name in _TUPLE_WHEN_DIM:
                out = out[0]
            if keepdim:
                out = out.reshape(B, *([1] * rank))
            return wrap_out(out, level)
        if name == "roll":
            a[first] = full.reshape(B, -1)
            a["dims"] = 1
            return wrap_out(_call(op, bound).reshape(full.shape), level)
        if name == "cross":
            a["dim"] = next(i for i, n in enumerate(example.shape) if n == 3) + 1
            return wrap_out(_call(op, bound), level)
        return None
    if name in ("flatten",) and rank == 0:
        return wrap_out(full.reshape(B, 1), level)
    for d, new in zip(dims, news):
        if d in a and a[d] is not None:
            a[d] = _shift(a[d], rank + new)
    out = _call(op, bound)
    if op.name.endswith("_"):
        return args[0]
    return wrap_out(out, level)


for _n in _DIM_OPS:
    RULES[_n] = _dim_rule


@_rule("squeeze")
def _squeeze(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    x, dim = bound.arguments["input"], bound.arguments["dim"]
    full = unwrap(x, level)
    if dim is None:
        dims = [i for i, n in enumerate(x.shape) if n == 1]
    else:
        dims = [_wrap_dim(d, x.dim()) for d in (dim if isinstance(dim, (list, tuple)) else (dim,))]
        dims = [d for d in dims if x.dim() and x.shape[d] == 1]
    for d in sorted(dims, reverse=True):
        full = full.squeeze(d + 1)
    return wrap(full, 0, level)


# ---- shapes --------------------------------------------------------------------------

def _sizes(values):
    """``*shape`` arguments as one tuple (``view(2, 3)`` or ``view((2, 3))``)."""
    if len(values) == 1 and isinstance(values[0], (list, tuple)):  # ember.Size is a tuple
        return tuple(values[0])
    return tuple(values)


@_rule("view", "reshape")
def _reshape(op, level, args, kwargs):
    x, shape = args[0], _sizes(args[1:] or tuple(kwargs.values()))
    if len(shape) == 1 and isinstance(shape[0], Tensor):  # view(other_dtype) is not a shape
        return None
    return wrap(unwrap(x, level).reshape(level.size, *shape), 0, level)


@_rule("view_as", "reshape_as")
def _reshape_as(op, level, args, kwargs):
    return args[0].reshape(args[1].shape)


@_rule("ravel")
def _ravel(op, level, args, kwargs):
    return args[0].reshape(-1)


@_rule("expand", "broadcast_to")
def _expand(op, level, args, kwargs):
    x = args[0]
    sizes = _sizes(args[1:]) if op.name == "expand" else tuple(args[1] if len(args) > 1 else kwargs["size"])
    if not is_batched_at(x, level):
        return x.expand(*sizes)
    full = _pad(unwrap(x, level), x.dim(), len(sizes))
    return wrap(full.expand(level.size, *sizes), 0, level)


@_rule("expand_as")
def _expand_as(op, level, args, kwargs):
    return args[0].expand(*args[1].shape)


@_rule("repeat")
def _repeat(op, level, args, kwargs):
    x, sizes = args[0], _sizes(args[1:])
    full = _pad(unwrap(x, level), x.dim(), len(sizes))
    return wrap(full.repeat(1, *sizes), 0, level)


@_rule("tile")
def _tile(op, level, args, kwargs):
    x, dims = args[0], tuple(args[1] if len(args) > 1 else kwargs["dims"])
    dims = (1,) * (x.dim() - len(dims)) + dims
    return x.repeat(*dims)


@_rule("permute")
def _permute(op, level, args, kwargs):
    x, dims = args[0], _sizes(args[1:] or (kwargs["dims"],))
    return wrap(unwrap(x, level).permute(0, *_shift(tuple(dims), x.dim())), 0, level)


@_rule("t")
def _t(op, level, args, kwargs):
    x = args[0]
    return x if x.dim() < 2 else x.transpose(0, 1)


@_rule("broadcast_tensors")
def _broadcast_tensors(op, level, args, kwargs):
    from ..ops.layout import broadcast_shapes
    tensors = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t.expand(*shape) for t in tensors)


@_rule("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor")
def _new(op, level, args, kwargs):
    return op.fn(unwrap(args[0], level)[0], *args[1:], **kwargs)  # a plain tensor: not one example's


@_rule("trace")
def _trace(op, level, args, kwargs):
    return args[0].diagonal(0, 0, 1).sum(-1)


@_rule("diag")
def _diag(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    x, k = bound.arguments["input"], bound.arguments["diagonal"]
    return x.diagonal(k, 0, 1) if x.dim() == 2 else x.diag_embed(k)


# ---- indexing ------------------------------------------------------------------------

def _is_advanced(i):
    return isinstance(i, (Tensor, list)) or (hasattr(i, "shape") and hasattr(i, "dtype") and not isinstance(i, bool))


@_rule("getitem")
def _getitem(op, level, args, kwargs):
    x, index = args
    index = index if isinstance(index, tuple) else (index,)
    if any(is_batched_at(i, level) and i.dtype.name == "bool" for i in index):
        raise RuntimeError("vmap: We do not support batching operators that can support dynamic shape. Attempting "
                           "to batch over indexing with a boolean mask.")
    if any(is_batched_at(i, level) for i in index) or not is_batched_at(x, level):
        return None
    positions = [k for k, i in enumerate(index) if _is_advanced(i)]
    out = op.fn(unwrap(x, level), (slice(None), *index))
    if positions and positions != list(range(positions[0], positions[-1] + 1)):
        # separated advanced indices: numpy's rule puts their dims first, before the batch
        from ..ops.layout import broadcast_shapes
        shapes = [tuple(i.shape) if hasattr(i, "shape") else (len(i),) for i in (index[k] for k in positions)]
        return wrap(out, len(broadcast_shapes(*shapes)), level)
    return wrap(out, 0, level)


@_rule("setitem")
def _setitem(op, level, args, kwargs):
    x, index, value = args
    index_t = index if isinstance(index, tuple) else (index,)
    if not is_batched_at(x, level):
        raise RuntimeError("vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
                           "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
                           "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to "
                           "use out-of-place operators instead of inplace operators.")
    if any(is_batched_at(i, level) for i in index_t):
        return None
    if is_batched_at(value, level):
        slot = x[index]  # one example's destination, for its rank
        value = _pad(unwrap(value, level), value.dim(), slot.dim())
    op.fn(unwrap(x, level), (slice(None), *index_t), value)
    return x


# ---- products ------------------------------------------------------------------------

@_rule("matmul")
def _matmul(op, level, args, kwargs):
    a, b = args[0], args[1]
    vec_a, vec_b = a.dim() == 1, b.dim() == 1
    if vec_a:
        a = a.unsqueeze(0)
    if vec_b:
        b = b.unsqueeze(-1)
    rank = max(a.dim(), b.dim())
    fa = _pad(unwrap(a, level), a.dim(), rank) if is_batched_at(a, level) else a
    fb = _pad(unwrap(b, level), b.dim(), rank) if is_batched_at(b, level) else b
    out = op.fn(fa, fb)
    if vec_b:
        out = out.squeeze(-1)
    if vec_a:
        out = out.squeeze(-1 if vec_b else -2)
    return wrap(out, 0, level)


@_rule("mm", "bmm", "mv")
def _mm(op, level, args, kwargs):
    return args[0].matmul(args[1])


@_rule("dot")
def _dot(op, level, args, kwargs):
    return (args[0] * args[1]).sum(-1)


@_rule("vdot")
def _vdot(op, level, args, kwargs):
    return (args[0].conj() * args[1]).sum(-1)


@_rule("outer")
def _outer(op, level, args, kwargs):
    return args[0].unsqueeze(-1) * args[1]


def _scaled(beta, x, alpha, product):
    product = product if alpha == 1 else product * alpha
    return product if beta == 0 else (x if beta == 1 else x * beta) + product


@_rule("addmm", "addmv", "baddbmm")
def _addmm(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    names = list(a)
    return _scaled(a["beta"], a[names[0]], a["alpha"], a[names[1]].matmul(a[names[2]]))


@_rule("addbmm")
def _addbmm(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    names = list(a)
    return _scaled(a["beta"], a[names[0]], a["alpha"], a[names[1]].matmul(a[names[2]]).sum(0))


@_rule("addr")
def _addr(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    names = list(a)
    return _scaled(a["beta"], a[names[0]], a["alpha"], a[names[1]].unsqueeze(-1) * a[names[2]])


@_rule("einsum")
def _einsum(op, level, args, kwargs):
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if not arrow:  # torch's implicit output: the letters used once, in order, after any ellipsis
        letters = [c for c in inputs if c.isalpha()]
        output = ("..." if "..." in inputs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    free = next(c for c in string.ascii_letters if c not in equation)
    terms = [free + t if is_batched_at(x, level) else t for t, x in zip(terms, operands)]
    new = ",".join(terms) + "->" + free + output
    return wrap(op.fn(new, *[unwrap(x, level) for x in operands]), 0, level)


@_rule("linear")
def _linear(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    x, w, b = bound.arguments["input"], bound.arguments["weight"], bound.arguments["bias"]
    if is_batched_at(w, level) or is_batched_at(b, level):
        out = x.matmul(w.transpose(-1, -2))
        return out if b is None else out + b
    return wrap(op.fn(unwrap(x, level), w, b), 0, level)


# ---- convolution and pooling: the batch folded into N ---------------------------------

def _fold(x, level, spatial):
    """``x``'s batch as ``[B * N, C, *spatial]`` and how to unfold a result."""
    full = unwrap(x, level)
    B = level.size
    if x.dim() == spatial + 1:  # an example without N: the batch is N
        return full, lambda out: out
    n = full.shape[1]
    return full.reshape(B * n, *full.shape[2:]), lambda out: out.reshape(B, n, *out.shape[1:])


def _unfold_out(out, unfold, level):
    if isinstance(out, tuple):
        return type(out)(wrap(unfold(o), 0, level) for o in out)
    return wrap(unfold(out), 0, level)


def _batch_as_n(spatial_of):
    def rule(op, level, args, kwargs):
        x = args[0]
        if not is_batched_at(x, level) or any(is_batched_at(a, level) for a in (*args[1:], *kwargs.values())):
            return None
        folded, unfold = _fold(x, level, spatial_of(op, x, args, kwargs))
        return _unfold_out(op.fn(folded, *args[1:], **kwargs), unfold, level)
    return rule


def _spatial_from_name(op, x, args, kwargs):
    return int(next(c for c in op.name if c.isdigit()))


for _n in ("max_pool1d max_pool2d max_pool3d max_pool1d_with_indices max_pool2d_with_indices max_pool3d_with_indices "
           "avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d "
           "adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d adaptive_max_pool1d_with_indices "
           "adaptive_max_pool2d_with_indices adaptive_max_pool3d_with_indices lp_pool1d lp_pool2d lp_pool3d "
           "conv_transpose1d conv_transpose2d conv_transpose3d").split():
    RULES[_n] = _batch_as_n(_spatial_from_name)
for _n in ("interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle", "local_response_norm"):
    RULES[_n] = _batch_as_n(lambda op, x, a, k: x.dim() - 2)  # these take [N, C, *spatial] only


@_rule("conv1d", "conv2d", "conv3d")
def _conv(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    x, w, b = a["input"], a["weight"], a["bias"]
    spatial = w.dim() - 2
    if not is_batched_at(w, level):
        if is_batched_at(b, level):
            a["bias"] = None
            out = _call(op, bound)
            return out + b.reshape(-1, *([1] * spatial))
        if not is_batched_at(x, level):
            return None
        folded, unfold = _fold(x, level, spatial)
        a["input"] = folded
        return wrap(unfold(_call(op, bound)), 0, level)
    # a batched weight (model ensembles): the batch becomes groups of one convolution
    B = level.size
    has_n = x.dim() == spatial + 2
    full_x = _batch(x, level)
    if not has_n:
        full_x = full_x.unsqueeze(1)
    n, c = full_x.shape[1], full_x.shape[2]
    full_w = unwrap(w, level)
    groups = a["groups"]
    a["input"] = full_x.movedim(0, 1).reshape(n, B * c, *full_x.shape[3:])
    a["weight"] = full_w.reshape(B * full_w.shape[1], *full_w.shape[2:])
    a["bias"] = None if b is None else _batch(b, level).reshape(-1)
    a["groups"] = groups * B
    out = _call(op, bound)
    out = out.reshape(n, B, -1, *out.shape[2:]).movedim(1, 0)
    return wrap(out if has_n else out.squeeze(1), 0, level)


@_rule("embedding")
def _embedding(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    if is_batched_at(bound.arguments["weight"], level):
        return None
    bound.arguments["input"] = unwrap(bound.arguments["input"], level)
    return wrap(_call(op, bound), 0, level)


@_rule("scaled_dot_product_attention")
def _attention(op, level, args, kwargs):
    return elementwise(op, level, args, kwargs)


# ---- normalization -------------------------------------------------------------------

def _affine(out, weight, bias, channel_dims):
    """``out * weight + bias`` with per-channel parameters on dimension 1 of ``channel_dims`` dims."""
    shape = (-1,) + (1,) * (channel_dims - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


@_rule("layer_norm", "rms_norm")
def _layer_norm(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    w, b = a["weight"], a.get("bias")
    if is_batched_at(w, level) or is_batched_at(b, level):
        a["weight"] = None
        if "bias" in a:
            a["bias"] = None
        out = _call(op, bound)
        out = out if w is None else out * w
        return out if b is None else out + b
    a["input"] = unwrap(a["input"], level)
    return wrap(_call(op, bound), 0, level)


@_rule("group_norm")
def _group_norm(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    x, w, b = a["input"], a["weight"], a["bias"]
    if is_batched_at(w, level) or is_batched_at(b, level):
        a["weight"] = a["bias"] = None
        return _affine(_call(op, bound), w, b, x.dim())
    folded, unfold = _fold(x, level, x.dim() - 2)
    a["input"] = folded
    return wrap(unfold(_call(op, bound)), 0, level)


_RUNNING_STATS_ERROR = ("Batch norm got a batched tensor as input while the running_mean or running_var, which will "
                        "be updated in place, were not batched. If you are using a module and do not need its "
                        "running statistics, call ember.func.replace_all_batch_norm_modules_(module) (or build it "
                        "with track_running_stats=False).")


@_rule("batch_norm", "instance_norm")
def _batch_norm(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    x, w, b = a["input"], a["weight"], a["bias"]
    training = a["training"] if op.name == "batch_norm" else a["use_input_stats"]
    stats = (a["running_mean"], a["running_var"])
    if any(is_batched_at(s, level) for s in stats):
        return None
    if is_batched_at(w, level) or is_batched_at(b, level):
        a["weight"] = a["bias"] = None
        return _affine(_call(op, bound), w, b, x.dim())
    if not is_batched_at(x, level):
        return None
    if op.name == "instance_norm" or not training:
        if training and any(s is not None for s in stats):
            raise RuntimeError(_RUNNING_STATS_ERROR)
        folded, unfold = _fold(x, level, x.dim() - 2)
        a["input"] = folded
        return wrap(unfold(_call(op, bound)), 0, level)
    if any(s is not None for s in stats):
        raise RuntimeError(_RUNNING_STATS_ERROR)
    # batch statistics per example: the examples' channels side by side, [N, B * C, ...]
    B = level.size
    full = unwrap(x, level)
    n, c = full.shape[1], full.shape[2]
    a["input"] = full.movedim(0, 1).reshape(n, B * c, *full.shape[3:])
    a["weight"] = None if w is None else w.repeat(B)
    a["bias"] = None if b is None else b.repeat(B)
    out = _call(op, bound)
    return wrap(out.reshape(n, B, c, *out.shape[2:]).movedim(1, 0), 0, level)


# ---- losses --------------------------------------------------------------------------

def _reduce(loss, reduction, level, first_dim=None):
    B = level.size
    if reduction == "none":
        return wrap(loss, 0, level)
    flat = loss.reshape(B, -1)
    if reduction == "sum":
        return wrap(flat.sum(1), 0, level)
    if reduction == "batchmean":
        return wrap(flat.sum(1) / (first_dim or 1), 0, level)
    return wrap(flat.mean(1), 0, level)


def _elementwise_loss(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    reduction = a["reduction"]
    if a.get("size_average") is not None or a.get("reduce") is not None:
        return None
    x = a[list(a)[0]]
    a["reduction"] = "none"
    loss = elementwise(op, level, bound.args, bound.kwargs)
    first_dim = x.shape[0] if x.dim() else 1
    return _reduce(unwrap(loss, level), reduction, level, first_dim)


for _n in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "hinge_embedding_loss",
           "margin_ranking_loss"):
    RULES[_n] = _elementwise_loss


@_rule("nll_loss", "cross_entropy")
def _class_loss(op, level, args, kwargs):
    bound = _bind(op, args, kwargs)
    a = bound.arguments
    x, target, weight = a["input"], a["target"], a["weight"]
    if is_batched_at(weight, level) or a["size_average"] is not None or a["reduce"] is not None:
        return None
    reduction, B = a["reduction"], level.size
    probabilities = target.dtype.is_floating_point and target.dim() == x.dim()
    fx, ft = _batch(x, level), _batch(target, level)
    if x.dim() == 1:  # one example of C classes: the batch is N
        a["input"], a["target"] = fx, ft
    else:
        a["input"] = fx.reshape(B * fx.shape[1], *fx.shape[2:])
        a["target"] = ft.reshape(B * ft.shape[1], *ft.shape[2:])
    a["reduction"] = "none"
    loss = _call(op, bound).reshape(B, -1)
    if reduction == "none":  # one example's loss: [N, *d] (its input without the class dim), or a scalar
        return wrap(loss.reshape(B, *x.shape[:1], *x.shape[2:]) if x.dim() > 1 else loss.reshape(B), 0, level)
    if reduction == "sum" or (probabilities and reduction == "mean"):
        total = loss.sum(1)
        return wrap(total if reduction == "sum" else total / loss.shape[1], 0, level)
    # mean over the counted targets: ignore_index left out, class weights as the denominator
    flat_t = ft.reshape(B, -1)
    counted = flat_t != a["ignore_index"]
    if weight is None:
        denominator = counted.sum(1).to(loss.dtype)
    else:
        denominator = (weight[flat_t.clamp(0, weight.shape[0] - 1)] * counted).sum(1)
    return wrap(loss.sum(1) / denominator, 0, level)


# ---- random ops ----------------------------------------------------------------------

RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")
RANDOM = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli",
          "bernoulli_", "normal", "normal_", "uniform_", "multinomial", "poisson", "dropout", "dropout1d",
          "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu"}


def random_rule(op, level, args, kwargs, proceed):
    """A random op on a batched input under "error" or "different" randomness: one call on
    the batch (a draw per element, so per example). It goes on to the modes below this
    level's: dispatched afresh, this level would see an unbatched random call."""
    if level.randomness == "error":
        raise RuntimeError(RANDOM_ERROR)
    rank = max([_rank(a) for a in (*args, *kwargs.values()) if isinstance(a, Tensor)], default=0)

    def prep(x):
        return _pad(unwrap(x, level), x.dim(), rank) if is_batched_at(x, level) else x
    out = proceed(tuple(prep(a) for a in args), {k: prep(v) for k, v in kwargs.items()})
    return args[0] if op.name.endswith("_") else wrap_out(out, level)


def same_randomness(op, level, args, kwargs):
    """randomness="same" with a batched input: one draw of one example's shape, shared."""
    x = args[0] if args else next(iter(kwargs.values()))
    example = unwrap(x, level)[0]
    if op.name.endswith("_like"):
        return op.fn(example, *args[1:], **kwargs)
    if op.name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
        from ..ops.creation import ones_like
        bound = _bind(op, args, kwargs)
        bound.arguments["input"] = ones_like(example)
        if "inplace" in bound.arguments:
            bound.arguments["inplace"] = False
        return x * _call(op, bound)
    if op.name == "bernoulli" and len(args) == 1 and not kwargs:
        from ..ops.creation import rand_like
        return (rand_like(example) < x).to(x.dtype)
    raise RuntimeError(f"vmap: randomness='same' is not supported for {op.name} on a batched input")


# ---- in-place ops --------------------------------------------------------------------

def inplace(op, level, args, kwargs):
    if not is_batched_at(args[0], level):
        return _setitem(op, level, (args[0], (), None), {})  # raises torch's error
    elementwise(op, level, args, kwargs)
    return args[0]


for _n in ("abs_ add_ clamp_ div_ eq_ exp_ fill_ log_ masked_fill_ mul_ neg_ pow_ relu_ sigmoid_ sqrt_ sub_ tanh_ "
           "zero_ copy_").split():
    RULES[_n] = inplace
