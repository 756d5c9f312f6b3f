"""ember.onnx.load_model on files written by PyTorch's exporters (fixtures/make_fixtures.py:
both ``dynamo=True`` and ``dynamo=False``, and opset-converted variants). Each file is
imported and run at its traced input shapes and at other batch/sequence sizes; the oracle
is onnxruntime on the same file and the same inputs."""

import json
import os

import numpy as np
import onnxruntime
import pytest

import ember

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
with open(os.path.join(HERE, "manifest.json")) as _f:
    MANIFEST = json.load(_f)
ENTRIES = MANIFEST["files"]


def _inputs(specs, key, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in specs:
        shape = spec[key]
        if spec.get("mask"):  # padding at the end of some rows, as a tokenizer's batch has
            mask = np.ones(shape, np.int64)
            for row in range(1, shape[0]):
                mask[row, shape[1] - row:] = 0
            feeds[spec["name"]] = mask
        elif spec["dtype"] == "int64":
            feeds[spec["name"]] = rng.integers(0, spec["vocab"], shape).astype(np.int64)
        else:
            feeds[spec["name"]] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def test_every_fixture_is_listed():
    on_disk = {f for f in os.listdir(HERE) if f.endswith(".onnx")}
    assert on_disk == {e["file"] for e in ENTRIES}
    sources = {e["source"] for e in ENTRIES}
    assert {"torch.onnx.export(dynamo=True)", "torch.onnx.export(dynamo=False)"} <= sources


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"][:-5] for e in ENTRIES])
def test_fixture_matches_onnxruntime(entry):
    path = os.path.join(HERE, entry["file"])
    gm = ember.onnx.load_model(path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    assert [s["name"] for s in entry["inputs"]] == names
    for seed, key in enumerate(("shape", "other")):
        feeds = _inputs(entry["inputs"], key, seed)
        want = session.run(None, feeds)
        with ember.no_grad():
            got = gm(*[ember.from_numpy(feeds[n]) for n in names])
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.numpy().dtype == w.dtype and g.shape == w.shape
            # relative to the output's scale: values near 0 carry the rounding of the larger ones
            np.testing.assert_allclose(g.numpy(), w, rtol=entry["rtol"], atol=entry["rtol"] * float(np.abs(w).max()))


@pytest.mark.parametrize("file", ["fashion_cnn_legacy.onnx", "mlp_dynamo.onnx"])
def test_an_imported_fixture_trains(file):
    entry = next(e for e in ENTRIES if e["file"] == file)
    gm = ember.onnx.load_model(os.path.join(HERE, file))
    feeds = _inputs(entry["inputs"], "shape", 0)
    x = ember.from_numpy(feeds[entry["inputs"][0]["name"]])
    params = list(gm.parameters())
    assert params and all(p.requires_grad for p in params)
    opt = ember.optim.SGD(params, lr=0.05)
    target = ember.zeros_like(gm(x))
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((gm(x).exp() if "cnn" in file else gm(x)) - target).pow(2).mean()
        loss.backward()
        assert all(p.grad is not None for p in params)
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
