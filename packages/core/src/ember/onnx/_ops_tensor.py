"""Emitters of more tensor ops and nn layers: creation by shape, transposed convolution,
instance and RMS norm, more activations, indexing and reordering, reductions with indices.

Each writes the ONNX nodes of one ember op (see ``_ops`` for the emitter's arguments).
Sources: the ONNX operator specification (onnx.ai/onnx/operators) and the torch docs of
each op."""

from __future__ import annotations

import numpy as np

from ._ops import EMITTERS, _dims, _pair, _reduce_mean, _reshape_to, _unary, emits
from .errors import OnnxExporterError

_INT64_MIN = np.iinfo(np.int64).min


def _filled(ctx, shape_value: str, value, dtype) -> str:
    import onnx
    return ctx.op("ConstantOfShape", [shape_value],
                  value=onnx.numpy_helper.from_array(np.array([value], dtype=dtype), "value"))


# ---- creation -----------------------------------------------------------------------------

@emits("zeros", "ones", "empty")
def _constant_of_shape(ctx, a, out):
    """The result's shape, computed at run time where it follows a dynamic axis (an RNN's
    zero state of the batch's size). ``empty`` is written as zeros."""
    return _filled(ctx, ctx.shape_tensor(out[0]), 1 if ctx.op_name == "ones" else 0, out[1])


@emits("zeros_like", "ones_like", "empty_like", "full_like")
def _like(ctx, a, out):
    value = {"ones_like": 1, "full_like": a.get("fill_value")}.get(ctx.op_name, 0)
    return _filled(ctx, ctx.op("Shape", [a["input"]]), value, out[1])


@emits("prelu")
def _prelu(ctx, a, out):
    """ONNX PRelu, its slope broadcast from the right: torch's per-channel weight [C] of a
    [N, C, *] input becomes [C, 1, ...] (one weight, or a 1-d input, as it is)."""
    x, w = a["input"], a["weight"]
    rank, channels = ctx.rank(x), int(np.prod(ctx.shape(w)))
    if channels != 1 and rank > 2:
        w = ctx.op("Reshape", [w, ctx.ints([channels] + [1] * (rank - 2))])
    return ctx.op("PRelu", [x, w])


# ---- convolution, norms ----------------------------------------------------------------------

@emits("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_transpose(ctx, a, out):
    """torch's output size ``(L-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``
    is ONNX ConvTranspose's with symmetric ``pads`` and the same ``output_padding``."""
    x, w = a["input"], a["weight"]
    kernel = list(ctx.shape(w)[2:])
    n = len(kernel)
    unbatched = ctx.rank(x) == n + 1
    if unbatched:
        x = ctx.op("Unsqueeze", [x, ctx.ints([0])])
    y = ctx.op("ConvTranspose", [x, w, a.get("bias")], kernel_shape=kernel, strides=_pair(a.get("stride", 1), n),
               pads=_pair(a.get("padding", 0), n) * 2, dilations=_pair(a.get("dilation", 1), n),
               output_padding=_pair(a.get("output_padding", 0), n), group=int(a.get("groups", 1)))
    return ctx.op("Squeeze", [y, ctx.ints([0])]) if unbatched else y


@emits("instance_norm")
def _instance_norm(ctx, a, out):
    x, c = a["input"], ctx.shape(a["input"])[1]
    w = a.get("weight") or ctx.const(np.ones(c), out[1])
    b = a.get("bias") or ctx.const(np.zeros(c), out[1])
    eps = float(a.get("eps", 1e-5))
    if a.get("use_input_stats", True):
        return ctx.op("InstanceNormalization", [x, w, b], epsilon=eps)
    # eval mode with tracked statistics: the running mean and variance normalize, per channel
    return ctx.op("BatchNormalization", [x, w, b, a["running_mean"], a["running_var"]], epsilon=eps)


@emits("rms_norm")
def _rms_norm(ctx, a, out):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims
    (written out: RMSNormalization is an ONNX op only from opset 23)."""
    x = a["input"]
    shape = a["normalized_shape"]
    k = 1 if isinstance(shape, int) else len(shape)
    eps = a.get("eps")
    eps = float(np.finfo(out[1]).eps) if eps is None else float(eps)
    rank = ctx.rank(x)
    mean_sq = _reduce_mean(ctx, ctx.op("Mul", [x, x]), list(range(rank - k, rank)))
    y = ctx.op("Div", [x, ctx.op("Sqrt", [ctx.op("Add", [mean_sq, ctx.const(eps, out[1])])])])
    return y if a.get("weight") is None else ctx.op("Mul", [y, a["weight"]])


@emits("normalize")
def _normalize(ctx, a, out):
    """``x / max(||x||_p, eps)`` along ``dim``, p 1 or 2."""
    x, p = a["input"], float(a.get("p", 2.0))
    if p not in (1.0, 2.0):
        raise OnnxExporterError(f"normalize with p={p} is not exported (p=1 and p=2 are)")
    dim = _dims(a.get("dim", 1), ctx.rank(x))
    op = "ReduceL2" if p == 2 else "ReduceL1"
    norm = ctx.op(op, [x, ctx.ints(dim)], keepdims=1) if ctx.opset >= 18 else ctx.op(op, [x], axes=dim, keepdims=1)
    return ctx.op("Div", [x, ctx.op("Max", [norm, ctx.const(float(a.get("eps", 1e-12)), out[1])])])


# ---- activations -----------------------------------------------------------------------------

for _name, _op in {"sign": "Sign", "tan": "Tan", "atan": "Atan", "asin": "Asin", "acos": "Acos", "sinh": "Sinh",
                   "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "isnan": "IsNaN"}.items():
    EMITTERS[_name] = _unary(_op)


@emits("selu")
def _selu(ctx, a, out):
    return ctx.op("Selu", [a["input"]])  # ONNX's default alpha and gamma are torch's constants


@emits("celu")
def _celu(ctx, a, out):
    return ctx.op("Celu", [a["input"]], alpha=float(a.get("alpha", 1.0)))


@emits("round")
def _round(ctx, a, out):
    if a.get("decimals", 0):
        raise OnnxExporterError("round with decimals is not exported")
    return ctx.op("Round", [a["input"]])  # half to even, as torch


def _bitwise(bool_op, int_op):
    def emit(ctx, a, out):
        x, y = ctx.operand(a["input"], out[1]), ctx.operand(a["other"], out[1])
        if out[1] == np.bool_:
            return ctx.op(bool_op, [x, y])
        if ctx.opset < 18:
            raise OnnxExporterError(f"{ctx.op_name} on integers needs opset 18 or later (ONNX {int_op})")
        return ctx.op(int_op, [x, y])
    return emit


EMITTERS["bitwise_and"] = _bitwise("And", "BitwiseAnd")
EMITTERS["bitwise_or"] = _bitwise("Or", "BitwiseOr")
EMITTERS["bitwise_xor"] = _bitwise("Xor", "BitwiseXor")


@emits("bitwise_not")
def _bitwise_not(ctx, a, out):
    return ctx.op("Not" if out[1] == np.bool_ else "BitwiseNot", [a["input"]])


@emits("pixel_shuffle")
def _pixel_shuffle(ctx, a, out):
    # torch's channel order c * r^2 + i * r + j is DepthToSpace's CRD mode
    return ctx.op("DepthToSpace", [a["input"]], blocksize=int(a["upscale_factor"]), mode="CRD")


# ---- shape and indexing ----------------------------------------------------------------------

@emits("stack")
def _stack(ctx, a, out):
    dim = int(a.get("dim", 0)) % len(out[0])
    parts = [ctx.op("Unsqueeze", [ctx.cast(t, out[1]), ctx.ints([dim])]) for t in a["tensors"]]
    return ctx.op("Concat", parts, axis=dim)


@emits("unflatten", "movedim", "moveaxis")
def _to_result_shape(ctx, a, out):
    if ctx.op_name == "unflatten":
        return _reshape_to(ctx, a["input"], out[0])
    x = a["input"]
    rank = ctx.rank(x)
    src, dst = a["source"], a["destination"]
    src = _dims(src, rank)
    dst = _dims(dst, rank)
    rest = iter(d for d in range(rank) if d not in src)
    where = dict(zip(dst, src))
    return ctx.op("Transpose", [x], perm=[where[i] if i in where else next(rest) for i in range(rank)])


@emits("repeat", "tile")
def _repeat(ctx, a, out):
    x = a["input"]
    sizes = a.get("sizes", a.get("dims"))
    sizes = list(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else list(sizes)
    rank = ctx.rank(x)
    if ctx.op_name == "tile" and len(sizes) < rank:  # tile pads the repeats with leading ones
        sizes = [1] * (rank - len(sizes)) + sizes
    if len(sizes) > rank:  # new leading dims of size 1
        x = ctx.op("Unsqueeze", [x, ctx.ints(range(len(sizes) - rank))])
    return ctx.op("Tile", [x, ctx.ints(sizes)])


@emits("flip")
def _flip(ctx, a, out):
    x = a["input"]
    dims = _dims(a["dims"], ctx.rank(x))
    n = len(dims)
    return ctx.op("Slice", [x, ctx.ints([-1] * n), ctx.ints([_INT64_MIN] * n), ctx.ints(dims), ctx.ints([-1] * n)])


@emits("narrow")
def _narrow(ctx, a, out):
    x = a["input"]
    dim = a["dim"] % ctx.rank(x)
    start = int(a["start"])
    if start < 0:
        start += ctx.shape(x)[dim]
    return ctx.op("Slice", [x, ctx.ints([start]), ctx.ints([start + int(a["length"])]), ctx.ints([dim])])


@emits("select")
def _select(ctx, a, out):
    x = a["input"]
    return ctx.op("Gather", [x, ctx.const(int(a["index"]), np.int64)], axis=a["dim"] % ctx.rank(x))


@emits("index_select")
def _index_select(ctx, a, out):
    x = a["input"]
    return ctx.op("Gather", [x, ctx.cast(a["index"], np.int64)], axis=a["dim"] % max(ctx.rank(x), 1))


@emits("gather")
def _gather_elements(ctx, a, out):
    x = a["input"]
    return ctx.op("GatherElements", [x, ctx.cast(a["index"], np.int64)], axis=a["dim"] % max(ctx.rank(x), 1))


@emits("einsum")
def _einsum(ctx, a, out):
    operands = a["operands"]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return ctx.op("Einsum", [ctx.cast(o, out[1]) for o in operands], equation=a["equation"].replace(" ", ""))


# ---- reductions with indices, scans ------------------------------------------------------------

@emits("cumsum")
def _cumsum(ctx, a, out):
    x = ctx.cast(a["input"], out[1])
    return ctx.op("CumSum", [x, ctx.const(a["dim"] % max(ctx.rank(x), 1), np.int64)])


@emits("logsumexp")
def _logsumexp(ctx, a, out):
    x = a["input"]
    dims = _dims(a["dim"], ctx.rank(x))
    keep = int(bool(a.get("keepdim", False)))
    if ctx.opset >= 18:
        return ctx.op("ReduceLogSumExp", [x, ctx.ints(dims)], keepdims=keep)
    return ctx.op("ReduceLogSumExp", [x], axes=dims, keepdims=keep)


def _arg_extreme(ctx, x, dim, keep: bool, is_max: bool) -> str:
    # torch returns the first index of a repeated extreme, ONNX's default too
    return ctx.op("ArgMax" if is_max else "ArgMin", [x], axis=dim, keepdims=int(keep))


@emits("argmax", "argmin")
def _argmax(ctx, a, out):
    x, dim, keep = a["input"], a.get("dim"), bool(a.get("keepdim", False))
    is_max = ctx.op_name == "argmax"
    if dim is None:  # over the flattened tensor
        index = _arg_extreme(ctx, ctx.op("Reshape", [x, ctx.ints([-1])]), 0, False, is_max)
        return _reshape_to(ctx, index, [1] * ctx.rank(x)) if keep else index
    return _arg_extreme(ctx, x, dim % ctx.rank(x), keep, is_max)


@emits("max", "min")
def _max(ctx, a, out):
    """``max(x)``: the largest value; ``max(x, dim)``: (values, indices); ``max(x, y)``: elementwise."""
    x, dim = a["input"], a.get("dim")
    is_max = ctx.op_name == "max"
    if isinstance(dim, str):
        return ctx.op("Max" if is_max else "Min", [x, dim])
    reduce = "ReduceMax" if is_max else "ReduceMin"
    keep = bool(a.get("keepdim", False))
    if dim is None:
        return ctx.op(reduce, [ctx.op("Reshape", [x, ctx.ints([-1])])], keepdims=0)
    dim = dim % ctx.rank(x)
    values = ctx.op(reduce, [x, ctx.ints([dim])], keepdims=int(keep)) if ctx.opset >= 18 else \
        ctx.op(reduce, [x], axes=[dim], keepdims=int(keep))
    return [values, _arg_extreme(ctx, x, dim, keep, is_max)]


@emits("topk")
def _topk(ctx, a, out):
    x = a["input"]
    # always sorted: ember's unsorted order is the sorted one, and ONNX leaves its own open
    return ctx.op("TopK", [x, ctx.ints([int(a["k"])])], outputs=2, axis=a.get("dim", -1) % ctx.rank(x),
                  largest=int(bool(a.get("largest", True))), sorted=1)
