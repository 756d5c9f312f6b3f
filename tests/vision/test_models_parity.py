"""The classic CNN families against torchvision 0.29: state_dict keys, shapes and dtypes,
and eval-mode logits for the same numpy-filled weights (fixtures/models_classic.npz, made
by fixtures/make_models_fixtures.py; tolerance and fill rule in model_parity.py)."""

import os

import pytest
from model_parity import check_model, load_fixture

from ember_vision.models import vgg

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = load_fixture(os.path.join(HERE, "fixtures", "models_classic.npz"))
# layout-only VGG entries: checked on their feature stack, the part where the depths differ
VGG_LAYOUT_ONLY = {"vgg11_bn": ("A", True), "vgg13": ("B", False), "vgg13_bn": ("B", True),
                   "vgg16": ("D", False), "vgg16_bn": ("D", True), "vgg19": ("E", False)}


@pytest.mark.parametrize("name", sorted(set(SPECS) - set(VGG_LAYOUT_ONLY)))
def test_matches_torchvision(name):
    check_model(SPECS[name])


@pytest.mark.parametrize("name", sorted(VGG_LAYOUT_ONLY))
def test_vgg_layout_matches_torchvision(name):
    spec = SPECS[name]
    assert spec["logits"] is None
    features = [[k.removeprefix("features."), s, d] for k, s, d in spec["state"] if k.startswith("features.")]
    check_model({**spec, "state": features}, model=vgg.make_layers(vgg.cfgs[VGG_LAYOUT_ONLY[name][0]],
                                                                   batch_norm=VGG_LAYOUT_ONLY[name][1]))
    # the rest (avgpool has no state; the classifier) is the one checked in full on vgg11
    rest = [e for e in spec["state"] if not e[0].startswith("features.")]
    assert rest == [e for e in SPECS["vgg11"]["state"] if not e[0].startswith("features.")]


def test_fixture_covers_every_classic_builder():
    builders = {spec["builder"] for spec in SPECS.values()}
    assert builders == {"alexnet", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19",
                        "vgg19_bn", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
                        "resnext50_32x4d", "wide_resnet50_2", "densenet121", "squeezenet1_0", "squeezenet1_1"}
