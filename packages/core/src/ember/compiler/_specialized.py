"""The float parameters of ops that torch specializes, and plain floats for the ops.

torch keeps a symbolic float symbolic where an op's schema takes a ``Scalar`` (``mul``,
``add``'s ``alpha``, ``clamp``, ``leaky_relu``, ``full``, ``where`` ...) and bakes it in,
guarding its value, where the schema takes a ``float`` (``dropout``'s ``p``, a norm's
``eps``, a loss's ``margin``, ``interpolate``'s ``scale_factor``). The recorder does the
same for the parameters listed here: the graph holds the value as a constant and a new
value records anew. ``arange`` is listed too, though torch keeps its bounds symbolic: its
result's length follows them, and the recorder's sizes follow tensors and ints only.
"""

from __future__ import annotations

import inspect

from ..fx._symbolic_floats import SymFloat

__all__ = ["SPECIALIZED", "specialize_params", "plain"]

_DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
             "native_dropout")
SPECIALIZED: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_DROPOUTS, ("p",)),
    "bernoulli": ("p",), "bernoulli_": ("p",), "normal": ("mean", "std"), "uniform_": ("a", "b"),
    "scaled_dot_product_attention": ("dropout_p", "scale"),
    "layer_norm": ("eps",), "group_norm": ("eps",), "rms_norm": ("eps",), "batch_norm": ("momentum", "eps"),
    "instance_norm": ("momentum", "eps"),
    "cosine_similarity": ("eps",), "pairwise_distance": ("p", "eps"), "cdist": ("p",), "pdist": ("p",),
    "smooth_l1_loss": ("beta",), "huber_loss": ("delta",), "cross_entropy": ("label_smoothing",),
    "linear_cross_entropy": ("label_smoothing",), "poisson_nll_loss": ("eps",),
    "triplet_margin_loss": ("margin", "p", "eps"), "hinge_embedding_loss": ("margin",),
    "margin_ranking_loss": ("margin",), "cosine_embedding_loss": ("margin",),
    "embedding": ("max_norm", "norm_type"), "embedding_bag": ("max_norm", "norm_type"),
    "nan_to_num": ("nan", "posinf", "neginf"), "isclose": ("rtol", "atol"), "allclose": ("rtol", "atol"),
    "quantile": ("q",), "nanquantile": ("q",), "as_tensor": ("data",), "logspace": ("base",), "logit": ("eps",),
    "kaiser_window": ("beta",), "hamming_window": ("alpha", "beta"),
    "interpolate": ("scale_factor",), "upsample": ("scale_factor",), "upsample_nearest": ("scale_factor",),
    "upsample_bilinear": ("scale_factor",), "fractional_max_pool2d": ("output_ratio",),
    "arange": ("start", "end", "step"),
}

_POSITIONS: dict[str, dict[str, int]] = {}  # op name -> {parameter name: position}


def _positions(op) -> dict[str, int]:
    found = _POSITIONS.get(op.name)
    if found is None:
        try:
            params = inspect.signature(op.impl).parameters
        except (TypeError, ValueError):
            params = {}
        found = _POSITIONS[op.name] = {name: i for i, name in enumerate(params)}
    return found


def _specialized(a):
    if isinstance(a, SymFloat):
        return a.specialize()
    if type(a) in (list, tuple):
        return type(a)(_specialized(x) for x in a)
    return a


def specialize_params(op, args, kwargs):
    """``(args, kwargs)`` with the symbolic floats of ``op``'s specialized parameters
    replaced by their values, guarded."""
    names = SPECIALIZED.get(op.name.rpartition(".")[2])
    if names is None:
        return args, kwargs
    positions = _positions(op)
    args, kwargs = list(args), dict(kwargs)
    for name in names:
        i = positions.get(name)
        if i is not None and i < len(args):
            args[i] = _specialized(args[i])
        if name in kwargs:
            kwargs[name] = _specialized(kwargs[name])
    return tuple(args), kwargs


def plain(a):
    """``a`` with its SymFloats replaced by their floats (an op computes on plain numbers);
    ``a`` itself when it holds none."""
    if isinstance(a, SymFloat):
        return float.__float__(a)
    kind = type(a)
    if kind is tuple or kind is list:
        out = [plain(x) for x in a]
        return a if all(x is y for x, y in zip(out, a)) else kind(out)
    if kind is dict:
        out = {k: plain(v) for k, v in a.items()}
        return a if all(out[k] is v for k, v in a.items()) else out
    return a
