"""ember_vision.utils: hand-derived grid layouts, and torchvision's outputs stored in
fixtures/utils.npz (made by fixtures/make_fixtures.py) for pixel-exact agreement."""

import ast
import io
import os
import warnings

import numpy as np
import PIL
import pytest
from PIL import Image

import ember
from ember_vision.utils import draw_bounding_boxes, draw_segmentation_masks, make_grid, save_image

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "utils.npz")
GRIDS = ["grid_nrow2", "grid_nopad", "grid_gray", "grid_norm", "grid_norm_each", "grid_range", "grid_range_each",
         "grid_uint8", "grid_single_hw", "grid_single_chw"]
BOXES = ["box_default", "box_fill", "box_gray", "box_float", "box_label_bg", "box_oriented"]
MASKS = ["mask_default", "mask_float", "mask_2d", "mask_tuple"]


@pytest.fixture(scope="module")
def tv():
    with np.load(FIXTURES) as f:
        return {k: f[k] for k in f.files}


def _t(arr):
    return ember.from_numpy(np.array(arr))


def _kwargs(tv, name):
    return ast.literal_eval(str(tv[f"{name}_kwargs"]))


# ---- make_grid ------------------------------------------------------------------------

def test_make_grid_layout_by_hand():
    # 3 images 1x2 (values 1, 2, 3), nrow 2, padding 1, pad 9: two rows of two cells
    batch = ember.tensor([[[[1.0, 1.0]]], [[[2.0, 2.0]]], [[[3.0, 3.0]]]])
    grid = make_grid(batch, nrow=2, padding=1, pad_value=9)
    expected = np.array([[9, 9, 9, 9, 9, 9, 9],
                         [9, 1, 1, 9, 2, 2, 9],
                         [9, 9, 9, 9, 9, 9, 9],
                         [9, 3, 3, 9, 9, 9, 9],
                         [9, 9, 9, 9, 9, 9, 9]], dtype=np.float32)
    assert tuple(grid.shape) == (3, 5, 7) and grid.dtype is ember.float32
    for c in range(3):  # one channel is repeated to three
        np.testing.assert_array_equal(grid.numpy()[c], expected)


@pytest.mark.parametrize("name", GRIDS)
def test_make_grid_matches_torchvision(tv, name):
    got = make_grid(_t(tv[name]), **_kwargs(tv, name))
    expected = tv[f"{name}_out"]
    assert got.numpy().dtype == expected.dtype and tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


def test_make_grid_list_input_and_gradient(tv):
    x = tv["grid_nrow2"]
    images = [_t(img).requires_grad_() for img in x]
    grid = make_grid(images, nrow=2)
    np.testing.assert_array_equal(grid.detach().numpy(), tv["grid_nrow2_out"])
    grid.sum().backward()
    for img in images:  # each pixel appears once in the grid
        np.testing.assert_array_equal(img.grad.numpy(), np.ones_like(x[0]))


def test_make_grid_does_not_modify_input(tv):
    x = _t(tv["grid_norm"])
    make_grid(x, normalize=True, scale_each=True)
    np.testing.assert_array_equal(x.numpy(), tv["grid_norm"])


@pytest.mark.parametrize("bad", [[1, 2], "image", [ember.zeros(3, 2, 2), np.zeros((3, 2, 2))]])
def test_make_grid_rejects_non_tensors(bad):
    with pytest.raises(TypeError, match="tensor or list of tensors expected"):
        make_grid(bad)


def test_make_grid_value_range_must_be_tuple():
    with pytest.raises(TypeError, match="value_range"):
        make_grid(ember.rand(2, 3, 4, 4), normalize=True, value_range=[0, 1])


# ---- save_image -----------------------------------------------------------------------

@pytest.mark.parametrize("name", [g for g in GRIDS if g != "grid_uint8"])
def test_save_image_matches_torchvision(tv, name, tmp_path):
    buf = io.BytesIO()
    save_image(_t(tv[name]), buf, format="png", **_kwargs(tv, name))
    np.testing.assert_array_equal(np.array(Image.open(buf)), tv[f"{name}_png"])


def test_save_image_rounds_to_nearest(tmp_path):
    # 0.5/255 rounds up, values outside [0, 1] clamp
    img = ember.tensor([[[0.0, 0.5 / 255, 1.49 / 255, 1.0, 2.0, -1.0]]])
    save_image(img, str(tmp_path / "x.png"))
    np.testing.assert_array_equal(np.array(Image.open(tmp_path / "x.png"))[0, :, 0], [0, 1, 1, 255, 255, 0])


# ---- draw_bounding_boxes --------------------------------------------------------------

@pytest.mark.parametrize("name", BOXES)
def test_draw_bounding_boxes_matches_torchvision(tv, name):
    got = draw_bounding_boxes(_t(tv[name]), _t(tv[f"{name}_boxes"]), **_kwargs(tv, name))
    expected = tv[f"{name}_out"]
    assert got.numpy().dtype == expected.dtype and tuple(got.shape) == expected.shape
    # label glyphs come from pillow's default font: the fixture's pillow must be installed
    np.testing.assert_array_equal(got.numpy(), expected, err_msg=f"fixtures made with {list(tv['versions'])}, "
                                  f"installed pillow=={PIL.__version__}")


def test_draw_bounding_boxes_outline_by_hand():
    img = ember.zeros(3, 6, 7, dtype=ember.uint8)
    out = draw_bounding_boxes(img, ember.tensor([[1, 1, 5, 4]]), colors=(10, 20, 30)).numpy()
    inside = np.zeros((6, 7), bool)
    inside[1:5, 1:6] = True
    inside[2:4, 2:5] = False  # a one-pixel outline: corners included, interior untouched
    for c, v in enumerate((10, 20, 30)):
        np.testing.assert_array_equal(out[c], np.where(inside, v, 0))


def test_draw_bounding_boxes_no_boxes_warns():
    img = ember.zeros(3, 4, 4, dtype=ember.uint8)
    with pytest.warns(UserWarning, match="No box was drawn"):
        assert draw_bounding_boxes(img, ember.zeros(0, 4)) is img


def test_draw_bounding_boxes_font_size_without_font_warns():
    with pytest.warns(UserWarning, match="font_size"):
        draw_bounding_boxes(ember.zeros(3, 8, 8, dtype=ember.uint8), ember.tensor([[1, 1, 5, 5]]), font_size=20)


@pytest.mark.parametrize("image, boxes, kwargs, error", [
    (np.zeros((3, 4, 4)), [[0, 0, 1, 1]], {}, TypeError),
    ("int32", [[0, 0, 1, 1]], {}, ValueError),
    ("batch", [[0, 0, 1, 1]], {}, ValueError),
    ("two_channels", [[0, 0, 1, 1]], {}, ValueError),
    ("ok", [[3, 0, 1, 1]], {}, ValueError),
    ("ok", [[0, 0, 1, 1]], {"labels": ["a", "b"]}, ValueError),
    ("ok", [[0, 0, 1, 1], [0, 0, 2, 2]], {"colors": ["red"]}, ValueError),
    ("ok", [[0, 0, 1, 1]], {"colors": (1, 2)}, ValueError),
    ("ok", [[0, 0, 1, 1]], {"colors": 5}, ValueError),
])
def test_draw_bounding_boxes_errors(image, boxes, kwargs, error):
    images = {"int32": ember.zeros(3, 4, 4, dtype=ember.int32), "batch": ember.zeros(1, 3, 4, 4, dtype=ember.uint8),
              "two_channels": ember.zeros(2, 4, 4, dtype=ember.uint8), "ok": ember.zeros(3, 4, 4, dtype=ember.uint8)}
    with pytest.raises(error):
        draw_bounding_boxes(images.get(image, image) if isinstance(image, str) else image, ember.tensor(boxes),
                            **kwargs)


# ---- draw_segmentation_masks ----------------------------------------------------------

@pytest.mark.parametrize("name", MASKS)
def test_draw_segmentation_masks_matches_torchvision(tv, name):
    got = draw_segmentation_masks(_t(tv[name]), _t(tv[f"{name}_masks"]), **_kwargs(tv, name))
    expected = tv[f"{name}_out"]
    assert got.numpy().dtype == expected.dtype and tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


def test_draw_segmentation_masks_by_hand():
    img = ember.full((3, 1, 3), 100, dtype=ember.uint8)
    masks = ember.tensor([[[True, True, False]], [[False, True, False]]])
    out = draw_segmentation_masks(img, masks, alpha=0.5, colors=[(200, 0, 50), (0, 0, 0)]).numpy()
    # pixel 0: one mask -> (100 + 200) / 2 ...; pixel 1: two masks -> painted 0; pixel 2: untouched
    np.testing.assert_array_equal(out[:, 0, :], [[150, 50, 100], [50, 50, 100], [75, 50, 100]])


def test_draw_segmentation_masks_no_masks_warns():
    img = ember.zeros(3, 4, 4, dtype=ember.uint8)
    with pytest.warns(UserWarning, match="No mask was drawn"):
        assert draw_segmentation_masks(img, ember.zeros(0, 4, 4, dtype=ember.bool)) is img


@pytest.mark.parametrize("image, masks, error", [
    (np.zeros((3, 4, 4)), ember.zeros(4, 4, dtype=ember.bool), TypeError),
    (ember.zeros(3, 4, 4, dtype=ember.int64), ember.zeros(4, 4, dtype=ember.bool), ValueError),
    (ember.zeros(1, 4, 4, dtype=ember.uint8), ember.zeros(4, 4, dtype=ember.bool), ValueError),
    (ember.zeros(3, 4, 4, dtype=ember.uint8), ember.zeros(4, 4), ValueError),
    (ember.zeros(3, 4, 4, dtype=ember.uint8), ember.zeros(1, 1, 4, 4, dtype=ember.bool), ValueError),
    (ember.zeros(3, 4, 4, dtype=ember.uint8), ember.zeros(4, 5, dtype=ember.bool), ValueError),
])
def test_draw_segmentation_masks_errors(image, masks, error):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error):
            draw_segmentation_masks(image, masks)
