"""torchvision's models are symbolically traceable (torch.fx); so are ember_vision's: the
traced module's logits equal the eager model's and torchvision's for the same filled
weights (the parity fixtures), and ViT keeps its input checks as ``_assert`` nodes."""

import os

import numpy as np
import pytest
from model_parity import RTOL, fill_values, load_fixture, make_input

import ember
import ember.fx
import ember_vision
from ember_vision.models import swin_transformer as swin
from ember_vision.models import vision_transformer as vit

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
CLASSIC = load_fixture(os.path.join(HERE, "models_classic.npz"))
TRANSFORMER = load_fixture(os.path.join(HERE, "models_transformer.npz"))
EXTRA_BUILDERS = {"vit_ti_16": vit.vit_ti_16, "SwinTransformer": swin.SwinTransformer}


def _filled(spec):
    builder = EXTRA_BUILDERS.get(spec["builder"]) or ember_vision.models.get_model_builder(spec["builder"])
    model = builder(**spec["kwargs"])
    values = fill_values(spec["state"], spec["seed"])
    sd = model.state_dict()
    model.load_state_dict({k: ember.from_numpy(values[k]) if k in values else v for k, v in sd.items()})
    return model.eval()


@pytest.mark.parametrize("spec", [CLASSIC["resnet18"], TRANSFORMER["vit_ti_16_32"], TRANSFORMER["swin_small_odd"]],
                         ids=["resnet18", "vit_ti_16_32", "swin_small_odd"])
def test_traced_model_matches_eager_and_torchvision(spec):
    model = _filled(spec)
    traced = ember.fx.symbolic_trace(model)
    assert any(n.op == "call_module" for n in traced.graph.nodes)
    x = ember.from_numpy(make_input(spec["input_seed"], spec["input_shape"]))
    with ember.no_grad():
        got, eager = traced(x).numpy(), model(x).numpy()
    np.testing.assert_array_equal(got, eager)
    expected = spec["logits"]
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * float(np.abs(expected).max()))


def test_vit_input_checks_are_graph_nodes():
    spec = TRANSFORMER["vit_ti_16_32"]
    traced = ember.fx.symbolic_trace(_filled(spec))
    asserts = [n for n in traced.graph.nodes if n.op == "call_function" and n.target is ember._assert]
    assert asserts and all(n.args[0].target.__name__ == "eq" for n in asserts)
    wrong = list(spec["input_shape"])
    wrong[-1] += 16
    with pytest.raises(AssertionError, match="Wrong image width!"):
        traced(ember.zeros(*wrong))


def test_swin_keeps_its_wrapped_functions_as_calls():
    traced = ember.fx.symbolic_trace(_filled(TRANSFORMER["swin_small_odd"]))
    targets = {n.target for n in traced.graph.nodes if n.op == "call_function"}
    assert {swin.shifted_window_attention, swin._patch_merging_pad} <= targets  # torchvision fx.wraps both
