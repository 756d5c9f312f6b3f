"""The meta device against torch's: shapes and dtypes without data, models built without
memory, to_empty, and torch's errors where data would be needed."""

import pytest
import torch

import ember


def meta(L, *shape, dtype=None):
    return L.empty(*shape, device="meta", dtype=dtype)


OPS = {
    "arithmetic": lambda L: (meta(L, 3, 1) + meta(L, 4), meta(L, 3) * 2, meta(L, 2, dtype=L.int64) / 2),
    "comparison": lambda L: (meta(L, 3) > 0, L.where(meta(L, 3) > 0, meta(L, 3), 0.0)),
    "reductions": lambda L: (meta(L, 3, 4).sum(), meta(L, 3, 4).mean(1, keepdim=True), meta(L, 3, 4).amax((0, 1)),
                             meta(L, 3, 4).var(0), meta(L, 2, 5, dtype=L.int64).sum(-1), meta(L, 3, 4).cumsum(1)),
    "shapes": lambda L: (meta(L, 3, 4).view(12), meta(L, 3, 4).reshape(2, -1), meta(L, 3, 4).t(),
                         meta(L, 3, 4).permute(1, 0).contiguous(), meta(L, 3, 1).expand(3, 5), meta(L, 2, 3)[1:, None],
                         L.cat([meta(L, 2, 3), meta(L, 1, 3)]), L.stack([meta(L, 2), meta(L, 2)], 1),
                         meta(L, 6).split(4), meta(L, 3, 4).flatten(), meta(L, 1, 3).squeeze(0)),
    "products": lambda L: (meta(L, 3, 4) @ meta(L, 4, 5), meta(L, 2, 3, 4) @ meta(L, 4),
                           L.einsum("ij,jk->ik", meta(L, 2, 3), meta(L, 3, 4))),
    "nn": lambda L: (L.nn.functional.conv2d(meta(L, 1, 3, 16, 16), meta(L, 8, 3, 3, 3), padding=1, stride=2),
                     L.nn.functional.max_pool2d(meta(L, 1, 3, 16, 16), 2), L.softmax(meta(L, 2, 5), -1),
                     L.nn.functional.layer_norm(meta(L, 2, 5), (5,)), L.nn.functional.gelu(meta(L, 4)),
                     L.nn.functional.linear(meta(L, 2, 5), meta(L, 3, 5), meta(L, 3)),
                     L.nn.functional.cross_entropy(meta(L, 4, 10), meta(L, 4, dtype=L.int64))),
    "casts": lambda L: (meta(L, 3).double(), meta(L, 3).to(L.int32), meta(L, 3).bool(), L.zeros_like(meta(L, 2, 2))),
    "factories": lambda L: (L.zeros(2, 3, device="meta"), L.ones(4, device="meta", dtype=L.float16),
                            L.full((2,), 7, device="meta"), L.randn(3, 2, device="meta"), L.rand(5, device="meta"),
                            L.arange(6, device="meta"), L.zeros(3).to("meta")),
}


def _signature(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    flat = [t for o in outs for t in (o if isinstance(o, (tuple, list)) else (o,))]
    return [(tuple(t.shape), str(t.dtype).split(".")[-1], t.device.type) for t in flat]


@pytest.mark.parametrize("name", OPS)
def test_ops_on_meta_give_torchs_shapes_and_dtypes(name):
    assert _signature(OPS[name](ember)) == _signature(OPS[name](torch))


def test_a_model_too_large_for_memory_builds_on_meta():
    """10 GB of float32 weights if they were real (and a minute of random initialization)."""
    with ember.device("meta"):
        model = ember.nn.Sequential(ember.nn.Linear(50_000, 50_000), ember.nn.ReLU(), ember.nn.Linear(50_000, 10))
    assert all(p.is_meta for p in model.parameters())
    out = model(ember.empty(4, 50_000, device="meta"))
    assert out.shape == (4, 10) and out.is_meta


def test_to_empty_then_load_gives_a_working_model():
    reference = ember.nn.Linear(4, 3)
    with ember.device("meta"):
        model = ember.nn.Linear(4, 3)
    model.to_empty(device="cpu")
    assert not model.weight.is_meta and model.weight.shape == (3, 4) and isinstance(model.weight, ember.nn.Parameter)
    model.load_state_dict(reference.state_dict())
    x = ember.randn(2, 4)
    assert ember.equal(model(x), reference(x))


def test_transformer_layer_on_meta_as_torch():
    # torch's layer takes device="meta" (its `with torch.device(...)` context misbehaves
    # once torch.set_default_device has been used in the process); ember's, the context
    reference = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, device="meta")
    with ember.device("meta"):
        layer = ember.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    assert all(p.is_meta for p in layer.parameters())
    assert [tuple(p.shape) for p in layer.parameters()] == [tuple(p.shape) for p in reference.parameters()]
    assert tuple(layer(meta(ember, 2, 7, 32)).shape) == tuple(reference(meta(torch, 2, 7, 32)).shape)


@pytest.mark.parametrize("use,error", [(lambda L: meta(L, 2).to("cpu"), NotImplementedError),
                                       (lambda L: meta(L, 2).tolist(), NotImplementedError),
                                       (lambda L: meta(L, 1).item(), RuntimeError),
                                       (lambda L: meta(L, 2).numpy(), TypeError)])
def test_no_data_errors_as_torch(use, error):
    for L in (torch, ember):
        with pytest.raises(error):
            use(L)


def test_repr_and_device():
    assert repr(meta(ember, 2, 3)) == repr(meta(torch, 2, 3))
    torch_repr = repr(meta(torch, 2, dtype=torch.int64))
    assert repr(meta(ember, 2, dtype=ember.int64)) == torch_repr.replace("torch.", "ember.")
    assert ember.device("meta").type == "meta" and str(ember.device("meta")) == "meta"


def test_the_meta_mode_leaves_once_meta_tensors_are_gone():
    from ember.backends import meta_backend
    from ember.ops import _dispatch
    x = meta(ember, 3)
    assert meta_backend._MODE[0] is not None
    del x
    import gc
    gc.collect()
    ember.ones(2) + 1  # the next op call notices and leaves
    assert meta_backend._MODE[0] is None and not any(type(m).__name__ == "KeepMeta" for m in _dispatch._STACK.modes)
