"""Model parity with torchvision: same state_dict layout, same logits for the same weights.

A fixture file ``fixtures/models_<family>.npz`` holds, per model name ``<name>``:

* ``<name>.spec``: a JSON string: ``builder`` (the registered name), ``kwargs`` (builder
  arguments), ``seed`` (weights), ``input_seed`` and ``input_shape``, and ``state``: the
  state_dict as ``[key, shape, dtype]`` in torchvision's key order;
* ``<name>.logits`` (optional): torchvision's eval-mode output for the filled weights and
  the seeded input. Without it only the layout is compared (for models too big to fill
  cheaply).

No weights are stored: both sides regenerate them with ``fill_values`` (numpy only), so
this module imports neither torch nor ember at the top and serves both the fixture scripts
(run where torchvision is installed) and the tests.

Fill rule, per floating entry in key order, from one ``numpy.random.default_rng(seed)``
(uniform draws, cheap for 100M-parameter layers): ``running_var`` in [0.5, 1.5); tensors
of 2+ dims uniform with variance ``1 / fan_in`` (``fan_in = prod(shape[1:])``) so
activations keep their scale through depth; 1-d ``weight`` (norm scales) in [0.5, 1.0);
everything else (biases, running means) in [-0.1, 0.1). Integer entries
(``num_batches_tracked``) are left alone.

Tolerance: logits agree within ``RTOL = 1e-4`` relative to the largest expected logit
magnitude (float32; convolutions and matmuls sum in different orders in each library).
"""

from __future__ import annotations

import json
import math

import numpy as np

RTOL = 1e-4


def fill_values(state: list, seed: int) -> dict[str, np.ndarray]:
    """Deterministic values for the floating entries of ``state`` (``[key, shape, dtype]``)."""
    rng = np.random.default_rng(seed)
    out = {}
    for key, shape, dtype in state:
        if not dtype.startswith(("float", "bfloat")):
            continue
        shape = tuple(shape)
        # float32 throughout: exact IEEE arithmetic (same on both sides) at half the memory
        u = rng.random(math.prod(shape), dtype=np.float32)
        leaf = key.rsplit(".", 1)[-1]
        if leaf == "running_var":
            v = u + np.float32(0.5)
        elif len(shape) >= 2:
            v = (u * np.float32(2) - np.float32(1)) * np.float32(math.sqrt(3.0 / math.prod(shape[1:])))
        elif leaf == "weight" and len(shape) == 1:
            v = u * np.float32(0.5) + np.float32(0.5)
        else:
            v = (u * np.float32(2) - np.float32(1)) * np.float32(0.1)
        out[key] = v.reshape(shape).astype(np.float32 if dtype == "bfloat16" else dtype)
    return out


def make_input(seed: int, shape) -> np.ndarray:
    """The float32 standard-normal input of a fixture entry."""
    return np.random.default_rng(seed).standard_normal(tuple(shape)).astype(np.float32)


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def state_layout(model) -> list:
    """``[key, shape, dtype]`` for each state_dict entry of a torch or ember module."""
    return [[k, list(v.shape), _dtype_name(v.dtype)] for k, v in model.state_dict().items()]


# ---- fixture side (torch) -------------------------------------------------------------

def torch_entry(name: str, model, *, builder: str | None = None, kwargs: dict | None = None, seed: int = 0,
                input_seed: int = 1, input_shape=(2, 3, 64, 64), logits: bool = True) -> dict[str, np.ndarray]:
    """The fixture arrays of one torchvision model (``<name>.spec`` and ``<name>.logits``).

    ``model`` must have been built as ``builder(**kwargs)`` (``builder`` defaults to ``name``).
    """
    import torch
    spec = {"builder": builder or name, "kwargs": kwargs or {}, "seed": seed, "input_seed": input_seed,
            "input_shape": list(input_shape), "state": state_layout(model)}
    out = {f"{name}.spec": np.array(json.dumps(spec))}
    if logits:
        values = fill_values(spec["state"], seed)
        sd = model.state_dict()
        model.load_state_dict({k: torch.from_numpy(values[k]) if k in values else v for k, v in sd.items()})
        model.eval()
        with torch.no_grad():
            y = model(torch.from_numpy(make_input(input_seed, input_shape)))
        out[f"{name}.logits"] = y.numpy().astype(np.float32)
    return out


def write_fixture(path: str, entries: dict[str, np.ndarray]) -> None:
    np.savez_compressed(path, **entries)


# ---- test side (ember) ----------------------------------------------------------------

def load_fixture(path: str) -> dict[str, dict]:
    """``{name: spec}`` of a fixture file; a spec holds ``logits`` (array or None)."""
    data = np.load(path)
    specs = {}
    for key in data.files:
        if key.endswith(".spec"):
            name = key[: -len(".spec")]
            spec = json.loads(str(data[key]))
            spec["logits"] = data[f"{name}.logits"] if f"{name}.logits" in data.files else None
            specs[name] = spec
    return specs


def check_model(spec: dict, model=None) -> None:
    """Assert that ember's model matches the fixture ``spec``: identical state_dict keys (in
    order), shapes and dtypes; then, when the fixture has logits, identical eval-mode logits
    within ``RTOL`` for the same filled weights. ``model`` defaults to
    ``ember_vision.models.get_model(spec["builder"], **spec["kwargs"])``."""
    import ember
    from ember_vision import models

    if model is None:
        model = models.get_model(spec["builder"], **spec["kwargs"])
    got = state_layout(model)
    want = spec["state"]
    assert [k for k, _, _ in got] == [k for k, _, _ in want], _key_diff(got, want)
    for (key, g_shape, g_dtype), (_, w_shape, w_dtype) in zip(got, want):
        assert (g_shape, g_dtype) == (w_shape, w_dtype), f"{key}: ember {g_shape} {g_dtype}, torch {w_shape} {w_dtype}"
    if spec["logits"] is None:
        return
    values = fill_values(want, spec["seed"])
    sd = model.state_dict()
    model.load_state_dict({k: ember.from_numpy(values[k]) if k in values else v for k, v in sd.items()})
    model.eval()
    with ember.no_grad():
        y = model(ember.from_numpy(make_input(spec["input_seed"], spec["input_shape"])))
    expected = spec["logits"]
    assert tuple(y.shape) == expected.shape and _dtype_name(y.dtype) == "float32"
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(y.numpy(), expected, rtol=RTOL, atol=RTOL * scale)


def _key_diff(got, want) -> str:
    g, w = [k for k, _, _ in got], [k for k, _, _ in want]
    missing, extra = [k for k in w if k not in g], [k for k in g if k not in w]
    if missing or extra:
        return f"state_dict keys differ: missing {missing[:5]}, unexpected {extra[:5]}"
    first = next(i for i, (a, b) in enumerate(zip(g, w)) if a != b)
    return f"state_dict key order differs at {first}: ember {g[first]!r}, torch {w[first]!r}"
