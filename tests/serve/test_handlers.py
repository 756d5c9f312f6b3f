"""Handlers run in-process on batches of requests, checked against torch on the same weights."""

import numpy as np
import pytest
import torch
from conftest import make_fashion_archive, make_linear_archive, png_bytes, torch_fashion_topk

from ember_serve import load_archive
from ember_serve.handlers import HandlerContext, InvalidInput, Request, resolve_handler


def handler_for(path):
    arch = load_archive(path)
    h = resolve_handler(arch.handler, arch)()
    h.initialize(HandlerContext(arch, arch.config, "cpu", arch.name, arch.version))
    return arch, h


def infer_request(i, **inputs):
    return Request(id=str(i), kind="infer", inputs=inputs)


def test_tensor_handler_batches_and_splits(tmp_path):
    path, state = make_linear_archive(tmp_path)
    arch, h = handler_for(path)
    rng = np.random.default_rng(0)
    xs = [rng.random((n, 4), dtype=np.float32) for n in (1, 3, 2)]
    reqs = [infer_request(i, input__0=x) for i, x in enumerate(xs)]
    for r in reqs:
        r.rows = h.rows(r)
    assert [r.rows for r in reqs] == [1, 3, 2]
    answers = h.handle(reqs)
    tl = torch.nn.Linear(4, 3)
    tl.load_state_dict({k[3:]: v for k, v in state.items()})
    for x, a in zip(xs, answers):
        assert list(a) == ["output__0"]
        np.testing.assert_allclose(a["output__0"], tl(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    arch.close()


def test_tensor_handler_predict_json(tmp_path):
    path, state = make_linear_archive(tmp_path)
    arch, h = handler_for(path)
    r = Request(id="p", kind="predict", body=b"[[1, 2, 3, 4]]")
    r.rows = h.rows(r)
    (answer,) = h.handle([r])
    tl = torch.nn.Linear(4, 3)
    tl.load_state_dict({k[3:]: v for k, v in state.items()})
    np.testing.assert_allclose(answer, tl(torch.tensor([[1.0, 2, 3, 4]])).tolist(), rtol=1e-5)
    for body, message in [(b"{", "must be JSON"), (b'{"x": [1]}', "unknown input 'x'"),
                          (b"[[1, 2, 3]]", r"shape \[1, 3\] does not match \[-1, 4\]"),
                          (b"[[1, 2], [3]]", "not a rectangular list")]:
        with pytest.raises(InvalidInput, match=message):
            h.rows(Request(id="p", kind="predict", body=body))
    arch.close()


def test_image_classifier_matches_torch(tmp_path):
    path, tm = make_fashion_archive(tmp_path)
    arch, h = handler_for(path)
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (28, 28), dtype=np.uint8) for _ in range(3)]
    want, probs = torch_fashion_topk(tm, images)
    reqs = [Request(id="a", kind="predict", body=png_bytes(images[0])),
            Request(id="b", kind="infer", inputs={"image": np.array([png_bytes(images[1]), png_bytes(images[2])],
                                                                    dtype=object)})]
    for r in reqs:
        r.rows = h.rows(r)
    assert [r.rows for r in reqs] == [1, 2]
    a, b = h.handle(reqs)
    assert list(a) == list(want[0])  # same categories, highest first
    np.testing.assert_allclose(list(a.values()), list(want[0].values()), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(b["probabilities"], probs[1:].numpy(), rtol=1e-4, atol=1e-6)
    assert b["topk"].shape == (2, 3)
    for row, w in zip(b["topk"], want[1:]):
        labels = [s.decode().split(":", 2)[2] for s in row]
        assert labels == list(w)
        assert [int(s.decode().split(":")[1]) for s in row] == [h.categories.index(c) for c in w]
    inputs, outputs = h.signature()
    assert [s.to_dict() for s in inputs] == [{"name": "image", "datatype": "BYTES", "shape": [-1]}]
    assert [s.to_dict() for s in outputs] == [{"name": "probabilities", "datatype": "FP32", "shape": [-1, 10]},
                                              {"name": "topk", "datatype": "BYTES", "shape": [-1, 3]}]
    with pytest.raises(InvalidInput, match="cannot decode the image"):
        h.preprocess([Request(id="z", kind="predict", body=b"not an image")])
    arch.close()


def test_builtin_names_and_bad_handler_specs(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    with load_archive(path) as arch:
        for name, cls in (("text_classifier", "TextClassifierHandler"),
                          ("sentence_embedder", "SentenceEmbedderHandler"),
                          ("text_generation", "TextGenerationHandler")):
            assert resolve_handler(name, arch).__name__ == cls
        with pytest.raises(ValueError, match="defines no 'Nope'"):
            resolve_handler("model_lin_1:Nope", arch)
        with pytest.raises(ValueError, match="not a subclass of ember_serve.handlers.BaseHandler"):
            resolve_handler("model_lin_1:Net", arch)
