"""ember_vision.models' registry, weights enums, builders' argument handling, weights
loading (from a local HTTP server, never the network) and the ImageClassification preset
(against torchvision's outputs stored in fixtures/models_classic.npz)."""

import copy
import hashlib
import http.server
import os
import pickle
import threading
import warnings
from functools import partial

import numpy as np
import pytest
import torch
from PIL import Image

import ember
import ember.hub
import ember_vision
from ember_vision import models
from ember_vision.models import _utils, densenet
from ember_vision.models._presets import ImageClassification
from ember_vision.transforms.functional import InterpolationMode

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = np.load(os.path.join(HERE, "fixtures", "models_classic.npz"))


# ---- registry ----------------------------------------------------------------------

def test_list_models_filters():
    assert models.list_models(include="resnet*") == ["resnet101", "resnet152", "resnet18", "resnet34", "resnet50"]
    assert models.list_models(include=["vgg1?", "alexnet"], exclude=["*1", "vgg16"]) == ["alexnet", "vgg13", "vgg19"]
    assert models.list_models(include="squeezenet*", exclude="*1_0") == ["squeezenet1_1"]
    everything = models.list_models()
    assert everything == sorted(everything) and {"densenet121", "wide_resnet50_2", "vgg19_bn"} <= set(everything)
    assert set(models.list_models(module=ember_vision.models)) >= {"alexnet", "resnext50_32x4d"}
    assert models.list_models(module=ember_vision.transforms) == []


def test_get_model_and_builder():
    assert models.get_model_builder("resnet18") is models.resnet18
    assert models.get_model_builder("ResNet18") is models.resnet18  # names are case-insensitive
    m = models.get_model("squeezenet1_1", num_classes=7)
    assert isinstance(m, models.SqueezeNet) and m.classifier[1].out_channels == 7
    with pytest.raises(ValueError, match="Unknown model"):
        models.get_model("resnet7")
    with pytest.raises(ValueError, match="already registered"):
        models._api.register_model("alexnet")(lambda **kw: None)


def test_get_model_weights():
    assert models.get_model_weights("resnet50") is models.ResNet50_Weights
    assert models.get_model_weights(models.vgg16_bn) is models.VGG16_BN_Weights
    with pytest.raises(ValueError, match="missing the 'weights' argument"):
        models.get_model_weights(lambda x: x)

    def untyped(*, weights=None):
        return None
    with pytest.raises(ValueError, match="couldn't be retrieved"):
        models.get_model_weights(untyped)


def test_get_weight():
    assert models.get_weight("ResNet50_Weights.IMAGENET1K_V2") is models.ResNet50_Weights.IMAGENET1K_V2
    assert models.get_weight("ResNet50_Weights.DEFAULT") is models.ResNet50_Weights.IMAGENET1K_V2
    assert models.get_weight("VGG16_Weights.IMAGENET1K_FEATURES").meta["categories"] is None
    with pytest.raises(ValueError, match="Invalid weight name"):
        models.get_weight("ResNet50_Weights")
    with pytest.raises(ValueError, match="couldn't be retrieved"):
        models.get_weight("ResNet51_Weights.IMAGENET1K_V1")
    with pytest.raises(KeyError):
        models.get_weight("ResNet50_Weights.IMAGENET1K_V9")


# ---- weights enums -----------------------------------------------------------------

def test_verify():
    W = models.ResNet18_Weights
    assert W.verify(None) is None
    assert W.verify(W.IMAGENET1K_V1) is W.IMAGENET1K_V1
    assert W.verify("IMAGENET1K_V1") is W.IMAGENET1K_V1
    assert W.verify("ResNet18_Weights.IMAGENET1K_V1") is W.IMAGENET1K_V1
    assert W.verify("DEFAULT") is W.IMAGENET1K_V1
    with pytest.raises(TypeError, match="expected ResNet18_Weights but received ResNet34_Weights"):
        W.verify(models.ResNet34_Weights.IMAGENET1K_V1)
    with pytest.raises(TypeError, match="received int"):
        W.verify(1)
    with pytest.raises(KeyError, match="IMAGENET1K_V2"):
        W.verify("ResNet18_Weights.IMAGENET1K_V2")
    with pytest.raises(TypeError):  # the builders verify too
        models.resnet18(weights=models.ResNet34_Weights.IMAGENET1K_V1)


def test_weights_fields_and_copies():
    w = models.ResNet50_Weights.IMAGENET1K_V2
    assert repr(w) == "ResNet50_Weights.IMAGENET1K_V2"
    assert w.url == "https://download.pytorch.org/models/resnet50-11ad3fa6.pth"
    assert w.meta["_metrics"]["ImageNet-1K"] == {"acc@1": 80.858, "acc@5": 95.434}
    assert w.transforms().resize_size == [232] and w.transforms().crop_size == [224]
    assert copy.deepcopy(w) is w and pickle.loads(pickle.dumps(w)) is w
    cats = w.meta["categories"]
    assert len(cats) == len(set(cats)) == 1000  # the duplicate synset names are told apart
    assert (cats[0], cats[1], cats[207], cats[999]) == ("tench", "goldfish", "golden retriever", "toilet tissue")


@pytest.mark.parametrize("builder, weights", [
    (models.alexnet, models.AlexNet_Weights.DEFAULT),
    (models.resnet18, models.ResNet18_Weights.DEFAULT),
    (models.resnext50_32x4d, models.ResNeXt50_32X4D_Weights.DEFAULT),
    (models.densenet121, models.DenseNet121_Weights.DEFAULT),
    (models.squeezenet1_1, models.SqueezeNet1_1_Weights.DEFAULT),
])
def test_num_params_meta_matches_architecture(builder, weights):
    assert sum(p.numel() for p in builder().parameters()) == weights.meta["num_params"]


def test_num_classes_must_match_weights():
    with pytest.raises(ValueError, match="'num_classes' expected value 1000 but got 10"):
        models.resnet18(weights="DEFAULT", num_classes=10)
    with pytest.raises(ValueError, match="'num_classes' expected value 1000 but got 10"):
        models.get_model("vgg11", weights="VGG11_Weights.IMAGENET1K_V1", num_classes=10)


# ---- loading weights -----------------------------------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served(tmp_path):
    """A folder served over HTTP on localhost: yields (folder, base url)."""
    root = tmp_path / "www"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def hub_dir(tmp_path, monkeypatch):
    """An empty hub cache for the test (the previous setting is restored after it)."""
    monkeypatch.setattr(ember.hub, "_hub_dir", str(tmp_path / "hub"))
    return tmp_path / "hub"


def _checkpoint(root, stem, state):
    """``state`` (name -> array) saved by torch as ``<stem>-<sha256 prefix>.pth``; returns its name."""
    tmp = root / "tmp.pth"
    torch.save({k: torch.from_numpy(v) for k, v in state.items()}, tmp)
    name = f"{stem}-{hashlib.sha256(tmp.read_bytes()).hexdigest()[:8]}.pth"
    tmp.rename(root / name)
    return name


def test_builder_loads_weights_over_http(served, hub_dir, monkeypatch):
    root, base = served
    reference = models.squeezenet1_1()
    state = {k: np.random.default_rng(0).standard_normal(tuple(v.shape)).astype(np.float32)
             for k, v in reference.state_dict().items()}
    name = _checkpoint(root, "squeezenet1_1", state)
    monkeypatch.setattr(models.SqueezeNet1_1_Weights.IMAGENET1K_V1.value, "url", f"{base}/{name}")
    model = models.squeezenet1_1(weights=models.SqueezeNet1_1_Weights.DEFAULT, progress=False)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), state[k])
    assert (hub_dir / "checkpoints" / name).is_file()
    # a file whose sha256 does not start with its name's prefix is refused
    (root / name).rename(root / "squeezenet1_1-00000000.pth")
    monkeypatch.setattr(models.SqueezeNet1_1_Weights.IMAGENET1K_V1.value, "url", f"{base}/squeezenet1_1-00000000.pth")
    with pytest.raises(RuntimeError):
        models.squeezenet1_1(weights="DEFAULT", progress=False)


def test_offline_error_names_the_file(hub_dir, monkeypatch):
    monkeypatch.setenv("EMBER_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="squeezenet1_1-b8a52dc0.pth"):
        models.squeezenet1_1(weights="DEFAULT")
    with pytest.raises(RuntimeError, match="resnet50-0676ba61.pth"):  # legacy True: the V1 weights
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models.resnet50(pretrained=True)


def test_densenet_renames_old_checkpoint_keys():
    model = models.densenet121()

    def old_name(k):  # the published file's names for the parameters and running statistics
        if k.endswith("num_batches_tracked"):
            return k
        return k.replace(".norm1.", ".norm.1.").replace(".conv2.", ".conv.2.")
    old = {old_name(k): v for k, v in model.state_dict().items()}
    assert "features.denseblock1.denselayer1.norm.1.weight" in old
    renamed = densenet._rename_old_keys(old)
    assert list(renamed) == list(model.state_dict())
    model.load_state_dict(renamed)


# ---- legacy arguments ----------------------------------------------------------------

def test_pretrained_false_warns_and_builds():
    with pytest.warns(UserWarning) as record:
        m = models.resnet18(pretrained=False, num_classes=3)
    assert m.fc.out_features == 3
    messages = [str(w.message) for w in record]
    assert any("'pretrained' is deprecated" in s for s in messages)
    assert any("equivalent to passing `weights=None`" in s for s in messages)


def test_positional_arguments_warn():
    with pytest.warns(UserWarning, match="as positional parameter"):
        m = models.alexnet(None, False, num_classes=4)
    assert m.classifier[6].out_features == 4


def test_pretrained_beside_weights_is_rejected():
    with pytest.raises(TypeError):
        models.resnet18(weights=None, pretrained=False)


def test_utils_helpers():
    kwargs = {}
    _utils._ovewrite_named_param(kwargs, "num_classes", 1000)
    assert kwargs == {"num_classes": 1000}
    _utils._ovewrite_named_param(kwargs, "num_classes", 1000)
    with pytest.raises(ValueError, match="expected value 10 but got 1000"):
        _utils._ovewrite_named_param(kwargs, "num_classes", 10)
    assert _utils._ovewrite_value_param("x", None, 3) == 3
    with pytest.raises(ValueError):
        _utils._ovewrite_value_param("x", 2, 3)
    # nearest multiple of 8, at least 8, never more than 10% below the request
    assert [_utils._make_divisible(v, 8) for v in (24.0, 3, 10, 12, 100, 37.5)] == [24, 8, 16, 16, 104, 40]
    assert _utils._make_divisible(5, 8, min_value=16) == 16


# ---- preprocessing preset ------------------------------------------------------------

@pytest.mark.parametrize("case, interpolation", [
    ("u8", "bilinear"), ("batch", "bilinear"), ("pil", "bilinear"), ("small", "bilinear"),
    ("u8", "bicubic"), ("batch", "bicubic"), ("pil", "bicubic"),
])
def test_image_classification_preset(case, interpolation):
    mode = InterpolationMode.BICUBIC if interpolation == "bicubic" else InterpolationMode.BILINEAR
    preset = ImageClassification(crop_size=32, resize_size=20 if case == "small" else 40, interpolation=mode)
    if case == "pil":
        img = Image.fromarray(FIX["preset.u8"].transpose(1, 2, 0))
    else:
        img = ember.from_numpy(FIX[f"preset.{case}"].copy())
    out = preset(img)
    expected = FIX[f"preset.{case}_out" if interpolation == "bilinear" else f"preset.{case}_bicubic_out"]
    assert str(out.dtype) == "ember.float32" and tuple(out.shape) == expected.shape
    # uint8 tensors are rounded after resizing: a rounding flip is 1/255/std (~0.018) at most
    np.testing.assert_allclose(out.numpy(), expected, rtol=0, atol=2e-2 if case == "u8" else 1e-4)
    if case == "u8":
        assert np.mean(np.abs(out.numpy() - expected) > 1e-4) < 0.01


def test_preset_rejects_other_interpolations():
    with pytest.raises(NotImplementedError, match="interpolation"):
        ImageClassification(crop_size=8, interpolation=InterpolationMode.LANCZOS)


def test_preset_repr():
    assert repr(models.ResNet50_Weights.IMAGENET1K_V2.transforms()) == (
        "ImageClassification(\n    crop_size=[224]\n    resize_size=[232]\n    mean=[0.485, 0.456, 0.406]\n"
        "    std=[0.229, 0.224, 0.225]\n    interpolation=InterpolationMode.BILINEAR\n)")


def test_densenet_memory_efficient_gives_same_gradients():
    x = ember.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32))
    grads = []
    for efficient in (False, True):
        ember.manual_seed(0)
        model = models.DenseNet(growth_rate=4, block_config=(2, 1, 1, 1), num_init_features=8, num_classes=3,
                                memory_efficient=efficient)
        model(x).sum().backward()
        grads.append([p.grad.numpy() for p in model.parameters()])
    # the checkpointed segments' first forward runs without grad and may take another
    # convolution path (one product on all BLAS threads): float32 rounding, not a change
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_every_weights_preset_builds():
    """Each weights' preprocessing can be made (a mode given as a string once failed here)."""
    for name in models.list_models():
        for member in models.get_model_weights(name):
            preset = member.transforms()
            assert callable(preset), f"{name}: {member}"
