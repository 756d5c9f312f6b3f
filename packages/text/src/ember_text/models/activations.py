"""The activation functions config files name (transformers.activations.ACT2FN)."""

from __future__ import annotations

from ember.nn import functional as F

ACT2FN = {
    "gelu": F.gelu,  # the exact, erf-based GELU
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": lambda x: x.tanh(),
}


def get_activation(name: str):
    """The function for a config's activation name. Raises ValueError listing the known ones."""
    try:
        return ACT2FN[name]
    except KeyError:
        raise ValueError(f"activation {name!r} is not supported; expected one of {sorted(ACT2FN)}") from None
