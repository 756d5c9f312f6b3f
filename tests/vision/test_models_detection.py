"""SSDlite320-MobileNetV3-Large against torchvision (fixtures/models_detection.npz, written by
fixtures/make_models_detection_fixtures.py, whose docstring gives the weights, inputs and
thresholds): state layout, anchors, head outputs, detections, box coding, matching, training
losses, errors for bad input, and the weights enum."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from model_parity import RTOL, fill_values, state_layout

import ember
from ember_vision import models
from ember_vision.models import detection
from ember_vision.models.detection import _utils as det_utils

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "models_detection.npz")
DATA = np.load(FIXTURE)
SPEC = json.loads(str(DATA["spec"]))


def _filled_values(state):
    # the fixture's fill: model_parity's, every running_var scaled (see the fixture script)
    values = fill_values(state, SPEC["seed"])
    for key in values:
        if key.endswith("running_var"):
            values[key] = values[key] * np.float32(SPEC["running_var_scale"])
    return values


def _images():
    rng = np.random.default_rng(SPEC["input_seed"])
    return [ember.from_numpy(rng.random(tuple(shape), dtype=np.float32)) for shape in SPEC["image_shapes"]]


def _targets():
    return [{"boxes": ember.tensor(t["boxes"]), "labels": ember.tensor(t["labels"])} for t in SPEC["targets"]]


@pytest.fixture(scope="module")
def model():
    m = models.get_model(SPEC["builder"], **SPEC["kwargs"])
    values = _filled_values(SPEC["state"])
    m.load_state_dict({k: ember.from_numpy(values[k]) if k in values else v for k, v in m.state_dict().items()})
    return m.eval()


@pytest.fixture(scope="module")
def eval_outputs(model):
    images = _images()
    with ember.no_grad():
        image_list, _ = model.transform(images)
        features = list(model.backbone(image_list.tensors).values())
        head = model.head(features)
        anchors = model.anchor_generator(image_list, features)
        detections = model(images)
    return {"features": features, "head": head, "anchors": anchors, "detections": detections}


def test_state_dict_layout_matches_torchvision():
    m = detection.ssdlite320_mobilenet_v3_large(weights_backbone=None)
    got, want = state_layout(m), SPEC["state"]
    assert [k for k, _, _ in got] == [k for k, _, _ in want]
    assert got == want
    assert sum(p.numel() for p in m.parameters()) == SPEC["num_params"]


def test_anchors_match_torchvision(model, eval_outputs):
    anchors = eval_outputs["anchors"]
    assert len(anchors) == 2 and anchors[0].dtype == ember.float32
    np.testing.assert_allclose(anchors[0].numpy(), DATA["anchors"], rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(anchors[1].numpy(), anchors[0].numpy())
    assert [tuple(f.shape[-2:]) for f in eval_outputs["features"]] == [tuple(s) for s in DATA["feature_shapes"]]
    assert repr(model.anchor_generator) == SPEC["repr_anchor_generator"]
    assert repr(model.transform) == SPEC["repr_transform"]


def _close(got, want):
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale)


def test_head_outputs_match_torchvision(eval_outputs):
    head = eval_outputs["head"]
    assert set(head) == {"bbox_regression", "cls_logits"}
    assert tuple(head["cls_logits"].shape) == (2, DATA["bbox_regression"].shape[1], 91)
    _close(head["bbox_regression"].numpy(), DATA["bbox_regression"])
    _close(head["cls_logits"].numpy()[:, ::SPEC["cls_stride"]], DATA["cls_logits_sampled"])
    _close(ember.logsumexp(head["cls_logits"], -1).numpy(), DATA["cls_logsumexp"])


def _tie_groups(scores, tol=1e-4):
    # runs of consecutive detections whose scores differ by less than the tolerance: their
    # relative order is not decided by float32 rounding
    groups, start = [], 0
    for i in range(1, len(scores) + 1):
        if i == len(scores) or scores[i - 1] - scores[i] >= tol:
            groups.append(range(start, i))
            start = i
    return groups


@pytest.mark.parametrize("index", [0, 1])
def test_detections_match_torchvision(eval_outputs, index):
    det = eval_outputs["detections"][index]
    boxes, scores, labels = (det[k].numpy() for k in ("boxes", "scores", "labels"))
    want_boxes, want_scores, want_labels = (DATA[f"det{index}.{k}"] for k in ("boxes", "scores", "labels"))
    assert det["labels"].dtype == ember.int64 and det["scores"].dtype == ember.float32
    assert boxes.shape == want_boxes.shape and len(want_scores) > 0
    for group in _tie_groups(want_scores):
        idx = list(group)
        order_got = sorted(idx, key=lambda i: (labels[i], boxes[i, 0]))
        order_want = sorted(idx, key=lambda i: (want_labels[i], want_boxes[i, 0]))
        np.testing.assert_array_equal(labels[order_got], want_labels[order_want])
        np.testing.assert_allclose(scores[order_got], want_scores[order_want], rtol=0, atol=1e-4)
        np.testing.assert_allclose(boxes[order_got], want_boxes[order_want], rtol=1e-3,
                                   atol=1e-3 * float(np.abs(want_boxes).max()))
    # boxes are in the original image's pixels
    h, w = SPEC["image_shapes"][index][1:]
    assert boxes[:, 0::2].max() <= w and boxes[:, 1::2].max() <= h and boxes.min() >= 0


def test_box_coder_matches_torchvision_and_round_trips():
    coder = det_utils.BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
    gt, prop = ember.from_numpy(DATA["coder.gt"]), ember.from_numpy(DATA["coder.proposals"])
    codes = coder.encode_single(gt, prop)
    np.testing.assert_allclose(codes.numpy(), DATA["coder.codes"], rtol=1e-5, atol=1e-5)
    decoded = coder.decode_single(ember.from_numpy(DATA["coder.codes"]), prop)
    np.testing.assert_allclose(decoded.numpy(), DATA["coder.decoded"], rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(decoded.numpy(), DATA["coder.gt"], rtol=1e-5, atol=1e-3)
    # list forms split and reshape per image
    parts = coder.encode([gt[:20], gt[20:]], [prop[:20], prop[20:]])
    assert [tuple(p.shape) for p in parts] == [(20, 4), (30, 4)]
    assert tuple(coder.decode(codes, [prop]).shape) == (50, 1, 4)


def test_box_coder_is_differentiable():
    rng = np.random.default_rng(0)
    prop = ember.from_numpy(np.array([[1.0, 2.0, 6.0, 9.0], [0.0, 0.0, 3.0, 4.0]]))
    gt = ember.from_numpy(np.array([[1.5, 2.5, 5.0, 8.0], [0.5, 0.2, 3.5, 3.0]])).requires_grad_()
    codes = ember.from_numpy(rng.standard_normal((2, 4))).requires_grad_()
    coder = det_utils.BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
    assert ember.autograd.gradcheck(lambda g: coder.encode_single(g, prop), (gt,))
    assert ember.autograd.gradcheck(lambda c: coder.decode_single(c, prop), (codes,))


def test_ssd_matcher_matches_torchvision(eval_outputs):
    h, w = SPEC["image_shapes"][0][1:]
    gt = ember.tensor(SPEC["targets"][0]["boxes"]) * ember.tensor([320 / w, 320 / h] * 2)
    from ember_vision.ops import box_iou
    matched = det_utils.SSDMatcher(0.5)(box_iou(gt, eval_outputs["anchors"][0]))
    assert matched.dtype == ember.int64
    np.testing.assert_array_equal(matched.numpy(), DATA["matched_idxs0"])


def test_matcher_bands_and_low_quality_matches():
    q = ember.tensor([[0.9, 0.45, 0.1, 0.2], [0.1, 0.2, 0.35, 0.1]])
    assert det_utils.Matcher(0.5, 0.4)(q).tolist() == [0, -2, -1, -1]
    # allow_low_quality_matches keeps each gt's best column (col 2 for gt 1, 0.35)
    assert det_utils.Matcher(0.5, 0.4, allow_low_quality_matches=True)(q).tolist() == [0, -2, 1, -1]


def test_training_losses_match_torchvision():
    m = models.get_model(SPEC["builder"], **SPEC["kwargs"])
    values = _filled_values(SPEC["state"])
    m.load_state_dict({k: ember.from_numpy(values[k]) if k in values else v for k, v in m.state_dict().items()})
    m.train()
    losses = m(_images(), _targets())
    assert set(losses) == {"bbox_regression", "classification"}
    for key in losses:
        assert losses[key].shape == () and losses[key].dtype == ember.float32
        np.testing.assert_allclose(losses[key].item(), float(DATA[f"loss.{key}"]), rtol=1e-4)
    (losses["bbox_regression"] + losses["classification"]).backward()
    head_weight = m.head.classification_head.module_list[0][1].weight
    assert head_weight.grad is not None and float(head_weight.grad.abs().sum()) > 0


def _bad_calls(model):
    image = _images()[0]
    bad_box = [{"boxes": ember.tensor([[10.0, 10.0, 10.0, 50.0]]), "labels": ember.tensor([1])}]
    wide = [{"boxes": ember.zeros(1, 5), "labels": ember.tensor([1])}]

    def train_call(*args):
        model.train()
        try:
            return model(*args)
        finally:
            model.eval()

    return {
        "train_without_targets": lambda: train_call([image]),
        "degenerate_box": lambda: train_call([image], bad_box),
        "boxes_not_n_by_4": lambda: train_call([image], wide),
        "image_not_3d": lambda: model([image[None]]),
        "integer_image": lambda: model([(image * 255).to(ember.uint8)]),
        "matcher_no_gt": lambda: det_utils.SSDMatcher(0.5)(ember.zeros(0, 4)),
        "steps_length": lambda: detection.DefaultBoxGenerator([[2], [2]], steps=[8]),
        "weights_num_classes": lambda: models.get_model(SPEC["builder"], weights="DEFAULT", num_classes=10),
        "trainable_layers_range": lambda: models.get_model(SPEC["builder"], weights=None, weights_backbone=None,
                                                           trainable_backbone_layers=7),
    }


@pytest.mark.parametrize("case", sorted(SPEC["errors"]))
def test_bad_input_raises_torchvision_error(model, case):
    call = _bad_calls(model)[case]
    expected = SPEC["errors"][case]
    if expected == "none":  # torchvision only warns here (no pretrained weights: all layers train)
        with pytest.warns(UserWarning, match="trainable_backbone_layers"):
            call()
        return
    with pytest.raises(BaseException) as info:
        call()
    assert type(info.value).__name__ == expected


def test_weights_enum_meta_and_registry():
    enum = detection.SSDLite320_MobileNet_V3_Large_Weights
    assert models.get_model_weights("ssdlite320_mobilenet_v3_large") is enum
    assert models.get_weight("SSDLite320_MobileNet_V3_Large_Weights.COCO_V1") is enum.COCO_V1
    assert enum.DEFAULT is enum.COCO_V1
    meta, want = enum.COCO_V1.meta, SPEC["weights"]
    assert len(meta["categories"]) == 91 and meta["categories"] == want["categories"]
    assert meta["num_params"] == want["num_params"] == SPEC["num_params"]
    for key in ("recipe", "_metrics", "_ops", "_file_size"):
        assert meta[key] == want[key], key
    assert list(meta["min_size"]) == want["min_size"]
    assert enum.COCO_V1.url == want["url"]
    assert repr(enum.COCO_V1.transforms()) == want["transforms"]
    assert "ssdlite320_mobilenet_v3_large" in models.list_models(module=models.detection)


def test_object_detection_preset_scales_to_unit_range():
    preset = detection.SSDLite320_MobileNet_V3_Large_Weights.COCO_V1.transforms()
    img = ember.tensor([[[0, 51], [255, 102]]], dtype=ember.uint8)
    out = preset(img)
    assert out.dtype == ember.float32 and repr(preset) == "ObjectDetection()"
    np.testing.assert_allclose(out.numpy(), np.array([[[0, 51], [255, 102]]]) / 255.0, rtol=1e-6)


def test_builder_arguments():
    m = detection.ssdlite320_mobilenet_v3_large(weights_backbone=None, num_classes=5, detections_per_img=7)
    assert m.head.classification_head.num_columns == 5 and m.detections_per_img == 7
    assert (m.score_thresh, m.nms_thresh, m.topk_candidates, m.neg_to_pos_ratio) == (0.001, 0.55, 300, 3.0)
    with pytest.warns(UserWarning, match="size"):
        detection.ssdlite320_mobilenet_v3_large(weights_backbone=None, size=(300, 300))
