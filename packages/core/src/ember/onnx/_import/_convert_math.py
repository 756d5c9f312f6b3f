"""Elementwise, matrix and reduction operators.

Source: the ONNX operator specification (onnx.ai/onnx/operators), opset 21: Add, Sub, Mul,
Div, Pow, Mod, comparisons, logic, unary math, activations, Clip, Where, MatMul, Gemm,
Einsum, Reduce*, ArgMax/ArgMin, Softmax, CumSum."""

from __future__ import annotations

import functools
import math
import operator

import ember
import ember.nn.functional as F

from . import runtime
from ._table import converts

_UNARY = {"Relu": F.relu, "Sigmoid": ember.sigmoid, "Tanh": ember.tanh, "Exp": ember.exp, "Log": ember.log,
          "Sqrt": ember.sqrt, "Neg": ember.neg, "Abs": ember.abs, "Erf": ember.erf, "Sin": ember.sin,
          "Cos": ember.cos, "Tan": ember.tan, "Asin": ember.asin, "Acos": ember.acos, "Atan": ember.atan,
          "Sinh": ember.sinh, "Cosh": ember.cosh, "Asinh": ember.asinh, "Acosh": ember.acosh, "Atanh": ember.atanh,
          "Reciprocal": ember.reciprocal, "Floor": ember.floor, "Ceil": ember.ceil,
          "Round": ember.round,  # half to even, as ONNX says
          "Sign": ember.sign, "Not": ember.logical_not, "IsNaN": ember.isnan, "Softsign": F.softsign,
          "HardSwish": F.hardswish, "Mish": F.mish, "BitwiseNot": ember.bitwise_not}


def _unary(fn):
    return lambda b, n: b.call(fn, b.tensor(n.input(0)))


for _op, _fn in _UNARY.items():
    converts(_op)(_unary(_fn))


@converts("Identity")
def _identity(b, n):
    return b.tensor(n.input(0))


@converts("Softplus")
def _softplus(b, n):
    return b.call(F.softplus, b.tensor(n.input(0)))  # log(1 + e^x); torch's threshold of 20 is below float32's ulp


@converts("Elu")
def _elu(b, n):
    return b.call(F.elu, b.tensor(n.input(0)), alpha=n.attrs["alpha"])


@converts("Celu")
def _celu(b, n):
    return b.call(F.celu, b.tensor(n.input(0)), alpha=n.attrs["alpha"])


@converts("LeakyRelu")
def _leaky_relu(b, n):
    return b.call(F.leaky_relu, b.tensor(n.input(0)), n.attrs["alpha"])


@converts("Selu")
def _selu(b, n):
    x = b.tensor(n.input(0))
    alpha, gamma = n.attrs["alpha"], n.attrs["gamma"]
    if math.isclose(alpha, 1.6732632423543772, rel_tol=1e-7) and math.isclose(gamma, 1.0507009873554805, rel_tol=1e-7):
        return b.call(F.selu, x)
    return b.call(operator.mul, b.call(F.elu, x, alpha=alpha), gamma)


@converts("Gelu")
def _gelu(b, n):
    return b.call(F.gelu, b.tensor(n.input(0)), approximate=n.attrs["approximate"])


@converts("HardSigmoid")
def _hardsigmoid(b, n):
    x, alpha, beta = b.tensor(n.input(0)), n.attrs["alpha"], n.attrs["beta"]
    if math.isclose(alpha, 1 / 6, rel_tol=1e-6) and beta == 0.5:  # torch's hardsigmoid
        return b.call(F.hardsigmoid, x)
    return b.call(runtime.hardsigmoid, x, alpha=alpha, beta=beta)


@converts("PRelu")
def _prelu(b, n):
    x, slope = b.tensor(n.input(0)), b.tensor(n.input(1))
    return b.call(ember.where, b.call(operator.lt, x, 0), b.call(operator.mul, x, slope), x)


@converts("Clip")
def _clip(b, n):
    x = n.input(0)
    lo, hi = (b.operand(n.input(i), [x]) if n.input(i) else None for i in (1, 2))
    if lo is None and hi is None:
        return b.tensor(x)
    return b.call(ember.clamp, b.tensor(x), lo, hi)


# ---- binary ---------------------------------------------------------------------------

def _operands(b, n):
    a, c = n.input(0), n.input(1)
    return b.operand(a, [c]), b.operand(c, [a])


def _binary(fn):
    return lambda b, n: b.call(fn, *_operands(b, n))


for _op, _fn in {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul, "Equal": operator.eq,
                 "Less": operator.lt, "LessOrEqual": operator.le, "Greater": operator.gt,
                 "GreaterOrEqual": operator.ge, "And": ember.logical_and, "Or": ember.logical_or,
                 "Xor": ember.logical_xor, "BitwiseAnd": ember.bitwise_and, "BitwiseOr": ember.bitwise_or,
                 "BitwiseXor": ember.bitwise_xor}.items():
    converts(_op)(_binary(_fn))


def _is_float(b, name) -> bool | None:
    dtype = b.dtype(name)
    return None if dtype is None else (dtype.is_floating_point or dtype.is_complex)


@converts("Div")
def _div(b, n):
    if _is_float(b, n.input(0)):
        return b.call(operator.truediv, *_operands(b, n))
    return b.call(runtime.div, b.tensor(n.input(0)), b.tensor(n.input(1)))  # integers truncate


@converts("Pow")
def _pow(b, n):
    if _is_float(b, n.input(0)):
        return b.call(operator.pow, *_operands(b, n))
    return b.call(runtime.pow, b.tensor(n.input(0)), b.operand(n.input(1), [n.input(0)]))


@converts("Mod")
def _mod(b, n):
    return b.call(runtime.mod, *_operands(b, n), fmod=n.attrs["fmod"])


def _variadic(fn):
    def convert(b, n):
        names = [i for i in n.inputs if i]
        return functools.reduce(lambda acc, name: b.call(fn, acc, b.tensor(name)), names[1:], b.tensor(names[0]))
    return convert


converts("Max")(_variadic(ember.maximum))
converts("Min")(_variadic(ember.minimum))
converts("Sum")(_variadic(operator.add))


@converts("Mean")
def _mean(b, n):
    names = [i for i in n.inputs if i]
    return b.call(operator.truediv, _variadic(operator.add)(b, n), float(len(names)))


@converts("Where")
def _where(b, n):
    c, x, y = n.input(0), n.input(1), n.input(2)
    return b.call(ember.where, b.tensor(c), b.operand(x, [y]), b.operand(y, [x]))  # one side at most is a number


# ---- matrices ---------------------------------------------------------------------------

@converts("MatMul")
def _matmul(b, n):
    return b.call(ember.matmul, b.tensor(n.input(0)), b.tensor(n.input(1)))


@converts("Gemm")
def _gemm(b, n):
    a, w, c = (b.tensor(n.input(i)) for i in range(3))
    alpha, beta, ta, tb = n.attrs["alpha"], n.attrs["beta"], n.attrs["transA"], n.attrs["transB"]
    c_shape = b.shape(n.input(2)) if n.input(2) else None
    if (alpha, beta, ta, tb) == (1.0, 1.0, 0, 1) and (c is None or (c_shape is not None and len(c_shape) == 1)):
        return b.call(F.linear, a, w, c)  # a Linear layer: x @ W^T + b
    return b.call(runtime.gemm, a, w, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb)


@converts("Einsum")
def _einsum(b, n):
    return b.call(ember.einsum, n.attrs["equation"], *(b.tensor(i) for i in n.inputs))


# ---- reductions, softmax ------------------------------------------------------------------

_REDUCTIONS = {"ReduceMean": (ember.mean, "mean"), "ReduceSum": (ember.sum, "sum"), "ReduceMax": (ember.amax, "max"),
               "ReduceMin": (ember.amin, "min"), "ReduceProd": (None, "prod"), "ReduceL2": (None, "l2"),
               "ReduceSumSquare": (None, "sum_square"), "ReduceLogSumExp": (ember.logsumexp, "log_sum_exp")}


@converts(*_REDUCTIONS)
def _reduce(b, n):
    direct, general = _REDUCTIONS[n.op_type]
    x = b.tensor(n.input(0))
    keep, noop = n.attrs["keepdims"], n.attrs.get("noop_with_empty_axes", 0)
    axes = b.ints(n.input(1)) if n.input(1) else []
    if axes is None:  # computed axes: read when the module runs
        return b.call(runtime.reduce, general, x, b.tensor(n.input(1)), keepdims=keep, noop_with_empty_axes=noop)
    if not axes and noop:
        return x
    if axes and direct is not None:
        return b.call(direct, x, dim=axes[0] if len(axes) == 1 else axes, keepdim=bool(keep))
    return b.call(runtime.reduce, general, x, axes or None, keepdims=keep)


@converts("ArgMax", "ArgMin")
def _arg_reduce(b, n):
    fn = ember.argmax if n.op_type == "ArgMax" else ember.argmin
    x, axis, keep = b.tensor(n.input(0)), n.attrs["axis"], n.attrs["keepdims"]
    if n.attrs["select_last_index"]:
        return b.call(runtime.arg_reduce, n.op_type[3:].lower(), x, axis=axis, keepdims=keep, select_last_index=1)
    return b.call(fn, x, dim=axis, keepdim=bool(keep))


@converts("Softmax", "LogSoftmax")
def _softmax(b, n):
    fn = F.softmax if n.op_type == "Softmax" else F.log_softmax
    return b.call(fn, b.tensor(n.input(0)), dim=n.attrs["axis"])


@converts("CumSum")
def _cumsum(b, n):
    x, axis = b.tensor(n.input(0)), b.ints(n.input(1))
    if axis is None:
        raise n.unsupported("with a computed axis is not supported")
    if n.attrs["exclusive"] or n.attrs["reverse"]:
        return b.call(runtime.cumsum, x, axis[0], exclusive=n.attrs["exclusive"], reverse=n.attrs["reverse"])
    return b.call(ember.cumsum, x, dim=axis[0])
