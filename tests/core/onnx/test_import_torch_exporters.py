"""ember.onnx.load_model on files PyTorch's two exporters wrote (fixtures/make_fixtures.py:
torch.onnx.export with dynamo=True and dynamo=False): onnxruntime running the same file is
the oracle, at the traced shape and at another size of the dynamic axes; the module's
parameters are the file's float initializers, and an imported model fine-tunes."""

import json
import os

import numpy as np
import onnx
import pytest
from _onnx_check import session

import ember

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
with open(os.path.join(FIXTURES, "manifest.json")) as _f:
    MANIFEST = {entry["file"]: entry for entry in json.load(_f)["files"]}

# a conv and a transformer model of each exporter
FINE_TUNED = ["resnet18_narrow_dynamo.onnx", "mobilenet_v3_tiny_legacy.onnx", "transformer_encoder_legacy.onnx",
              "bert_tiny_dynamo.onnx", "gpt2_tiny_legacy.onnx"]


def _inputs(entry, key, seed):
    """Random inputs of the entry's shapes (``key``: "shape" or "other"); a mask keeps a
    random number (at least one) of leading positions of each row."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in entry["inputs"]:
        shape = spec[key]
        if spec.get("mask"):
            lengths = rng.integers(1, shape[1] + 1, size=shape[0])
            out.append((np.arange(shape[1])[None, :] < lengths[:, None]).astype(np.int64))
        elif spec["dtype"] == "int64":
            out.append(rng.integers(0, spec["vocab"], size=shape, dtype=np.int64))
        else:
            out.append(rng.standard_normal(shape).astype(np.float32))
    return out


def _outputs(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


@pytest.fixture(scope="module")
def imported():
    cache = {}

    def load(file):
        if file not in cache:
            cache[file] = ember.onnx.load_model(os.path.join(FIXTURES, file))
        return cache[file]
    return load


def test_the_manifest_lists_both_exporters_of_every_model():
    stems = {}
    for file, entry in MANIFEST.items():
        assert os.path.isfile(os.path.join(FIXTURES, file))
        stem = file.split("_dynamo")[0].split("_legacy")[0]
        stems.setdefault(stem, set()).add("dynamo=True" in entry["source"])
    assert len(stems) == 8
    assert all(exporters == {True, False} for exporters in stems.values())
    assert {e["opset"] for e in MANIFEST.values()} >= {14, 20, 21}


@pytest.mark.parametrize("key", ["shape", "other"])
@pytest.mark.parametrize("file", sorted(MANIFEST))
def test_outputs_match_onnxruntime(imported, file, key):
    entry = MANIFEST[file]
    gm = imported(file)
    feeds = _inputs(entry, key, seed=len(file) + len(key))
    sess = session(os.path.join(FIXTURES, file))
    want = sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), feeds)})
    with ember.no_grad():
        got = _outputs(gm(*[ember.from_numpy(a) for a in feeds]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == w.shape and g.numpy().dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w, rtol=entry["rtol"], atol=entry["rtol"])


@pytest.mark.parametrize("file", sorted(MANIFEST))
def test_parameters_are_the_float_initializers(imported, file):
    """Every weight of the file, float and of one dim or more, is a parameter of its value
    (BatchNormalization's running statistics are buffers)."""
    gm = imported(file)
    graph = onnx.load(os.path.join(FIXTURES, file)).graph
    statistics = {name for n in graph.node if n.op_type == "BatchNormalization" for name in n.input[3:5]}
    arrays = {i.name: onnx.numpy_helper.to_array(i) for i in graph.initializer}
    floats = {name: a for name, a in arrays.items()  # 0-d floats are the exporter's constants
              if a.dtype.kind == "f" and a.ndim > 0 and name not in statistics}
    params = dict(gm.named_parameters())
    assert params, "a model with weights has parameters"
    paths = {gm.initializer_names[name]: name for name in floats if name in gm.initializer_names}
    assert set(params) == set(paths)  # each parameter is one initializer, and every used one is a parameter
    for path, name in paths.items():
        np.testing.assert_array_equal(params[path].detach().numpy(), floats[name])
        assert params[path].requires_grad


@pytest.mark.parametrize("file", FINE_TUNED)
def test_an_imported_model_fine_tunes(file):
    entry = MANIFEST[file]
    gm = ember.onnx.load_model(os.path.join(FIXTURES, file))
    inputs = [ember.from_numpy(a) for a in _inputs(entry, "shape", seed=1)]
    with ember.no_grad():
        targets = [ember.randn(*o.shape) for o in _outputs(gm(*inputs))]

    def loss_fn():
        return sum(((o - t) ** 2).mean() for o, t in zip(_outputs(gm(*inputs)), targets))

    opt = ember.optim.SGD(gm.parameters(), lr=0.05)
    losses = []
    for step in range(4):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        if step == 0:
            for name, p in gm.named_parameters():
                assert p.grad is not None, name
                grad = p.grad.numpy()
                assert np.isfinite(grad).all() and np.abs(grad).max() > 0, name
        losses.append(loss.item())
        opt.step()
    with ember.no_grad():
        losses.append(loss_fn().item())
    assert losses[-1] < losses[0]
    assert all(b < a for a, b in zip(losses, losses[1:]))
