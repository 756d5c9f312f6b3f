"""The in-place forms (``x.asin_()``, ``x.index_add_(...)``, ...) of the out-of-place ops
that torch gives one: each runs its op and writes the result into ``self``
(``_helpers.inplace``: version bump, autograd history handed over, torch's errors for
leaves that require grad and for results that do not fit)."""

from __future__ import annotations

from . import (
    decompositions,
    elementwise,
    elementwise_math,
    indexing,
    layout,
    numerics,
    products,
    reduction,
    statistics,
)
from ._helpers import inplace
from .elementwise import _inplace_method

_SOURCES = (elementwise, elementwise_math, indexing, layout, products, reduction, statistics, decompositions,
            numerics)

# torch's in-place Tensor methods that ember has the op of (the others are defined beside their op)
NAMES = """
asin acos atan sinh cosh asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh erf erfc erfinv lgamma
digamma i0 sinc logit frac sgn deg2rad rad2deg atan2 arctan2 hypot copysign xlogy float_power fmod remainder
floor_divide lerp addcmul addcdiv tril triu index_add index_copy index_fill scatter_reduce masked_scatter clamp_min
clamp_max reciprocal square sign floor ceil trunc fix round exp2 log2 log10 log1p expm1 rsqrt sin cos tan
nan_to_num cumsum cumprod logical_and logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor
bitwise_not bitwise_left_shift bitwise_right_shift addmm addmv addr baddbmm addbmm negative absolute multiply
divide subtract true_divide polygamma_ mvlgamma
ldexp gcd lcm heaviside nextafter
""".split()


def _find(name):
    for module in _SOURCES:
        fn = getattr(module, name, None)
        if fn is not None:
            return fn
    raise AttributeError(name)


def forms() -> dict:
    """{name_: method} for every name above that ember has the op of."""
    out = {}
    for name in NAMES:
        if name.endswith("_"):
            continue
        out[name + "_"] = _inplace_method(_find(name), name + "_")

    def polygamma_(self, n):
        return inplace(self, lambda t: elementwise_math.polygamma(n, t))
    polygamma_.__doc__ = "In-place polygamma of order ``n``."
    out["polygamma_"] = polygamma_
    return out
