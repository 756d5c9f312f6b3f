"""Op name -> emitter: one short function per ember op, writing its ONNX nodes.

An emitter takes the graph under construction (``ctx``), the call's arguments by parameter
name (tensors as ONNX value names, other arguments as recorded) and the recorded
``(shape, numpy dtype)`` of its result; it returns the ONNX value name of the result (a
list for multi-output ops). Where ONNX changed an op between opsets 17 and 21 the emitter
reads ``ctx.opset`` (the reductions other than ReduceSum took ``axes`` as an attribute
before 18; Gelu is an op from 20).

Sources: the ONNX operator specification (onnx.ai/onnx/operators) and the torch docs of
each op."""

from __future__ import annotations

import math

import numpy as np

from ._dynamic import Sym
from .errors import OnnxExporterError

EMITTERS: dict = {}
_INT64_MAX = np.iinfo(np.int64).max


def emits(*names):
    def register(fn):
        for name in names:
            EMITTERS[name] = fn
        return fn
    return register


def _pair(v, n: int) -> list[int]:
    return list(v) * (n // len(v)) if isinstance(v, (tuple, list)) else [int(v)] * n


def _dims(dim, rank: int) -> list[int]:
    """``dim`` (an int, a sequence, or None for every dim) as non-negative axes."""
    if dim is None:
        return list(range(rank))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d % rank if rank else 0 for d in dims]


# ---- elementwise -------------------------------------------------------------------

def _unary(onnx_op):
    return lambda ctx, a, out: ctx.op(onnx_op, [ctx.cast(a["input"], out[1])])


for _name, _op in {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
                   "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs", "erf": "Erf", "sin": "Sin", "cos": "Cos",
                   "reciprocal": "Reciprocal", "floor": "Floor", "ceil": "Ceil", "hardswish": "HardSwish",
                   "softsign": "Softsign", "contiguous": "Identity", "clone": "Identity",
                   "detach": "Identity"}.items():
    EMITTERS[_name] = _unary(_op)


def _binary(onnx_op, left="input", right="other"):
    def emit(ctx, a, out):
        return ctx.op(onnx_op, [ctx.operand(a[left], out[1]), ctx.operand(a[right], out[1])])
    return emit


EMITTERS["mul"] = _binary("Mul")
EMITTERS["pow"] = _binary("Pow", "input", "exponent")
EMITTERS["matmul"] = _binary("MatMul")
EMITTERS["bmm"] = _binary("MatMul", "input", "mat2")
EMITTERS["maximum"] = _binary("Max")
EMITTERS["minimum"] = _binary("Min")


def _add_or_sub(onnx_op):
    def emit(ctx, a, out):
        other = ctx.operand(a["other"], out[1])
        if a.get("alpha", 1) != 1:
            other = ctx.op("Mul", [other, ctx.const(a["alpha"], out[1])])
        return ctx.op(onnx_op, [ctx.operand(a["input"], out[1]), other])
    return emit


EMITTERS["add"] = _add_or_sub("Add")
EMITTERS["sub"] = _add_or_sub("Sub")


@emits("div")
def _div(ctx, a, out):
    q = ctx.op("Div", [ctx.operand(a["input"], out[1]), ctx.operand(a["other"], out[1])])
    mode = a.get("rounding_mode")
    if mode == "floor":
        return ctx.op("Floor", [q]) if out[1].kind == "f" else _floor_div_int(ctx, a, out)
    if mode == "trunc" and out[1].kind == "f":
        return ctx.op("Mul", [ctx.op("Sign", [q]), ctx.op("Floor", [ctx.op("Abs", [q])])])
    return q  # true division; ONNX's integer Div truncates, as trunc mode does


def _floor_div_int(ctx, a, out):
    x, y = ctx.operand(a["input"], np.float64), ctx.operand(a["other"], np.float64)
    return ctx.cast(ctx.op("Floor", [ctx.op("Div", [x, y])]), out[1])


@emits("rsqrt")
def _rsqrt(ctx, a, out):
    return ctx.op("Reciprocal", [ctx.op("Sqrt", [ctx.cast(a["input"], out[1])])])


@emits("gelu")
def _gelu(ctx, a, out):
    x = ctx.cast(a["input"], out[1])
    approximate = a.get("approximate", "none")
    if ctx.opset >= 20:
        return ctx.op("Gelu", [x], approximate=approximate)
    half = ctx.op("Mul", [x, ctx.const(0.5, out[1])])
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = ctx.op("Mul", [ctx.op("Mul", [x, x]), x])
        inner = ctx.op("Add", [x, ctx.op("Mul", [cube, ctx.const(0.044715, out[1])])])
        t = ctx.op("Tanh", [ctx.op("Mul", [inner, ctx.const(math.sqrt(2 / math.pi), out[1])])])
    else:  # 0.5 x (1 + erf(x / sqrt 2))
        t = ctx.op("Erf", [ctx.op("Mul", [x, ctx.const(1 / math.sqrt(2), out[1])])])
    return ctx.op("Mul", [half, ctx.op("Add", [t, ctx.const(1.0, out[1])])])


@emits("silu")
def _silu(ctx, a, out):
    x = ctx.cast(a["input"], out[1])
    return ctx.op("Mul", [x, ctx.op("Sigmoid", [x])])


@emits("mish")
def _mish(ctx, a, out):
    x = ctx.cast(a["input"], out[1])
    if ctx.opset >= 18:  # Mish became an ONNX op in 18
        return ctx.op("Mish", [x])
    return ctx.op("Mul", [x, ctx.op("Tanh", [ctx.op("Softplus", [x])])])


@emits("leaky_relu")
def _leaky_relu(ctx, a, out):
    return ctx.op("LeakyRelu", [a["input"]], alpha=float(a.get("negative_slope", 0.01)))


@emits("elu")
def _elu(ctx, a, out):
    return ctx.op("Elu", [a["input"]], alpha=float(a.get("alpha", 1.0)))


@emits("hardsigmoid")
def _hardsigmoid(ctx, a, out):
    return ctx.op("HardSigmoid", [a["input"]], alpha=1 / 6, beta=0.5)


@emits("relu6")
def _relu6(ctx, a, out):
    return ctx.op("Clip", [a["input"], ctx.const(0.0, out[1]), ctx.const(6.0, out[1])])


@emits("hardtanh")
def _hardtanh(ctx, a, out):
    return ctx.op("Clip", [a["input"], ctx.const(a.get("min_val", -1.0), out[1]),
                           ctx.const(a.get("max_val", 1.0), out[1])])


@emits("clamp", "clip")
def _clamp(ctx, a, out):
    lo, hi = a.get("min"), a.get("max")
    return ctx.op("Clip", [ctx.cast(a["input"], out[1]), None if lo is None else ctx.operand(lo, out[1]),
                           None if hi is None else ctx.operand(hi, out[1])])


@emits("softplus")
def _softplus(ctx, a, out):
    beta, threshold = float(a.get("beta", 1.0)), float(a.get("threshold", 20.0))
    x = a["input"]
    bx = ctx.op("Mul", [x, ctx.const(beta, out[1])])
    soft = ctx.op("Div", [ctx.op("Softplus", [bx]), ctx.const(beta, out[1])])
    # torch returns x itself where beta*x exceeds the threshold
    return ctx.op("Where", [ctx.op("Greater", [bx, ctx.const(threshold, out[1])]), x, soft])


# ---- softmax, dropout ----------------------------------------------------------------

def _softmax(onnx_op):
    def emit(ctx, a, out):
        x = ctx.cast(a["input"], out[1])  # dtype= casts before the op, as torch does
        return ctx.op(onnx_op, [x], axis=int(a["dim"]))
    return emit


EMITTERS["softmax"] = _softmax("Softmax")
EMITTERS["log_softmax"] = _softmax("LogSoftmax")


@emits("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
def _dropout(ctx, a, out):
    if a.get("training", False) and a.get("p", 0.0) > 0:
        raise OnnxExporterError("dropout in training mode is random and has no ONNX inference form: "
                                "export the model in eval mode (model.eval())")
    return ctx.op("Identity", [a["input"]])


# ---- linear algebra, conv, pool, norm --------------------------------------------------

@emits("linear")
def _linear(ctx, a, out):
    x, w, b = a["input"], a["weight"], a.get("bias")
    if ctx.rank(x) == 2:
        return ctx.op("Gemm", [x, w, b], transB=1)
    y = ctx.op("MatMul", [x, ctx.op("Transpose", [w], perm=[1, 0])])
    return y if b is None else ctx.op("Add", [y, b])


@emits("conv1d", "conv2d", "conv3d")
def _conv(ctx, a, out):
    x, w = a["input"], a["weight"]
    kernel = ctx.shape(w)[2:]
    n = len(kernel)
    dilation = _pair(a.get("dilation", 1), n)
    padding = a.get("padding", 0)
    if padding == "valid":
        pads = [0] * (2 * n)
    elif padding == "same":  # torch puts the odd extra pad at the end
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        pads = _pair(padding, n) * 2
    return ctx.op("Conv", [x, w, a.get("bias")], kernel_shape=list(kernel), strides=_pair(a.get("stride", 1), n),
                  pads=pads, dilations=dilation, group=int(a.get("groups", 1)))


@emits("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
       "max_pool3d_with_indices")
def _max_pool(ctx, a, out):
    x = a["input"]
    n = ctx.rank(x) - 2
    kernel = _pair(a["kernel_size"], n)
    stride = a.get("stride") or kernel
    attrs = dict(kernel_shape=kernel, strides=_pair(stride, n), pads=_pair(a.get("padding", 0), n) * 2,
                 dilations=_pair(a.get("dilation", 1), n), ceil_mode=int(bool(a.get("ceil_mode"))))
    if not (a.get("return_indices") or ctx.op_name.endswith("_with_indices")):
        return ctx.op("MaxPool", [x], **attrs)
    values, flat = ctx.op("MaxPool", [x], outputs=2, **attrs)
    # ONNX counts the indices over the whole [N, C, *] tensor, torch within each (n, c)
    # plane: subtract each plane's first position, read off a 1-wide MaxPool of the input
    ones = [1] * n
    _, every = ctx.op("MaxPool", [x], outputs=2, kernel_shape=ones, strides=ones)
    first = ctx.op("Slice", [every, ctx.ints([0] * n), ctx.ints(ones), ctx.ints(range(2, n + 2))])
    return [values, ctx.op("Sub", [flat, first])]


@emits("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(ctx, a, out):
    n = len(out[0]) - 2
    if a.get("divisor_override") is not None:
        raise OnnxExporterError("avg pooling with divisor_override has no ONNX AveragePool form")
    kernel = _pair(a["kernel_size"], n)
    stride = a.get("stride") or kernel
    return ctx.op("AveragePool", [a["input"]], kernel_shape=kernel, strides=_pair(stride, n),
                  pads=_pair(a.get("padding", 0), n) * 2, ceil_mode=int(bool(a.get("ceil_mode"))),
                  count_include_pad=int(bool(a.get("count_include_pad", True))))


@emits("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
       "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d")
def _adaptive_pool(ctx, a, out):
    x = a["input"]
    is_max = "max" in ctx.op_name
    if is_max and a.get("return_indices"):
        raise OnnxExporterError("adaptive max pooling with return_indices=True is not exported")
    spatial_in, spatial_out = ctx.shape(x)[2:], out[0][2:]
    if all(o == 1 for o in spatial_out):
        return ctx.op("GlobalMaxPool" if is_max else "GlobalAveragePool", [x])
    if any(i % o for i, o in zip(spatial_in, spatial_out)):
        raise OnnxExporterError(f"adaptive pooling from {list(spatial_in)} to {list(spatial_out)}: ONNX pools only "
                                f"when each input size is a multiple of the output size")
    ctx.require_static(x, range(2, ctx.rank(x)), ctx.op_name, "the pooling window is fixed in the file")
    kernel = [i // o for i, o in zip(spatial_in, spatial_out)]
    return ctx.op("MaxPool" if is_max else "AveragePool", [x], kernel_shape=kernel, strides=kernel)


@emits("batch_norm")
def _batch_norm(ctx, a, out):
    x, mean, var = a["input"], a["running_mean"], a["running_var"]
    if a.get("training") or mean is None:
        raise OnnxExporterError("batch_norm using batch statistics (training mode, or no running stats) is not "
                                "exported: export the model in eval mode (model.eval())")
    c = ctx.shape(x)[1]
    w = a.get("weight") or ctx.const(np.ones(c), out[1])
    b = a.get("bias") or ctx.const(np.zeros(c), out[1])
    return ctx.op("BatchNormalization", [x, w, b, mean, var], epsilon=float(a.get("eps", 1e-5)))


# ---- shape -----------------------------------------------------------------------------

def _reshape_to(ctx, x, shape):
    return ctx.op("Reshape", [x, ctx.shape_tensor(shape)])


@emits("view", "reshape", "_unsafe_view")
def _view(ctx, a, out):
    return _reshape_to(ctx, a.get("input", a.get("self")), out[0])


@emits("flatten")
def _flatten(ctx, a, out):
    x = a["input"]
    rank = ctx.rank(x)
    if rank == 0:
        return _reshape_to(ctx, x, [1])
    start, end = a.get("start_dim", 0) % rank, a.get("end_dim", -1) % rank
    if any(isinstance(d, Sym) for d in ctx.dims(x)[end + 1:]):
        return _reshape_to(ctx, x, out[0])
    # 0 copies a leading dim from the input, so a batch size stays whatever it is at run time
    shape = [0] * start + [-1] + list(ctx.shape(x)[end + 1:])
    return _reshape_to(ctx, x, shape)


@emits("permute")
def _permute(ctx, a, out):
    x = a["input"]
    dims = a["dims"]
    dims = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else list(dims)
    return ctx.op("Transpose", [x], perm=_dims(dims, ctx.rank(x)))


@emits("transpose", "swapaxes", "swapdims")
def _transpose(ctx, a, out):
    x = a["input"]
    rank = ctx.rank(x)
    perm = list(range(rank))
    d0, d1 = _dims([a.get("dim0", a.get("axis0")), a.get("dim1", a.get("axis1"))], rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.op("Transpose", [x], perm=perm)


@emits("t")
def _t(ctx, a, out):
    x = a["input"]
    return ctx.op("Identity", [x]) if ctx.rank(x) < 2 else ctx.op("Transpose", [x], perm=[1, 0])


@emits("unsqueeze")
def _unsqueeze(ctx, a, out):
    return ctx.op("Unsqueeze", [a["input"], ctx.ints([a["dim"] % len(out[0])])])


@emits("squeeze")
def _squeeze(ctx, a, out):
    x = a["input"]
    shape = ctx.shape(x)
    dims = _dims(a.get("dim"), len(shape))
    dims = [d for d in dims if shape[d] == 1]  # torch leaves a dim that is not 1 alone
    return ctx.op("Squeeze", [x, ctx.ints(dims)]) if dims else ctx.op("Identity", [x])


@emits("cat", "concat", "concatenate")
def _cat(ctx, a, out):
    tensors = [ctx.cast(t, out[1]) for t in a["tensors"] if ctx.shape(t) != (0,)]  # torch skips 1-d empties
    return ctx.op("Concat", tensors, axis=int(a.get("dim", 0)) % len(out[0]))


@emits("operator.getitem")
def _element(ctx, a, out):
    return a["a"][a["b"]]


@emits("getitem")
def _getitem(ctx, a, out):
    x, index = a.get("self", a.get("input")), a.get("index", a.get("idx"))
    items = list(index) if isinstance(index, tuple) else [index]
    shape = ctx.shape(x)
    if any(isinstance(i, str) or isinstance(i, (list, np.ndarray)) for i in items):
        return _gather(ctx, x, items, shape)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        used = sum(1 for i in items if i is not None and i is not Ellipsis)
        items[at:at + 1] = [slice(None)] * (len(shape) - used)
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    dim = out_pos = 0
    for item in items:
        if item is None:
            unsqueeze.append(out_pos)
            out_pos += 1
            continue
        if isinstance(item, bool) or not isinstance(item, (int, slice)):
            raise OnnxExporterError(f"indexing with {type(item).__name__} is not exported")
        if isinstance(item, int):
            starts.append(item)
            ends.append(item + 1 if item != -1 else _INT64_MAX)
            axes.append(dim)
            steps.append(1)
            squeeze.append(dim)
        elif item != slice(None):
            step = 1 if item.step is None else item.step
            starts.append(0 if item.start is None else item.start)
            ends.append(_INT64_MAX if item.stop is None else item.stop)
            axes.append(dim)
            steps.append(step)
            out_pos += 1
        else:
            out_pos += 1
        dim += 1
    y = x
    if axes:
        # a bound computed from a dynamic axis is an ONNX value: shape_tensor concatenates it
        y = ctx.op("Slice", [y, ctx.shape_tensor(starts), ctx.shape_tensor(ends), ctx.ints(axes), ctx.ints(steps)])
    if squeeze:
        y = ctx.op("Squeeze", [y, ctx.ints(squeeze)])
    if unsqueeze:
        y = ctx.op("Unsqueeze", [y, ctx.ints(unsqueeze)])
    return y if y != x else ctx.op("Identity", [x])


def _gather(ctx, x, items, shape):
    """One integer tensor index, alone or after full slices (``x[idx]``, ``x[:, idx]``)."""
    at = [k for k, i in enumerate(items) if not isinstance(i, slice)]
    if len(at) != 1 or any(items[k] != slice(None) for k in range(len(items)) if k != at[0]):
        raise OnnxExporterError("advanced indexing other than one integer index tensor is not exported")
    index = items[at[0]]
    index = index if isinstance(index, str) else ctx.ints(np.asarray(index).ravel())
    if ctx.meta[index][1] == np.bool_:
        return _mask_select(ctx, x, index, at[0])
    if ctx.meta[index][1].kind not in "iu":
        raise OnnxExporterError(f"indexing with a {ctx.meta[index][1]} tensor is not exported (integer or bool "
                                f"indices are)")
    return ctx.op("Gather", [x, ctx.cast(index, np.int64)], axis=at[0])


def _mask_select(ctx, x, mask, at: int):
    """``x[mask]`` (a bool mask over the leading dims, ``at`` 0): the selected rows in
    row-major order, as NonZero then GatherND; the row count is known only at run time."""
    if at != 0:
        raise OnnxExporterError("a boolean mask after other indices is not exported (x[mask] is)")
    if ctx.shape(mask) != ctx.shape(x)[:ctx.rank(mask)]:
        raise OnnxExporterError(f"boolean mask of shape {list(ctx.shape(mask))} for a tensor of shape "
                                f"{list(ctx.shape(x))}: the mask must match the leading dims")
    positions = ctx.op("Transpose", [ctx.op("NonZero", [mask])], perm=[1, 0])  # [count, mask rank]
    return ctx.op("GatherND", [x, positions])


# ---- reductions --------------------------------------------------------------------------

def _reduce(onnx_op):
    def emit(ctx, a, out):
        x = ctx.cast(a["input"], out[1])
        rank = ctx.rank(x)
        dims = _dims(a.get("dim"), rank)
        keep = int(bool(a.get("keepdim", False)))
        if rank == 0:
            return ctx.op("Identity", [x])
        if onnx_op == "ReduceSum" or ctx.opset >= 18:
            return ctx.op(onnx_op, [x, ctx.ints(dims)], keepdims=keep)
        return ctx.op(onnx_op, [x], axes=dims, keepdims=keep)
    return emit


EMITTERS["sum"] = _reduce("ReduceSum")
EMITTERS["mean"] = _reduce("ReduceMean")
EMITTERS["amax"] = _reduce("ReduceMax")
EMITTERS["amin"] = _reduce("ReduceMin")
EMITTERS["prod"] = _reduce("ReduceProd")


@emits("rsub")
def _rsub(ctx, a, out):  # other - alpha * input
    x = ctx.operand(a["input"], out[1])
    if a.get("alpha", 1) != 1:
        x = ctx.op("Mul", [x, ctx.const(a["alpha"], out[1])])
    return ctx.op("Sub", [ctx.operand(a["other"], out[1]), x])


@emits("square")
def _square(ctx, a, out):
    x = ctx.cast(a["input"], out[1])
    return ctx.op("Mul", [x, x])


@emits("to", "type_as", "type", "float", "double", "half", "int", "long", "bool")
def _to(ctx, a, out):
    # the recorded result dtype says what the conversion made; devices do not exist in ONNX
    return ctx.op("Identity", [ctx.cast(a.get("self", a.get("input")), out[1])])


# ---- splitting, embedding, normalization, attention -------------------------------------

def _split_sizes(ctx, x, dim, sizes):
    outs = ctx.op("Split", [x, ctx.ints(sizes)], outputs=len(sizes), axis=dim)
    return [outs] if isinstance(outs, str) else outs


@emits("chunk")
def _chunk(ctx, a, out):
    x = a["input"]
    dim = a.get("dim", 0) % ctx.rank(x)
    ctx.require_static(x, [dim], "chunk", "the chunk sizes are fixed in the file")
    size = ctx.shape(x)[dim]
    step = -(-size // a["chunks"])  # torch's chunks all have ceil(size / chunks) but the last
    sizes = [min(step, size - s) for s in range(0, size, step)] if size else [0]
    return _split_sizes(ctx, x, dim, sizes)


@emits("split")
def _split(ctx, a, out):
    x = a.get("tensor", a.get("input"))
    dim = a.get("dim", 0) % ctx.rank(x)
    ctx.require_static(x, [dim], "split", "the split sizes are fixed in the file")
    size, how = ctx.shape(x)[dim], a["split_size_or_sections"]
    sizes = list(how) if isinstance(how, (list, tuple)) else [min(how, size - s) for s in range(0, size, how)]
    return _split_sizes(ctx, x, dim, sizes)


@emits("unbind")
def _unbind(ctx, a, out):
    x = a["input"]
    dim = a.get("dim", 0) % ctx.rank(x)
    ctx.require_static(x, [dim], "unbind", "the number of results is fixed in the file")
    parts = _split_sizes(ctx, x, dim, [1] * ctx.shape(x)[dim])
    return [ctx.op("Squeeze", [p, ctx.ints([dim])]) for p in parts]


@emits("embedding")
def _embedding(ctx, a, out):
    if a.get("max_norm") is not None:
        raise OnnxExporterError("embedding with max_norm renormalizes the weight in place; it is not exported")
    return ctx.op("Gather", [a["weight"], ctx.cast(a["input"], np.int64)], axis=0)


@emits("layer_norm")
def _layer_norm(ctx, a, out):
    x = a["input"]
    shape = a["normalized_shape"]
    shape = [shape] if isinstance(shape, int) else list(shape)
    w = a.get("weight") or ctx.const(np.ones(shape), out[1])
    b = a.get("bias")
    return ctx.op("LayerNormalization", [x, w, b], axis=-len(shape), epsilon=float(a.get("eps", 1e-5)))


@emits("scaled_dot_product_attention")
def _sdpa(ctx, a, out):
    """softmax(q k^T * scale + mask) v, as MatMul/Softmax (torch's math form)."""
    q, k, v, mask = a["query"], a["key"], a["value"], a.get("attn_mask")
    if a.get("dropout_p", 0.0) > 0:
        raise OnnxExporterError("scaled_dot_product_attention with dropout_p > 0 is random; export with dropout_p=0")
    if a.get("enable_gqa"):
        raise OnnxExporterError("scaled_dot_product_attention with enable_gqa=True is not exported")
    dtype = out[1]
    l_len, s_len, e = ctx.shape(q)[-2], ctx.shape(k)[-2], ctx.shape(q)[-1]
    scale = a.get("scale")
    scale = 1 / math.sqrt(e) if scale is None else scale
    rank = ctx.rank(k)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    scores = ctx.op("Mul", [ctx.op("MatMul", [q, ctx.op("Transpose", [k], perm=perm)]), ctx.const(scale, dtype)])
    bias = None
    if a.get("is_causal"):
        ctx.require_static(q, [ctx.rank(q) - 2], "scaled_dot_product_attention", "the causal mask is fixed in the file")
        ctx.require_static(k, [ctx.rank(k) - 2], "scaled_dot_product_attention", "the causal mask is fixed in the file")
        bias = np.where(np.tril(np.ones((l_len, s_len), dtype=bool)), 0, -np.inf).astype(dtype)
        bias = ctx.const(bias)
    elif mask is not None:
        if ctx.meta[mask][1] == np.bool_:  # True keeps a position
            bias = ctx.op("Where", [mask, ctx.const(0.0, dtype), ctx.const(-np.inf, dtype)])
        else:
            bias = ctx.cast(mask, dtype)
    if bias is not None:
        scores = ctx.op("Add", [scores, bias])
    return ctx.op("MatMul", [ctx.op("Softmax", [scores], axis=-1), v])


@emits("baddbmm", "addmm")
def _addmm(ctx, a, out):
    m1, m2 = (a["batch1"], a["batch2"]) if "batch1" in a else (a["mat1"], a["mat2"])
    prod = ctx.op("MatMul", [m1, m2])
    if a.get("alpha", 1) != 1:
        prod = ctx.op("Mul", [prod, ctx.const(a["alpha"], out[1])])
    if a.get("beta", 1) == 0:
        return prod
    base = a["input"] if a.get("beta", 1) == 1 else ctx.op("Mul", [a["input"], ctx.const(a["beta"], out[1])])
    return ctx.op("Add", [base, prod])


@emits("expand")
def _expand(ctx, a, out):
    return ctx.op("Expand", [a["input"], ctx.shape_tensor(out[0])])


@emits("masked_fill")
def _masked_fill(ctx, a, out):
    return ctx.op("Where", [ctx.cast(a["mask"], np.bool_), ctx.operand(a["value"], out[1]), a["input"]])


@emits("where")
def _where(ctx, a, out):
    return ctx.op("Where", [ctx.cast(a["condition"], np.bool_), ctx.operand(a["input"], out[1]),
                            ctx.operand(a["other"], out[1])])


@emits("triu", "tril")
def _trilu(ctx, a, out):
    return ctx.op("Trilu", [a["input"], ctx.const(a.get("diagonal", 0), np.int64)], upper=int(ctx.op_name == "triu"))


# ---- comparison and logic ------------------------------------------------------------------

def _common(ctx, x, y):
    """Both operands in one dtype (a Python number takes the tensor's, as torch promotes)."""
    dx = ctx.meta[x][1] if isinstance(x, str) else None
    dy = ctx.meta[y][1] if isinstance(y, str) else None
    dtype = np.result_type(dx, dy) if dx is not None and dy is not None else (dx or dy)
    return ctx.operand(x, dtype), ctx.operand(y, dtype)


def _compare(onnx_op, negate=False):
    def emit(ctx, a, out):
        y = ctx.op(onnx_op, list(_common(ctx, a["input"], a["other"])))
        return ctx.op("Not", [y]) if negate else y
    return emit


for _name, (_op, _neg) in {"eq": ("Equal", False), "ne": ("Equal", True), "lt": ("Less", False),
                           "le": ("LessOrEqual", False), "gt": ("Greater", False),
                           "ge": ("GreaterOrEqual", False)}.items():
    EMITTERS[_name] = _compare(_op, _neg)


@emits("logical_not")
def _logical_not(ctx, a, out):
    return ctx.op("Not", [ctx.cast(a["input"], np.bool_)])


def _logical(onnx_op):
    return lambda ctx, a, out: ctx.op(onnx_op, [ctx.cast(a["input"], np.bool_), ctx.cast(a["other"], np.bool_)])


EMITTERS["logical_and"] = _logical("And")
EMITTERS["logical_or"] = _logical("Or")
EMITTERS["logical_xor"] = _logical("Xor")


@emits("setitem")
def _setitem(ctx, a, out):
    """``x[index] = value`` for ints and slices: ScatterElements at the flat positions the
    index selects (computed here from the static shape)."""
    x, index, value = a["self"], a["index"], a["value"]
    shape = ctx.shape(x)
    ctx.require_static(x, range(len(shape)), "setitem", "the written positions are fixed in the file")
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, str) or not (i is None or i is Ellipsis or isinstance(i, (int, slice))) for i in items):
        raise OnnxExporterError("index assignment with tensors or lists is not exported")
    positions = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[index]
    dtype = ctx.meta[x][1]
    flat = ctx.op("Reshape", [x, ctx.ints([-1])])
    updates = ctx.op("Expand", [ctx.operand(value, dtype), ctx.ints(positions.shape)])
    written = ctx.op("ScatterElements", [flat, ctx.ints(positions.ravel()),
                                         ctx.op("Reshape", [updates, ctx.ints([-1])])], axis=0)
    return ctx.op("Reshape", [written, ctx.ints(shape)])


# ---- resampling, group norm ---------------------------------------------------------------

_RESIZE_MODES = {"nearest": ("nearest", "asymmetric"), "linear": ("linear", None), "bilinear": ("linear", None),
                 "trilinear": ("linear", None), "bicubic": ("cubic", None)}


@emits("interpolate", "upsample")
def _interpolate(ctx, a, out):
    """torch's coordinate rules: nearest takes floor(dst * in/out) (ONNX asymmetric + floor);
    the linear and cubic modes map pixel centers (pytorch_half_pixel) or corners."""
    x, mode = a["input"], a.get("mode", "nearest")
    if mode not in _RESIZE_MODES:
        raise OnnxExporterError(f"interpolate mode {mode!r} is not exported (exported: {sorted(_RESIZE_MODES)})")
    if a.get("antialias"):
        raise OnnxExporterError("interpolate with antialias=True is not exported")
    onnx_mode, transform = _RESIZE_MODES[mode]
    if transform is None:
        transform = "align_corners" if a.get("align_corners") else "pytorch_half_pixel"
    n = ctx.rank(x) - 2
    scale = a.get("scale_factor")
    attrs = dict(mode=onnx_mode, coordinate_transformation_mode=transform, nearest_mode="floor",
                 cubic_coeff_a=-0.75 if onnx_mode == "cubic" else None)
    if scale is not None and not a.get("recompute_scale_factor") and transform != "align_corners":
        # torch maps coordinates with the given factor, not with the ratio of the sizes
        scales = [1.0, 1.0] + ([float(s) for s in scale] if isinstance(scale, (tuple, list)) else [float(scale)] * n)
        return ctx.op("Resize", [x, None, ctx.const(scales, np.float32)], **attrs)
    return ctx.op("Resize", [x, None, None, ctx.shape_tensor(out[0])], **attrs)


@emits("group_norm")
def _group_norm(ctx, a, out):
    """Normalized over each group's channels and positions, then the per-channel affine
    (written out: ONNX GroupNormalization's scale was per group before opset 21)."""
    x, groups, eps = a["input"], int(a["num_groups"]), float(a.get("eps", 1e-5))
    rank, c = ctx.rank(x), ctx.shape(x)[1]
    grouped = ctx.op("Reshape", [x, ctx.ints([0, groups, -1])])
    mean = _reduce_mean(ctx, grouped, [2])
    centered = ctx.op("Sub", [grouped, mean])
    var = _reduce_mean(ctx, ctx.op("Mul", [centered, centered]), [2])
    normed = ctx.op("Div", [centered, ctx.op("Sqrt", [ctx.op("Add", [var, ctx.const(eps, out[1])])])])
    y = ctx.op("Reshape", [normed, ctx.op("Shape", [x])])
    per_channel = ctx.ints([c] + [1] * (rank - 2))
    if a.get("weight") is not None:
        y = ctx.op("Mul", [y, ctx.op("Reshape", [a["weight"], per_channel])])
    if a.get("bias") is not None:
        y = ctx.op("Add", [y, ctx.op("Reshape", [a["bias"], per_channel])])
    return y


def _reduce_mean(ctx, x, axes):
    if ctx.opset >= 18:
        return ctx.op("ReduceMean", [x, ctx.ints(axes)], keepdims=1)
    return ctx.op("ReduceMean", [x], axes=axes, keepdims=1)


# the emitters of the other families register themselves in EMITTERS on import
from . import _ops_recurrent, _ops_tensor  # noqa: E402, F401
