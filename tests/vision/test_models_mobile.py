"""Mobile and efficient CNN families against torchvision: state_dict layout and logits
(fixtures/models_mobile.npz, written by fixtures/make_models_mobile_fixtures.py; tolerance and
fill rule in model_parity.py), plus builder arguments, stochastic depth and weights enums."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from model_parity import check_model, load_fixture

import ember
from ember_vision import models
from ember_vision.ops import StochasticDepth, stochastic_depth

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "models_mobile.npz")
SPECS = load_fixture(FIXTURE)


_DEFAULT_BUILT = {}  # builder name -> model built with default arguments (ConvNeXt takes seconds)


def _default_model(builder):
    if builder not in _DEFAULT_BUILT:
        _DEFAULT_BUILT[builder] = models.get_model(builder)
    return _DEFAULT_BUILT[builder]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_parity_with_torchvision(name):
    spec = SPECS[name]
    check_model(spec, _default_model(spec["builder"]) if not spec["kwargs"] else None)


_REPRS = np.load(FIXTURE)
# MobileNetV3 is left out: ember's Hardswish prints ``inplace=True``, torch's prints nothing
REPR_CASES = sorted(k[: -len(".repr")] for k in _REPRS.files
                    if k.endswith(".repr") and not k.startswith("mobilenet_v3"))


@pytest.mark.parametrize("name", REPR_CASES)
def test_repr_matches_torchvision(name):
    spec = SPECS[name]
    model = _default_model(spec["builder"]) if not spec["kwargs"] else models.get_model(spec["builder"],
                                                                                          **spec["kwargs"])
    assert repr(model) == str(_REPRS[f"{name}.repr"])


WEIGHTS = [
    ("mobilenet_v2", models.MobileNet_V2_Weights, "IMAGENET1K_V2"),
    ("mobilenet_v3_large", models.MobileNet_V3_Large_Weights, "IMAGENET1K_V2"),
    ("mobilenet_v3_small", models.MobileNet_V3_Small_Weights, "IMAGENET1K_V1"),
    ("efficientnet_b0", models.EfficientNet_B0_Weights, "IMAGENET1K_V1"),
    ("shufflenet_v2_x1_0", models.ShuffleNet_V2_X1_0_Weights, "IMAGENET1K_V1"),
    ("regnet_y_400mf", models.RegNet_Y_400MF_Weights, "IMAGENET1K_V2"),
    ("convnext_tiny", models.ConvNeXt_Tiny_Weights, "IMAGENET1K_V1"),
    ("efficientnet_lite0", models.EfficientNet_Lite0_Weights, "IMAGENET1K_V1"),
]


@pytest.mark.parametrize("name,enum,default", WEIGHTS)
def test_weights_enum_registry_and_num_params(name, enum, default):
    assert models.get_model_weights(name) is enum
    assert enum.DEFAULT is enum[default]
    for member in enum:
        assert len(member.meta["categories"]) == 1000
        # each checkpoint's file name carries the first hex digits of its sha256
        assert member.url.rsplit("/", 1)[-1].rsplit("-", 1)[-1].split(".")[0].isalnum()
    n = sum(p.numel() for p in _default_model(name).parameters())
    assert n == enum.DEFAULT.meta["num_params"]


def test_builders_take_legacy_positional_and_pretrained_arguments():
    # torchvision >= 0.13: both still work, with a deprecation warning
    with pytest.warns(UserWarning, match="positional"):
        models.mobilenet_v3_small(None, True)
    with pytest.warns(UserWarning) as record:
        m = models.mobilenet_v3_small(pretrained=False, num_classes=7)
    assert any("'pretrained' is deprecated" in str(w.message) for w in record)
    assert m.classifier[-1].out_features == 7


def test_weights_fix_num_classes():
    with pytest.raises(ValueError, match="num_classes"):
        models.shufflenet_v2_x1_0(weights="DEFAULT", num_classes=10)


@pytest.mark.parametrize("make,exc", [
    (lambda: models.MobileNetV2(inverted_residual_setting=[[1, 16, 1]]), ValueError),
    (lambda: models.MobileNetV3([], 1280), ValueError),
    (lambda: models.MobileNetV3([[1, 2, 3]], 1280), TypeError),
    (lambda: models.EfficientNet([], 0.2), ValueError),
    (lambda: models.ShuffleNetV2([4, 8], [24, 116, 232, 464, 1024]), ValueError),
    (lambda: models.ShuffleNetV2([4, 8, 4], [24, 116, 232, 464]), ValueError),
    (lambda: models.BlockParams.from_init_params(depth=16, w_0=44, w_a=27.89, w_m=2.09, group_width=8), ValueError),
    (lambda: models.ConvNeXt([]), ValueError),
    (lambda: models.ConvNeXt([(96, None, 3)]), TypeError),
], ids=["v2_row", "v3_empty", "v3_type", "effnet_empty", "shuffle_repeats", "shuffle_widths", "regnet_w0",
        "convnext_empty", "convnext_type"])
def test_bad_settings_raise_torchvision_errors(make, exc):
    with pytest.raises(exc):
        make()


def test_regnet_block_params_match_torchvision_table():
    # RegNetY-400MF's stages (torchvision's printed model): depths 1-3-6-6, widths 48-104-208-440
    p = models.BlockParams.from_init_params(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25)
    assert (p.depths, p.widths, p.group_widths) == ([1, 3, 6, 6], [48, 104, 208, 440], [8, 8, 8, 8])


@pytest.mark.parametrize("name", ["mobilenet_v3_small", "efficientnet_b0", "shufflenet_v2_x1_0"])
def test_training_step_gives_every_parameter_a_gradient(name):
    ember.manual_seed(0)
    model = models.get_model(name, num_classes=5).train()
    x = ember.randn(2, 3, 32, 32)
    loss = ember.nn.functional.cross_entropy(model(x), ember.tensor([1, 3]))
    loss.backward()
    for key, p in model.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, key


# ---- stochastic depth -------------------------------------------------------------------

def test_stochastic_depth_eval_and_zero_p_are_identity():
    x = ember.randn(4, 3, 2, 2)
    assert stochastic_depth(x, 0.7, "row", training=False) is x
    assert stochastic_depth(x, 0.0, "batch") is x
    assert repr(StochasticDepth(0.2, "row")) == "StochasticDepth(p=0.2, mode=row)"


@pytest.mark.parametrize("mode", ["row", "batch"])
def test_stochastic_depth_keeps_or_drops_whole_rows(mode):
    ember.manual_seed(3)
    p = 0.4
    x = ember.rand(200, 3, 2, dtype=ember.float64) + 1.0
    y = stochastic_depth(x, p, mode).numpy()
    ratio = y / x.numpy()
    kept = np.isclose(ratio, 1.0 / (1.0 - p))
    assert np.all(kept | (ratio == 0.0))
    per_row = kept.reshape(200, -1)
    assert np.all(per_row.all(axis=1) | ~per_row.any(axis=1))  # one draw per sample
    if mode == "batch":
        assert per_row.all() or not per_row.any()
    else:
        assert 0.45 < per_row[:, 0].mean() < 0.75  # survival 0.6; binomial sd ~0.035


def test_stochastic_depth_all_dropped_and_grad():
    x = ember.randn(3, 4, requires_grad=True)
    y = stochastic_depth(x, 1.0, "row")
    assert np.all(y.detach().numpy() == 0.0)
    ember.manual_seed(1)
    x64 = ember.randn(6, 2, dtype=ember.float64, requires_grad=True)
    out = stochastic_depth(x64, 0.5, "row")
    mask = (out.detach() / x64.detach()).numpy()
    out.sum().backward()
    np.testing.assert_allclose(x64.grad.numpy(), mask)


@pytest.mark.parametrize("p,mode,exc", [(-0.1, "row", ValueError), (1.5, "row", ValueError),
                                        (0.5, "col", ValueError)])
def test_stochastic_depth_bad_arguments(p, mode, exc):
    with pytest.raises(exc):
        stochastic_depth(ember.ones(2, 2), p, mode)


def test_layer_norm_2d_matches_torch_layer_norm_over_channels():
    x = np.random.default_rng(0).standard_normal((2, 5, 3, 4)).astype(np.float32)
    ln = models.LayerNorm2d(5, eps=1e-6)
    ln.weight.data.copy_(ember.arange(5, dtype=ember.float32) * 0.1 + 1)
    want = torch.nn.functional.layer_norm(torch.from_numpy(x).permute(0, 2, 3, 1), (5,),
                                          torch.arange(5, dtype=torch.float32) * 0.1 + 1, torch.zeros(5),
                                          1e-6).permute(0, 3, 1, 2)
    np.testing.assert_allclose(ln(ember.from_numpy(x)).detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
