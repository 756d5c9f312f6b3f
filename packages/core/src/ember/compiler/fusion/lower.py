"""Each fusable ember op as row-program values: its definition written in the program's
primitives (the same formulas as the op's documentation: torch's for GELU, layer_norm,
softmax, cross_entropy). A lowering raises ``NotFusable`` for arguments it does not
cover; the op then runs as itself."""

from __future__ import annotations

import math

from .program import Program, Value

__all__ = ["NotFusable", "LOWERINGS", "lower"]


class NotFusable(Exception):
    pass


def _v(x):
    return isinstance(x, Value)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _operand(x):
    if _v(x) or _number(x):
        return x
    raise NotFusable(f"operand {type(x).__name__}")


def _binary(name):
    def lower(p, args, kwargs, info):
        a, b = args[:2]
        alpha = kwargs.get("alpha", 1)
        if len(args) > 2 or set(kwargs) - {"alpha"} or not (_v(a) or _v(b)):
            raise NotFusable(name)
        b = _operand(b)
        if alpha != 1:
            b = p.mul(b, alpha)
        return p.op(name, _operand(a), b)
    return lower


def _unary(name):
    def lower(p, args, kwargs, info):
        if len(args) != 1 or kwargs or not _v(args[0]):
            raise NotFusable(name)
        return p.op(name, args[0])
    return lower


def _div(p, args, kwargs, info):
    if kwargs.get("rounding_mode") is not None or len(args) != 2:
        raise NotFusable("div rounding_mode")
    return p.div(_operand(args[0]), _operand(args[1]))


def _rsub(p, args, kwargs, info):
    a, b = args
    return p.sub(_operand(b), p.mul(_operand(a), kwargs.get("alpha", 1)))


def _pow(p, args, kwargs, info):
    x, e = args
    if not _v(x) or not _number(e) or kwargs:
        raise NotFusable("pow")
    if e == 2:
        return p.mul(x, x)
    return p.op("powc", x, attr=float(e))


def _gelu(p, args, kwargs, info):
    x = args[0]
    approximate = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
    if approximate == "tanh":
        inner = p.mul(p.add(x, p.mul(p.mul(p.mul(x, x), x), 0.044715)), math.sqrt(2 / math.pi))
        return p.mul(p.mul(x, 0.5), p.add(p.op("tanh", inner), 1.0))
    return p.op("gelu", x)


def _silu(p, args, kwargs, info):
    if kwargs.get("inplace") or (len(args) > 1 and args[1]):
        raise NotFusable("inplace silu")
    return p.mul(args[0], p.op("sigmoid", args[0]))


def _relu(p, args, kwargs, info):
    if len(args) != 1 or kwargs:
        raise NotFusable("relu")
    return p.op("relu", args[0])


def _last_dim(dim, info) -> None:
    if dim is None or dim not in (-1, info.ndim - 1):
        raise NotFusable("reduction over a dimension other than the last")


def _softmax(log: bool):
    def lower(p, args, kwargs, info):
        x, dim = args[0], kwargs.get("dim", args[1] if len(args) > 1 else None)
        if kwargs.get("dtype") is not None or (len(args) > 2 and args[2] is not None):
            raise NotFusable("softmax dtype")
        _last_dim(dim, info)
        shifted = p.sub(x, p.op("rmax", x))
        total = p.op("rsum", p.op("exp", shifted))
        return p.sub(shifted, p.op("log", total)) if log else p.div(p.op("exp", shifted), total)
    return lower


def _layer_norm(p, args, kwargs, info):
    names = ("input", "normalized_shape", "weight", "bias", "eps")
    a = dict(zip(names, args), **kwargs)
    shape = a["normalized_shape"]
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(shape) != 1 or shape[0] != info.width:
        raise NotFusable("layer_norm over more than the last dimension")
    x, w, b, eps = a["input"], a.get("weight"), a.get("bias"), a.get("eps", 1e-5)
    inv_c = 1.0 / info.width
    centered = p.sub(x, p.mul(p.op("rsum", x), inv_c))
    rstd = p.op("rsqrt", p.add(p.mul(p.op("rsum", p.mul(centered, centered)), inv_c), eps))
    y = p.mul(centered, rstd)
    if w is not None:
        y = p.mul(y, w)
    if b is not None:
        y = p.add(y, b)
    return y


def _reduce(mean: bool):
    def lower(p, args, kwargs, info):
        x = args[0]
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if isinstance(dim, (list, tuple)) and len(dim) == 1:
            dim = dim[0]
        if kwargs.get("dtype") is not None:
            raise NotFusable("sum dtype")
        if dim is None:  # over every element: row sums, added up after the loop
            if kwargs.get("keepdim") or len(args) > 2 or not _v(x) or x.kind != "vec":
                raise NotFusable("a full reduction keeping its dims, or of a non-element value")
            return _total(p, p.op("rsum", x), mean)
        _last_dim(dim, info)
        s = p.op("rsum", x)
        return p.mul(s, 1.0 / info.width) if mean else s
    return lower


def _total(p, row_sums, mean: bool):
    """A reduction over every element of the region: its row sums, added up (and for a mean
    divided by the element count) after the loop."""
    return ("mean", row_sums, None) if mean else ("sum", row_sums)


def _square(p, args, kwargs, info):
    if len(args) != 1 or kwargs or not _v(args[0]):
        raise NotFusable("square")
    return p.mul(args[0], args[0])


def _mse_loss(p, args, kwargs, info):
    names = ("input", "target", "size_average", "reduce", "reduction", "weight")
    a = dict(zip(names, args), **kwargs)
    x, t = a["input"], a["target"]
    if a.get("weight") is not None or a.get("size_average") is not None or a.get("reduce") is not None:
        raise NotFusable("mse_loss weight / legacy reduction")
    if not (_v(x) and _v(t) and x.kind == t.kind == "vec"):
        raise NotFusable("mse_loss of inputs other than two of the region's shape")
    d = p.sub(x, t)
    loss = p.mul(d, d)
    reduction = a.get("reduction", "mean")
    if reduction == "none":
        return loss
    if reduction in ("sum", "mean"):
        return _total(p, p.op("rsum", loss), reduction == "mean")
    raise NotFusable(f"reduction {reduction!r}")


def _cross_entropy(p, args, kwargs, info):
    names = ("input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing")
    a = dict(zip(names, args), **kwargs)
    x, t = a["input"], a["target"]
    if a.get("weight") is not None or a.get("size_average") is not None or a.get("reduce") is not None:
        raise NotFusable("cross_entropy weight / legacy reduction")
    if info.ndim != 2 or not _v(t) or t.kind != "irow":
        raise NotFusable("cross_entropy on [N, C] logits with class indices only")
    smoothing = float(a.get("label_smoothing", 0.0))
    p.target_checks.append((t, int(a.get("ignore_index", -100))))  # the op's IndexError for a bad target
    logp = _softmax(True)(p, (x, -1), {}, info)
    valid = p.op("ne", t, float(a.get("ignore_index", -100)))
    nll = p.neg(p.op("rsum", p.mul(logp, p.op("onehot", t))))
    if smoothing:
        uniform = p.mul(p.neg(p.op("rsum", logp)), 1.0 / info.width)
        nll = p.add(p.mul(nll, 1.0 - smoothing), p.mul(uniform, smoothing))
    loss = p.mul(nll, valid)
    reduction = a.get("reduction", "mean")
    if reduction == "none":
        return loss
    if reduction == "sum":
        return ("sum", loss)
    if reduction == "mean":
        return ("mean", loss, valid)
    raise NotFusable(f"reduction {reduction!r}")


LOWERINGS = {
    "add": _binary("add"), "sub": _binary("sub"), "mul": _binary("mul"), "div": _div, "true_divide": _div,
    "rsub": _rsub, "pow": _pow, "neg": _unary("neg"), "negative": _unary("neg"), "exp": _unary("exp"),
    "log": _unary("log"), "tanh": _unary("tanh"), "sigmoid": _unary("sigmoid"), "sqrt": _unary("sqrt"),
    "rsqrt": _unary("rsqrt"), "reciprocal": _unary("recip"), "abs": _unary("abs"), "relu": _relu,
    "gelu": _gelu, "silu": _silu, "softmax": _softmax(False), "log_softmax": _softmax(True),
    "layer_norm": _layer_norm, "sum": _reduce(False), "mean": _reduce(True), "cross_entropy": _cross_entropy,
    "square": _square, "mse_loss": _mse_loss,
}


def lower(p: Program, name: str, args, kwargs, info):
    rule = LOWERINGS.get(name)
    if rule is None:
        raise NotFusable(name)
    return rule(p, tuple(args), dict(kwargs), info)
