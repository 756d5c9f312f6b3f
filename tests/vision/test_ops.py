"""ember_vision.ops against torchvision.ops (fixtures/ops.npz, made by
fixtures/make_ops_fixtures.py), plus hand-derived values and error types."""

import importlib.util
import os

import numpy as np
import pytest

import ember
from ember_vision import ops

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("make_ops_fixtures",
                                               os.path.join(HERE, "fixtures", "make_ops_fixtures.py"))
FIX = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(FIX)
DATA = np.load(os.path.join(HERE, "fixtures", "ops.npz"))


def T(name, dtype=None):
    t = ember.tensor(DATA[name])
    return t if dtype is None else t.to(dtype)


def close(e, expected, rtol=1e-6, atol=1e-9):
    assert str(e.dtype).rsplit(".", 1)[-1] == str(expected.dtype), (e.dtype, expected.dtype)
    assert tuple(e.shape) == expected.shape
    np.testing.assert_allclose(e.detach().numpy(), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("fmt", FIX.FORMATS)
def test_area_iou_convert(fmt):
    c1 = ops.box_convert(T("boxes1"), "xyxy", fmt)
    c2 = ops.box_convert(T("boxes2"), "xyxy", fmt)
    close(ops.box_area(c1, fmt=fmt), DATA[f"area/{fmt}"])
    close(ops.box_iou(c1, c2, fmt=fmt), DATA[f"iou/{fmt}"])
    for out_fmt in FIX.FORMATS:
        close(ops.box_convert(c1, fmt, out_fmt), DATA[f"convert/{fmt}/{out_fmt}"])


def test_giou_clip_small_and_int_boxes():
    close(ops.generalized_box_iou(T("boxes1"), T("boxes2")), DATA["giou"])
    close(ops.generalized_box_iou(T("boxes1")[None, :5], T("boxes2")[None]), DATA["giou_batched"])
    close(ops.clip_boxes_to_image(T("boxes1"), (9, 14)), DATA["clip"])
    close(ops.remove_small_boxes(T("boxes1"), 4.0), DATA["small"])
    close(ops.box_area(T("int_boxes")), DATA["int_area"])  # int16 -> int32
    close(ops.box_iou(T("int_boxes"), T("int_boxes")), DATA["int_iou"])


def test_box_ops_by_hand():
    a = ember.tensor([[0.0, 0.0, 2.0, 2.0]])
    b = ember.tensor([[1.0, 1.0, 3.0, 3.0], [4.0, 0.0, 5.0, 1.0]])
    # overlap 1, union 7; enclosing box 3x3 = 9 -> giou = 1/7 - 2/9
    assert ops.box_iou(a, b)[0].tolist() == pytest.approx([1 / 7, 0.0])
    assert ops.generalized_box_iou(a, b)[0, 0].item() == pytest.approx(1 / 7 - 2 / 9)
    assert ops.box_convert(a, "xyxy", "cxcywh").tolist() == [[1.0, 1.0, 2.0, 2.0]]
    assert ops.box_convert(a, "xyxy", "xyxy") is not a


def test_box_errors():
    a = ember.zeros(2, 4)
    with pytest.raises(ValueError, match="Unsupported"):
        ops.box_convert(a, "xyxy", "yxyx")
    with pytest.raises(ValueError, match="Unsupported"):
        ops.box_area(a, fmt="xywhr")
    with pytest.raises(ValueError, match="Unsupported"):
        ops.box_iou(a, a, fmt="abcd")
    with pytest.raises(RuntimeError, match="4 columns"):
        ops.nms(ember.zeros(3, 5), ember.zeros(3), 0.5)
    with pytest.raises(RuntimeError, match="same number"):
        ops.nms(ember.zeros(3, 4), ember.zeros(2), 0.5)


@pytest.mark.parametrize("thr", FIX.NMS_THRESHOLDS)
def test_nms_and_batched_nms(thr):
    keep = ops.nms(T("nms_boxes"), T("nms_scores"), thr)
    assert keep.dtype == ember.int64
    assert keep.tolist() == DATA[f"nms/{thr}"].tolist()
    keep = ops.batched_nms(T("nms_boxes"), T("nms_scores"), T("nms_idxs"), thr)
    assert keep.tolist() == DATA[f"batched_nms/{thr}"].tolist()
    keep = ops.batched_nms(T("big_nms_boxes"), T("big_nms_scores"), T("big_nms_idxs"), thr)
    assert keep.tolist() == DATA[f"batched_nms_big/{thr}"].tolist()


def test_nms_empty():
    for keep in (ops.nms(ember.zeros(0, 4), ember.zeros(0), 0.5),
                 ops.batched_nms(ember.zeros(0, 4), ember.zeros(0), ember.zeros(0, dtype=ember.int64), 0.5)):
        assert keep.dtype == ember.int64 and tuple(keep.shape) == (0,)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(FIX.ROI_CASES))
@pytest.mark.parametrize("op", ["roi_align", "roi_pool"])
def test_roi_ops_match_torchvision(op, case, dtype):
    size, scale, ratio, aligned = FIX.ROI_CASES[case]
    edtype = getattr(ember, dtype)
    x = T("roi_input", edtype).clone().requires_grad_()
    rois = T("rois", edtype)
    if op == "roi_align":
        out = ops.roi_align(x, rois, size, scale, ratio, aligned)
    else:
        out = ops.roi_pool(x, rois, size, scale)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    close(out, DATA[f"{op}/{case}/{dtype}"], **tol)
    (out * T("roi_probe", edtype)[:, :, : size[0], : size[1]]).sum().backward()
    close(x.grad, DATA[f"{op}/{case}/{dtype}/grad"], **tol)


@pytest.mark.parametrize("op", ["roi_align", "roi_pool"])
def test_roi_box_list_form_and_module(op):
    x = T("roi_input")
    rois = T("rois")
    per_image = [rois[rois[:, 0] == i][:, 1:] for i in range(2)]
    order = ember.argsort(rois[:, 0], stable=True)
    if op == "roi_align":
        module = ops.RoIAlign((3, 3), 1.0, -1)
        assert repr(module) == "RoIAlign(output_size=(3, 3), spatial_scale=1.0, sampling_ratio=-1, aligned=False)"
    else:
        module = ops.RoIPool((3, 3), 1.0)
        assert repr(module) == "RoIPool(output_size=(3, 3), spatial_scale=1.0)"
    expected = DATA[f"{op}/plain/float64"][order.numpy()]
    close(module(x, per_image), expected, rtol=1e-10, atol=1e-12)


def test_roi_errors():
    x = ember.zeros(1, 2, 4, 4)
    with pytest.raises(AssertionError, match=r"Tensor\[K, 5\]"):
        ops.roi_align(x, ember.zeros(3, 4), 2)
    with pytest.raises(AssertionError, match=r"List\[Tensor\[L, 4\]\]"):
        ops.roi_pool(x, [ember.zeros(3, 5)], 2)
    with pytest.raises(RuntimeError, match="same type"):
        ops.roi_align(x, ember.zeros(1, 5, dtype=ember.float64), 2)
    assert tuple(ops.roi_align(x, ember.zeros(0, 5), (2, 3)).shape) == (0, 2, 2, 3)


def test_roi_align_gradcheck():
    x = T("roi_input")[:1, :1, :6, :7].requires_grad_()
    rois = ember.tensor([[0, 0.3, 0.8, 5.1, 4.4], [0, 2.0, 1.0, 6.5, 5.5]], dtype=ember.float64)
    assert ember.autograd.gradcheck(lambda t: ops.roi_align(t, rois, 2, 1.0, 2, True), (x,))
    assert ember.autograd.gradgradcheck(lambda t: ops.roi_align(t, rois, 2, 1.0, 2, True) ** 2, (x,))
