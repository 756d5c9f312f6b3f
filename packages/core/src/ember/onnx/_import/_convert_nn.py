"""Convolution, pooling and normalization operators.

ONNX lists pads as ``[begin of each spatial axis..., end of each...]``; equal begins and
ends become the torch functions' ``padding``, unequal ones an explicit ``F.pad`` first
(for pooling, ``runtime.pool``: -inf for max, and the output cut to ONNX's size).

Source: the ONNX operator specification (onnx.ai/onnx/operators), opset 21: Conv,
ConvTranspose, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool,
BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization."""

from __future__ import annotations

import ember
import ember.nn.functional as F

from . import runtime
from ._table import converts

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _spatial_rank(b, n, weight: str | None = None) -> int:
    kernel = n.attrs.get("kernel_shape")
    if kernel:
        return len(kernel)
    shape = b.shape(weight) if weight else None
    if shape is not None:
        return len(shape) - 2
    rank = b.rank(n.input(0))
    if rank is None:
        raise n.unsupported("of an input of unknown rank without kernel_shape is not supported")
    return rank - 2


def _padding(b, n, k: int, x):
    """``(x, torch padding)``: symmetric pads as ``padding``, others by an F.pad of ``x``."""
    auto = n.attrs.get("auto_pad", "NOTSET")
    if auto == "VALID":
        return x, 0
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        raise n.unsupported(f"with auto_pad={auto!r} is not supported (write explicit pads)")
    pads = list(n.attrs.get("pads") or [0] * (2 * k))
    begin, end = pads[:k], pads[k:]
    if begin == end:
        if not any(begin):
            return x, 0
        return x, tuple(begin) if k > 1 else begin[0]
    torch_pads = []
    for i in reversed(range(k)):
        torch_pads += [begin[i], end[i]]
    return b.call(F.pad, x, torch_pads), 0


def _tuple(values, k: int, default: int = 1):
    values = list(values or [default] * k)
    return values[0] if k == 1 else tuple(values)


@converts("Conv")
def _conv(b, n):
    k = _spatial_rank(b, n, n.input(1))
    x, padding = _padding(b, n, k, b.tensor(n.input(0)))
    kwargs = {}
    for key, torch_key in (("strides", "stride"), ("dilations", "dilation")):
        value = _tuple(n.attrs.get(key), k)
        if value != _tuple(None, k):
            kwargs[torch_key] = value
    if padding:
        kwargs["padding"] = padding
    if n.attrs["group"] != 1:
        kwargs["groups"] = n.attrs["group"]
    return b.call(_CONV[k], x, b.tensor(n.input(1)), b.tensor(n.input(2)), **kwargs)


@converts("ConvTranspose")
def _conv_transpose(b, n):
    k = _spatial_rank(b, n, n.input(1))
    if n.attrs.get("output_shape") or n.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        raise n.unsupported("with output_shape or auto_pad is not supported (write explicit pads)")
    pads = list(n.attrs.get("pads") or [0] * (2 * k))
    if pads[:k] != pads[k:]:
        raise n.unsupported(f"with unequal begin and end pads {pads} is not supported")
    return b.call(_CONV_T[k], b.tensor(n.input(0)), b.tensor(n.input(1)), b.tensor(n.input(2)),
                  stride=_tuple(n.attrs.get("strides"), k), padding=_tuple(pads[:k], k, 0),
                  output_padding=_tuple(n.attrs.get("output_padding"), k, 0), groups=n.attrs["group"],
                  dilation=_tuple(n.attrs.get("dilations"), k))


def _asymmetric_pool(b, n, kind: str, k: int):
    """Pads that differ at the two ends of an axis: one ``runtime.pool`` call."""
    pads = list(n.attrs.get("pads") or [0] * (2 * k))
    if n.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID") or pads[:k] == pads[k:]:
        return None
    return b.call(runtime.pool, kind, b.tensor(n.input(0)), list(n.attrs["kernel_shape"]),
                  list(n.attrs.get("strides") or [1] * k), pads, dilations=n.attrs.get("dilations"),
                  ceil_mode=n.attrs["ceil_mode"], count_include_pad=n.attrs.get("count_include_pad", 0))


@converts("MaxPool")
def _max_pool(b, n):
    if len(n.outputs) > 1 and n.outputs[1]:
        return [_max_pool_values(b, n), None]  # Indices: ONNX's flat layout differs from torch's
    return _max_pool_values(b, n)


def _max_pool_values(b, n):
    k = len(n.attrs["kernel_shape"])
    asymmetric = _asymmetric_pool(b, n, "max", k)
    if asymmetric is not None:
        return asymmetric
    x, padding = _padding(b, n, k, b.tensor(n.input(0)))
    kwargs = {"stride": _tuple(n.attrs.get("strides"), k)}  # ONNX's stride defaults to 1, torch's to the kernel
    if padding:
        kwargs["padding"] = padding
    if _tuple(n.attrs.get("dilations"), k) != _tuple(None, k):
        kwargs["dilation"] = _tuple(n.attrs.get("dilations"), k)
    if n.attrs["ceil_mode"]:
        kwargs["ceil_mode"] = True
    return b.call(_MAX_POOL[k], x, _tuple(n.attrs["kernel_shape"], k), **kwargs)


@converts("AveragePool")
def _avg_pool(b, n):
    k = len(n.attrs["kernel_shape"])
    if _tuple(n.attrs.get("dilations"), k) != _tuple(None, k):
        raise n.unsupported("with dilations is not supported (torch's avg_pool has none)")
    asymmetric = _asymmetric_pool(b, n, "average", k)
    if asymmetric is not None:
        return asymmetric
    x, padding = _padding(b, n, k, b.tensor(n.input(0)))
    kwargs = {"stride": _tuple(n.attrs.get("strides"), k)}
    if padding:
        kwargs["padding"] = padding
        kwargs["count_include_pad"] = bool(n.attrs["count_include_pad"])
    if n.attrs["ceil_mode"]:
        kwargs["ceil_mode"] = True
    return b.call(_AVG_POOL[k], x, _tuple(n.attrs["kernel_shape"], k), **kwargs)


@converts("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(b, n):
    fn = ember.mean if n.op_type == "GlobalAveragePool" else ember.amax
    x, rank = b.tensor(n.input(0)), b.rank(n.input(0))
    if rank is None:
        return b.call(runtime.global_pool, "average" if fn is ember.mean else "max", x)
    return b.call(fn, x, dim=list(range(2, rank)), keepdim=True)


@converts("BatchNormalization")
def _batch_norm(b, n):
    if n.attrs.get("training_mode"):
        raise n.unsupported("with training_mode=1 is not supported (the imported module computes inference)")
    x, scale, bias, mean, var = (b.tensor(n.input(i)) for i in range(5))
    return [b.call(F.batch_norm, x, mean, var, scale, bias, False, 0.0, n.attrs["epsilon"])] + \
        [None] * (len(n.outputs) - 1)


@converts("InstanceNormalization")
def _instance_norm(b, n):
    x, scale, bias = (b.tensor(n.input(i)) for i in range(3))
    return b.call(F.instance_norm, x, weight=scale, bias=bias, eps=n.attrs["epsilon"])


@converts("LayerNormalization")
def _layer_norm(b, n):
    x, scale, bias = (b.tensor(n.input(i)) for i in range(3))
    axis, eps = n.attrs["axis"], n.attrs["epsilon"]
    shape, rank = b.shape(n.input(1)), b.rank(n.input(0))
    if shape is not None and (axis == -len(shape) or (rank is not None and rank - axis == len(shape))):
        out = b.call(F.layer_norm, x, list(shape), scale, bias, eps)
    else:
        out = b.call(runtime.layer_norm, x, scale, bias, axis=axis, epsilon=eps)
    return [out] + [None] * (len(n.outputs) - 1)  # Mean, InvStdDev: training outputs


@converts("GroupNormalization")
def _group_norm(b, n):
    x, scale, bias = (b.tensor(n.input(i)) for i in range(3))
    return b.call(F.group_norm, x, n.attrs["num_groups"], scale, bias, n.attrs["epsilon"])
