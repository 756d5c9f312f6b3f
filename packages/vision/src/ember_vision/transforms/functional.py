"""Functional image transforms (torchvision.transforms.functional).

Every function takes a PIL image or an ember tensor ``[..., C, H, W]`` (uint8 in 0..255 or
float in 0..1) and returns the same kind. PIL images go through pillow's own operations
(``_functional_pil``); tensors through ember ops (``_functional_tensor``), so float tensor
results are differentiable. Semantics, argument names and errors follow torchvision 0.29.
"""

from __future__ import annotations

import math
import numbers
import sys
from enum import Enum

import numpy as np
from PIL import Image

import ember

from . import _functional_pil as F_pil
from . import _functional_tensor as F_t


class InterpolationMode(Enum):
    """Interpolation modes: tensors support NEAREST, NEAREST_EXACT, BILINEAR and BICUBIC;
    PIL images all of them (NEAREST_EXACT is pillow's NEAREST)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_INT_TO_MODE = {
    0: InterpolationMode.NEAREST, 1: InterpolationMode.LANCZOS, 2: InterpolationMode.BILINEAR,
    3: InterpolationMode.BICUBIC, 4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING,
}
pil_modes_mapping = {
    InterpolationMode.NEAREST: 0, InterpolationMode.NEAREST_EXACT: 0, InterpolationMode.BILINEAR: 2,
    InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4, InterpolationMode.HAMMING: 5,
    InterpolationMode.LANCZOS: 1,
}


def _interpolation_modes_from_int(i: int) -> InterpolationMode:
    return _INT_TO_MODE[i]


def _interp(interpolation) -> InterpolationMode:
    """Accept an InterpolationMode or a pillow integer constant; raise TypeError otherwise."""
    if isinstance(interpolation, InterpolationMode):
        return interpolation
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer constant")


_is_pil_image = F_pil._is_pil_image


def _is_tensor(img) -> bool:
    return isinstance(img, ember.Tensor)


def get_dimensions(img) -> list[int]:
    """``[channels, height, width]`` of ``img`` (a PIL image or a tensor ``[..., C, H, W]``)."""
    return F_t.get_dimensions(img) if _is_tensor(img) else F_pil.get_dimensions(img)


def get_image_size(img) -> list[int]:
    """``[width, height]`` in pixels of ``img`` (a PIL image or a tensor ``[..., C, H, W]``)."""
    return F_t.get_image_size(img) if _is_tensor(img) else F_pil.get_image_size(img)


def get_image_num_channels(img) -> int:
    """The channel count C of ``img``: ``shape[-3]`` of a tensor ``[..., C, H, W]`` (1 for a
    2-d tensor), the band count of a PIL image (torchvision.transforms.functional.get_image_num_channels).
    """
    return F_t.get_image_num_channels(img) if _is_tensor(img) else F_pil.get_image_num_channels(img)


def to_tensor(pic) -> ember.Tensor:
    """A PIL image or a numpy array ``pic`` (``[H, W, C]`` / ``[H, W]``) as a tensor ``[C, H, W]``;
    uint8 values become float32 in [0.0, 1.0], other dtypes are kept (mode ``'1'`` becomes 0/1.0).

    Raises TypeError for other inputs and ValueError for arrays that are not 2-d or 3-d.
    """
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic[:, :, None] if pic.ndim == 2 else pic
    elif _is_pil_image(pic):
        arr = np.array(pic, np.int32 if pic.mode == "I" else (np.int16 if pic.mode == "I;16" else None), copy=True)
        if pic.mode == "1":
            arr = arr.astype(np.uint8) * 255
        if arr.ndim == 2:
            arr = arr[:, :, None]
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    chw = arr.transpose(2, 0, 1)
    if chw.dtype == np.uint8:
        out = np.divide(chw, np.float32(255), dtype=np.float32)  # torch divides (not * 1/255)
        return ember.from_numpy(np.ascontiguousarray(out))
    return ember.from_numpy(np.ascontiguousarray(chw))


def pil_to_tensor(pic) -> ember.Tensor:
    """The PIL image ``pic`` as a tensor ``[C, H, W]`` of its own dtype (uint8 for 8-bit modes),
    unscaled. Raises TypeError when ``pic`` is not a PIL image.
    """
    if not _is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.array(pic, copy=True)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def to_pil_image(pic, mode=None):
    """A tensor ``[C, H, W]`` / ``[H, W]`` or an ndarray ``[H, W, C]`` ``pic`` as a PIL image.

    Float data (unless ``mode='F'``) is scaled by 255 and truncated to uint8. ``mode`` is
    inferred from channels and dtype (L, I;16, I, F, LA, RGB, RGBA) when not given.
    Raises TypeError for other inputs or unsupported dtypes, ValueError for bad shapes/modes.
    """
    if isinstance(pic, ember.Tensor):
        if pic.ndim == 3:
            pic = pic.permute(1, 2, 0)
        pic = pic.detach().cpu().numpy()
    elif not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if pic.ndim == 2:
        pic = pic[:, :, None]
    if pic.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    if pic.shape[-1] > 4:
        raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-1]} channels.")
    arr = pic
    if np.issubdtype(arr.dtype, np.floating) and mode != "F":
        arr = (arr * 255).astype(np.uint8)
    channels = arr.shape[2]
    if channels == 1:
        arr = arr[:, :, 0]
        expected = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16" if sys.byteorder == "little" else "I;16B",
                    np.dtype(np.int32): "I", np.dtype(np.float32): "F"}.get(arr.dtype)
        if mode is not None and mode != expected:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {arr.dtype}. Should be {expected}")
        mode = expected
    else:
        permitted, default = {2: (["LA"], "LA"), 3: (["RGB", "YCbCr", "HSV"], "RGB"),
                              4: (["RGBA", "CMYK", "RGBX"], "RGBA")}[channels]
        if mode is not None and mode not in permitted:
            raise ValueError(f"Only modes {permitted} are supported for {channels}D inputs")
        if mode is None and arr.dtype == np.uint8:
            mode = default
    if mode is None:
        raise TypeError(f"Input type {arr.dtype} is not supported")
    arr = np.ascontiguousarray(arr)
    return Image.frombytes(mode, (arr.shape[1], arr.shape[0]), arr.tobytes())


def convert_image_dtype(image, dtype=ember.float32):
    """Convert the tensor ``image`` to ``dtype``, rescaling values (uint8 255 <-> float 1.0).

    Float -> int multiplies by ``max + 1 - 1e-3``; raises RuntimeError for unsafe float32 ->
    int32/int64 and float64 -> int64 casts; TypeError for a non-tensor input.
    """
    if not isinstance(image, ember.Tensor):
        raise TypeError("Input img should be Tensor Image")
    return F_t.convert_image_dtype(image, dtype)


def normalize(tensor, mean, std, inplace: bool = False):
    """``(tensor - mean) / std`` per channel of a float ``tensor`` ``[..., C, H, W]``; ``mean`` and
    ``std`` are sequences of one value per channel; ``inplace`` writes into ``tensor``.

    Raises TypeError for non-tensor or non-float input, ValueError for ``ndim < 3`` or a zero std.
    """
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    return F_t.normalize(tensor, mean, std, inplace)


def _compute_resized_output_size(image_size, size, max_size=None) -> list[int]:
    h, w = image_size
    short, long = (w, h) if w <= h else (h, w)
    if len(size) == 1:  # the smaller edge becomes size[0], aspect ratio kept
        new_short = size[0]
        new_long = int(new_short * long / short)
        if max_size is not None:
            if max_size <= new_short:
                raise ValueError(
                    f"max_size = {max_size} must be strictly greater than the requested "
                    f"size for the smaller edge size = {size}"
                )
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        return [new_h, new_w]
    return [size[0], size[1]]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize ``img`` to ``size`` ([h, w]; or an int / [int] for the smaller edge, keeping the
    aspect ratio, the longer edge capped at ``max_size`` pixels). ``interpolation`` is an
    ``InterpolationMode`` or a pillow integer constant; tensors support NEAREST, NEAREST_EXACT,
    BILINEAR, BICUBIC. ``antialias`` applies to bilinear/bicubic tensors (PIL always antialiases).
    An image already of the output size is returned as is.

    Raises TypeError for a bad interpolation, ValueError for a bad size or max_size.
    """
    interpolation = _interp(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in (1, 2):
            raise ValueError(
                f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element tuple/list"
            )
        if max_size is not None and len(size) != 1:
            raise ValueError(
                "max_size should only be passed if size specifies the length of the smaller edge, "
                "i.e. size should be an int or a sequence of length 1 in torchscript mode."
            )
    _, h, w = get_dimensions(img)
    size = [size] if isinstance(size, int) else list(size)
    out_size = _compute_resized_output_size((h, w), size, max_size)
    if [h, w] == out_size:
        return img
    if not _is_tensor(img):
        return F_pil.resize(img, size=out_size, interpolation=pil_modes_mapping[interpolation])
    return F_t.resize(img, size=out_size, interpolation=interpolation.value, antialias=antialias)


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad ``img`` by ``padding`` pixels (int, [all], [left/right, top/bottom] or
    [left, top, right, bottom]) with ``padding_mode`` constant (value ``fill``, a number or one per
    channel), edge, reflect or symmetric. Raises TypeError/ValueError for malformed arguments.
    """
    if not _is_tensor(img):
        return F_pil.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)
    return F_t.pad(img, padding=padding, fill=fill, padding_mode=padding_mode)


def crop(img, top: int, left: int, height: int, width: int):
    """Crop ``img`` to the box whose top-left corner is (``top``, ``left``) and whose size is
    ``height`` x ``width`` pixels; parts outside the image are zeros.
    """
    if not _is_tensor(img):
        return F_pil.crop(img, top, left, height, width)
    return F_t.crop(img, top, left, height, width)


def _pair(size):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return size[0], size[0]
    return size


def center_crop(img, output_size):
    """Crop the center ``output_size`` ([h, w] or int) of ``img``; pads with zeros if the image
    is smaller.
    """
    crop_h, crop_w = _pair(output_size)
    _, h, w = get_dimensions(img)
    if crop_w > w or crop_h > h:
        padding = [
            (crop_w - w) // 2 if crop_w > w else 0,
            (crop_h - h) // 2 if crop_h > h else 0,
            (crop_w - w + 1) // 2 if crop_w > w else 0,
            (crop_h - h + 1) // 2 if crop_h > h else 0,
        ]
        img = pad(img, padding, fill=0)
        _, h, w = get_dimensions(img)
        if crop_w == w and crop_h == h:
            return img
    top = int(round((h - crop_h) / 2.0))
    left = int(round((w - crop_w) / 2.0))
    return crop(img, top, left, crop_h, crop_w)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    """``crop`` ``img`` to (``top``, ``left``, ``height``, ``width``), then ``resize`` it to
    ``size`` with ``interpolation`` and ``antialias``.
    """
    img = crop(img, top, left, height, width)
    return resize(img, size, interpolation, antialias=antialias)


def hflip(img):
    """Mirror ``img`` left-right (last axis of a tensor ``[..., C, H, W]``)."""
    return F_pil.hflip(img) if not _is_tensor(img) else F_t.hflip(img)


def vflip(img):
    """Mirror ``img`` top-bottom (axis -2 of a tensor ``[..., C, H, W]``)."""
    return F_pil.vflip(img) if not _is_tensor(img) else F_t.vflip(img)


def _get_perspective_coeffs(startpoints, endpoints) -> list[float]:
    """The 8 coefficients mapping output (end) points to input (start) points, solved in
    float64 by least squares and rounded to float32, as torchvision."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(
            f"Please provide exactly four corners, got {len(startpoints)} startpoints and {len(endpoints)} endpoints."
        )
    a = np.zeros((8, 8), dtype=np.float64)
    for i, ((ex, ey), (sx, sy)) in enumerate(zip(endpoints, startpoints)):
        a[2 * i] = [ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey]
        a[2 * i + 1] = [0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey]
    b = np.asarray(startpoints, dtype=np.float64).reshape(8)
    res = np.linalg.lstsq(a, b, rcond=None)[0].astype(np.float32)
    return [float(v) for v in res]


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Warp ``img`` so that ``startpoints`` (4 [x, y] corners, pixels) land on ``endpoints``;
    ``interpolation`` for sampling, ``fill`` for the area outside the input (a number or one per
    channel; None is 0). Raises ValueError unless exactly four points are given.
    """
    coeffs = _get_perspective_coeffs(startpoints, endpoints)
    interpolation = _interp(interpolation)
    if not _is_tensor(img):
        return F_pil.perspective(img, coeffs, interpolation=pil_modes_mapping[interpolation], fill=fill)
    return F_t.perspective(img, coeffs, interpolation=interpolation.value, fill=fill)


def five_crop(img, size):
    """Four corner crops and the center crop of ``img``, each ``size`` ([h, w] or int):
    (top-left, top-right, bottom-left, bottom-right, center).

    Raises ValueError if ``size`` is larger than the image.
    """
    size = _pair(size)
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    _, h, w = get_dimensions(img)
    ch, cw = size
    if cw > w or ch > h:
        raise ValueError(f"Requested crop size {size} is bigger than input size {(h, w)}")
    return (
        crop(img, 0, 0, ch, cw),
        crop(img, 0, w - cw, ch, cw),
        crop(img, h - ch, 0, ch, cw),
        crop(img, h - ch, w - cw, ch, cw),
        center_crop(img, [ch, cw]),
    )


def ten_crop(img, size, vertical_flip: bool = False):
    """``five_crop`` of ``img`` with ``size``, then of its horizontal flip (a vertical flip if
    ``vertical_flip``): a tuple of 10 images. Raises ValueError for a bad ``size``.
    """
    size = _pair(size)
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    flipped = vflip(img) if vertical_flip else hflip(img)
    return five_crop(img, size) + five_crop(flipped, size)


def adjust_brightness(img, brightness_factor: float):
    """Multiply ``img`` by ``brightness_factor`` (>= 0), clamped to the dtype range.
    Raises ValueError for a negative factor.
    """
    if not _is_tensor(img):
        return F_pil.adjust_brightness(img, brightness_factor)
    return F_t.adjust_brightness(img, brightness_factor)


def adjust_contrast(img, contrast_factor: float):
    """Blend ``img`` with its mean gray level by ``contrast_factor`` (>= 0): 0 gives a gray
    image, 1 the original, 2 doubles the contrast. Raises ValueError for a negative factor.
    """
    if not _is_tensor(img):
        return F_pil.adjust_contrast(img, contrast_factor)
    return F_t.adjust_contrast(img, contrast_factor)


def adjust_saturation(img, saturation_factor: float):
    """Blend ``img`` with its grayscale version by ``saturation_factor`` (>= 0): 0 gives gray,
    1 the original. Raises ValueError for a negative factor.
    """
    if not _is_tensor(img):
        return F_pil.adjust_saturation(img, saturation_factor)
    return F_t.adjust_saturation(img, saturation_factor)


def adjust_hue(img, hue_factor: float):
    """Rotate the hue of ``img`` (RGB, via HSV) by ``hue_factor`` in [-0.5, 0.5] turns
    (ValueError otherwise).
    """
    if not _is_tensor(img):
        return F_pil.adjust_hue(img, hue_factor)
    return F_t.adjust_hue(img, hue_factor)


def adjust_gamma(img, gamma: float, gain: float = 1):
    """``gain * img ** gamma`` for ``img`` scaled to [0, 1], clamped to [0, 1], then back to the
    dtype; ``gamma`` >= 0. Raises ValueError for a negative gamma.
    """
    if not _is_tensor(img):
        return F_pil.adjust_gamma(img, gamma, gain)
    return F_t.adjust_gamma(img, gamma, gain)


def _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted: bool = True) -> list[float]:
    """The 2x3 matrix (row-major, 6 floats) of rotation by ``angle`` degrees, shear (degrees),
    scale and translation about ``center``; the inverse (output -> input) if ``inverted``."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    # RSS = rotation * shear_y * shear_x, without the scale
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        m = [v / scale for v in (d, -b, 0.0, -c, a, 0.0)]
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    else:
        m = [v * scale for v in (a, b, 0.0, c, d, 0.0)]
        m[2] += m[0] * (-cx) + m[1] * (-cy) + cx + tx
        m[5] += m[3] * (-cx) + m[4] * (-cy) + cy + ty
    return m


def rotate(img, angle: float, interpolation=InterpolationMode.NEAREST, expand: bool = False, center=None, fill=None):
    """Rotate ``img`` counter-clockwise by ``angle`` degrees about ``center`` ([x, y] pixels,
    default the image center); ``interpolation`` for sampling; ``expand`` grows the output to hold
    the whole rotated image; ``fill`` for the area outside. Raises TypeError for a non-number angle
    or non-sequence center.
    """
    interpolation = _interp(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    if not _is_tensor(img):
        return F_pil.rotate(img, angle=angle, interpolation=pil_modes_mapping[interpolation], expand=expand,
                            center=center, fill=fill)
    center_f = [0.0, 0.0]
    if center is not None:
        _, h, w = get_dimensions(img)
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [w, h])]
    # the tensor kernel samples output -> input, hence the negated angle
    matrix = _get_inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return F_t.rotate(img, matrix=matrix, interpolation=interpolation.value, expand=expand, fill=fill)


def affine(img, angle: float, translate, scale: float, shear, interpolation=InterpolationMode.NEAREST, fill=None,
           center=None):
    """Affine warp of ``img`` keeping ``center`` ([x, y] pixels, default the image center)
    invariant: rotation ``angle`` (degrees, clockwise as torchvision), ``translate`` [tx, ty]
    pixels, ``scale`` > 0, ``shear`` (a number for x, or [sx, sy] degrees); ``interpolation`` for
    sampling, ``fill`` for the area outside. Raises TypeError/ValueError for malformed arguments.
    """
    interpolation = _interp(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    angle = float(angle)
    translate = list(translate)
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    _, h, w = get_dimensions(img)
    if not _is_tensor(img):
        if center is None:
            center = [w * 0.5, h * 0.5]
        matrix = _get_inverse_affine_matrix(center, angle, translate, scale, shear)
        return F_pil.affine(img, matrix=matrix, interpolation=pil_modes_mapping[interpolation], fill=fill)
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [w, h])]
    matrix = _get_inverse_affine_matrix(center_f, angle, [1.0 * t for t in translate], scale, shear)
    return F_t.affine(img, matrix=matrix, interpolation=interpolation.value, fill=fill)


def to_grayscale(img, num_output_channels: int = 1):
    """The PIL image ``img`` in grayscale with ``num_output_channels`` 1 (mode L) or 3 (the gray
    copied to RGB). Raises TypeError for non-PIL input, ValueError for another channel count.
    """
    if _is_pil_image(img):
        return F_pil.to_grayscale(img, num_output_channels)
    raise TypeError("Input should be PIL Image")


def rgb_to_grayscale(img, num_output_channels: int = 1):
    """RGB ``img`` to grayscale ``[..., 1 or 3, H, W]`` (``num_output_channels``) with luma
    0.2989 R + 0.587 G + 0.114 B. Raises ValueError if ``num_output_channels`` is not 1 or 3.
    """
    if not _is_tensor(img):
        return F_pil.to_grayscale(img, num_output_channels)
    return F_t.rgb_to_grayscale(img, num_output_channels)


def erase(img, i: int, j: int, h: int, w: int, v, inplace: bool = False):
    """Set the box at row ``i``, column ``j`` of ``h`` x ``w`` pixels of a tensor ``img``
    ``[..., C, H, W]`` to ``v`` (broadcast); ``inplace`` writes into ``img``, else a copy is
    changed. Raises TypeError for a non-tensor.
    """
    if not isinstance(img, ember.Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    return F_t.erase(img, i, j, h, w, v, inplace=inplace)


def gaussian_blur(img, kernel_size, sigma=None):
    """Gaussian blur of ``img`` with odd ``kernel_size`` ([kx, ky] or int) and ``sigma`` ([sx, sy]
    or a number; default ``0.15 * k + 0.35``), reflect padding. PIL inputs are blurred as uint8
    tensors and converted back. Raises TypeError/ValueError for bad sizes.
    """
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}")
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}")
    for k in kernel_size:
        if k % 2 == 0 or k < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in kernel_size]
    if not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    if len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    if _is_tensor(img):
        return F_t.gaussian_blur(img, list(kernel_size), list(sigma))
    if not _is_pil_image(img):
        raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
    out = F_t.gaussian_blur(pil_to_tensor(img), list(kernel_size), list(sigma))
    return to_pil_image(out, mode=img.mode)


def invert(img):
    """``max - img`` for ``img`` (max 255 for uint8, 1.0 for floats)."""
    return F_pil.invert(img) if not _is_tensor(img) else F_t.invert(img)


def posterize(img, bits: int):
    """Keep the top ``bits`` (0..8) bits of each uint8 value of ``img``. Raises ValueError for
    ``bits`` outside 0..8, TypeError for a non-uint8 tensor.
    """
    if not (0 <= bits <= 8):
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    return F_pil.posterize(img, bits) if not _is_tensor(img) else F_t.posterize(img, bits)


def solarize(img, threshold: float):
    """Invert the values of ``img`` that are >= ``threshold``. Raises TypeError if ``threshold``
    exceeds the dtype's maximum.
    """
    return F_pil.solarize(img, threshold) if not _is_tensor(img) else F_t.solarize(img, threshold)


def adjust_sharpness(img, sharpness_factor: float):
    """Blend ``img`` with a smoothed copy by ``sharpness_factor`` (>= 0): 0 blurs, 1 keeps,
    2 sharpens (PIL's rule). Raises ValueError for a negative factor.
    """
    if not _is_tensor(img):
        return F_pil.adjust_sharpness(img, sharpness_factor)
    return F_t.adjust_sharpness(img, sharpness_factor)


def autocontrast(img):
    """Rescale each channel of ``img`` so its darkest pixel is 0 and its lightest the maximum."""
    return F_pil.autocontrast(img) if not _is_tensor(img) else F_t.autocontrast(img)


def equalize(img):
    """Histogram equalization per channel of ``img`` (uint8 tensors ``[C, H, W]`` /
    ``[N, C, H, W]``, or a PIL image). Raises TypeError for other dtypes or ranks.
    """
    return F_pil.equalize(img) if not _is_tensor(img) else F_t.equalize(img)


def elastic_transform(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Displace every pixel of ``img`` by ``displacement`` ``[1, H, W, 2]`` (grid units, [-1, 1]
    spans the image); ``interpolation`` for sampling, ``fill`` for the area outside. PIL inputs
    go through the tensor kernel. Raises TypeError for a non-tensor displacement, ValueError for a
    wrong displacement shape.
    """
    interpolation = _interp(interpolation)
    if not isinstance(displacement, ember.Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    t_img = img
    if not _is_tensor(img):
        if not _is_pil_image(img):
            raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
        t_img = pil_to_tensor(img)
    expected = (1, *t_img.shape[-2:], 2)
    if tuple(displacement.shape) != expected:
        raise ValueError(f"Argument displacement shape should be {expected}, but given {tuple(displacement.shape)}")
    out = F_t.elastic_transform(t_img, displacement, interpolation=interpolation.value, fill=fill)
    if not _is_tensor(img):
        out = to_pil_image(out, mode=img.mode)
    return out
