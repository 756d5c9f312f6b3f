"""ViT and Swin against torchvision: state_dict keys, shapes and dtypes, logits and input
gradients for the same numpy-filled weights (fixtures/models_transformer.npz, made by
fixtures/make_models_transformer_fixtures.py; fill rule and tolerance in model_parity.py)."""

import importlib.util
import os

import numpy as np
import pytest
from model_parity import RTOL, check_model, fill_values, load_fixture, make_input, state_layout

import ember
import ember_vision
from ember_vision.models import swin_transformer as swin
from ember_vision.models import vision_transformer as vit

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "make_models_transformer_fixtures", os.path.join(HERE, "fixtures", "make_models_transformer_fixtures.py"))
FIX = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(FIX)
PATH = os.path.join(HERE, "fixtures", "models_transformer.npz")
SPECS = load_fixture(PATH)
DATA = np.load(PATH)

# builders the registry does not know (torchvision has no such names)
EXTRA_BUILDERS = {"vit_ti_16": vit.vit_ti_16, "SwinTransformer": swin.SwinTransformer}
# the weights whose meta records the parameter count of the same architecture
NUM_PARAMS = {"vit_b_16": vit.ViT_B_16_Weights.DEFAULT, "swin_t_112": swin.Swin_T_Weights.DEFAULT}


def _build(name):
    spec = SPECS[name]
    builder = EXTRA_BUILDERS.get(spec["builder"]) or ember_vision.models.get_model_builder(spec["builder"])
    return builder(**spec["kwargs"])


def _filled(model):
    values = fill_values(state_layout(model), FIX.SEED)
    sd = model.state_dict()
    model.load_state_dict({k: ember.tensor(values[k]) if k in values else v for k, v in sd.items()})
    return model.eval()


def _close(got, expected):
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * float(np.abs(expected).max()))


@pytest.mark.parametrize("name", ["vit_ti_16_32", "swin_small_odd", "swin_t_112", "vit_b_16"])
def test_parity_with_torchvision(name):
    model = _build(name)
    if name in NUM_PARAMS:
        assert sum(p.numel() for p in model.parameters()) == NUM_PARAMS[name].meta["num_params"]
    check_model(SPECS[name], model)


@pytest.mark.parametrize("name", FIX.WITH_INPUT_GRAD)
def test_input_gradient_matches_torchvision(name):
    model = _filled(_build(name))
    x = ember.tensor(make_input(FIX.INPUT_SEED, SPECS[name]["input_shape"])).requires_grad_()
    out = model(x)
    (out * ember.tensor(FIX.probe_for(tuple(out.shape)))).sum().backward()
    _close(x.grad.numpy(), DATA[f"{name}.input_grad"])


def test_interpolate_embeddings_matches_torchvision():
    state = _filled(_build("vit_ti_16_32")).state_dict()
    state = vit.interpolate_embeddings(64, 16, state)
    np.testing.assert_allclose(state["encoder.pos_embedding"].numpy(), DATA["vit_ti_16_64_interp.pos_embedding"],
                               rtol=1e-5, atol=1e-6)
    model = _build("vit_ti_16_64_interp")
    check_model(SPECS["vit_ti_16_64_interp"], model)  # layout only
    model.load_state_dict(state)
    with ember.no_grad():
        out = model.eval()(ember.tensor(make_input(FIX.INPUT_SEED, (1, 3, 64, 64))))
    _close(out.numpy(), DATA["vit_ti_16_64_interp.interp_logits"])


def test_interpolate_embeddings_same_size_and_reset_heads():
    state = vit.vit_ti_16(image_size=32).state_dict()
    assert vit.interpolate_embeddings(32, 16, state) is state
    resized = vit.interpolate_embeddings(48, 16, dict(state), reset_heads=True)
    assert not any(k.startswith("heads") for k in resized)
    assert tuple(resized["encoder.pos_embedding"].shape) == (1, 10, 192)
    bad = dict(state, **{"encoder.pos_embedding": ember.zeros(2, 5, 192)})
    with pytest.raises(ValueError, match="position embedding"):
        vit.interpolate_embeddings(64, 16, bad)
    not_square = dict(state, **{"encoder.pos_embedding": ember.zeros(1, 4, 192)})
    with pytest.raises(ValueError, match="perfect square"):
        vit.interpolate_embeddings(64, 16, not_square)


def test_vit_rejects_wrong_image_size():
    model = vit.vit_ti_16(image_size=32)
    with pytest.raises(AssertionError, match="Expected 32 but got 48"):
        model(ember.zeros(1, 3, 48, 32))
    with pytest.raises(AssertionError, match="indivisible"):
        vit.VisionTransformer(30, 16, 1, 1, 16, 16)
    with pytest.raises(ValueError, match="no pretrained weights"):
        vit.vit_ti_16(weights="IMAGENET1K_V1")


def test_vit_initial_values_follow_torchvision():
    model = vit.vit_ti_16(image_size=32)
    # torchvision zeroes the head and class token and the patch-embedding bias.
    assert float(model.heads.head.weight.abs().sum()) == 0.0
    assert float(model.class_token.abs().sum()) == 0.0
    assert float(model.conv_proj.bias.abs().sum()) == 0.0
    std = float(model.encoder.pos_embedding.std())
    assert 0.015 < std < 0.025


def test_swin_window_attention_checks_sizes():
    with pytest.raises(ValueError, match="length 2"):
        swin.ShiftedWindowAttention(8, [7], [0, 0], 2)


def test_swin_relative_position_index_by_hand():
    # A 2x2 window: offsets (dh, dw) in {-1, 0, 1}^2 map to (dh + 1) * 3 + (dw + 1).
    index = swin.ShiftedWindowAttention(4, [2, 2], [0, 0], 1).relative_position_index
    coords = [(0, 0), (0, 1), (1, 0), (1, 1)]
    expected = [(qh - kh + 1) * 3 + (qw - kw + 1) for qh, qw in coords for kh, kw in coords]
    assert index.dtype == ember.int64
    assert index.tolist() == expected


def test_swin_stochastic_depth_is_active_only_in_training():
    model = swin.SwinTransformer(**FIX.SWIN_SMALL)
    probs = [b.stochastic_depth.p for stage in (model.features[1], model.features[3]) for b in stage]
    assert probs == pytest.approx([0.0, 0.2 / 3, 0.4 / 3, 0.2])
    assert repr(model.features[1][0].stochastic_depth) == "StochasticDepth(p=0.0, mode=row)"


def test_registry_and_weights():
    models = ember_vision.models
    assert {"vit_b_16", "swin_t"} <= set(models.list_models())
    assert models.get_model_weights("vit_b_16") is models.ViT_B_16_Weights
    assert models.ViT_B_16_Weights.DEFAULT.url == "https://download.pytorch.org/models/vit_b_16-c867db91.pth"
    assert models.Swin_T_Weights.DEFAULT.url == "https://download.pytorch.org/models/swin_t-704ceda3.pth"
    assert models.Swin_T_Weights.DEFAULT.meta["num_params"] == 28288354
    assert models.ViT_B_16_Weights.IMAGENET1K_SWAG_E2E_V1.meta["min_size"] == (384, 384)
    assert len(models.ViT_B_16_Weights.DEFAULT.meta["categories"]) == 1000
    with pytest.raises(ValueError, match="num_classes"):
        models.swin_t(weights="DEFAULT", num_classes=10)
    with pytest.raises(ValueError, match="image_size"):
        models.vit_b_16(weights="IMAGENET1K_SWAG_E2E_V1", image_size=224)

