"""PIL kernels for image transforms (torchvision.transforms._functional_pil).

Each kernel calls pillow's own operation, so results are pillow's, as in torchvision.
"""

from __future__ import annotations

import numbers

import numpy as np
from PIL import Image, ImageEnhance, ImageOps


def _is_pil_image(img) -> bool:
    return isinstance(img, Image.Image)


def _check(img) -> None:
    if not _is_pil_image(img):
        raise TypeError(f"img should be PIL Image. Got {type(img)}")


def get_dimensions(img) -> list[int]:
    if _is_pil_image(img):
        width, height = img.size
        return [len(img.getbands()), height, width]
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_size(img) -> list[int]:
    if _is_pil_image(img):
        return list(img.size)
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_num_channels(img) -> int:
    if _is_pil_image(img):
        return len(img.getbands())
    raise TypeError(f"Unexpected type {type(img)}")


def hflip(img):
    _check(img)
    return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)


def vflip(img):
    _check(img)
    return img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)


def _enhance(enhancer, img, factor):
    _check(img)
    return enhancer(img).enhance(factor)


def adjust_brightness(img, brightness_factor: float):
    return _enhance(ImageEnhance.Brightness, img, brightness_factor)


def adjust_contrast(img, contrast_factor: float):
    return _enhance(ImageEnhance.Contrast, img, contrast_factor)


def adjust_saturation(img, saturation_factor: float):
    return _enhance(ImageEnhance.Color, img, saturation_factor)


def adjust_sharpness(img, sharpness_factor: float):
    return _enhance(ImageEnhance.Sharpness, img, sharpness_factor)


def adjust_hue(img, hue_factor: float):
    """Shift the H channel of pillow's HSV by ``hue_factor * 255`` (uint8 wrap-around)."""
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check(img)
    mode = img.mode
    if mode in {"L", "1", "I", "F"}:
        return img
    h, s, v = img.convert("HSV").split()
    shift = np.uint8(np.int32(hue_factor * 255) & 0xFF)
    h_arr = (np.asarray(h, dtype=np.uint8) + shift).astype(np.uint8)
    return Image.merge("HSV", (Image.fromarray(h_arr, "L"), s, v)).convert(mode)


def adjust_gamma(img, gamma: float, gain: float = 1.0):
    _check(img)
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    mode = img.mode
    table = [int((255 + 1 - 1e-3) * gain * pow(v / 255.0, gamma)) for v in range(256)] * 3
    return img.convert("RGB").point(table).convert(mode)


def _parse_fill(fill, img, name: str = "fillcolor") -> dict:
    """A fill as pillow wants it: one int per band (floats for mode F)."""
    channels = get_image_num_channels(img)
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and channels > 1:
        fill = tuple([fill] * channels)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = tuple(fill) * channels
        elif len(fill) != channels:
            raise ValueError(
                "The number of elements in 'fill' does not match the number of channels of the image "
                f"({len(fill)} != {channels})"
            )
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(v) for v in fill) if isinstance(fill, tuple) else int(fill)
    return {name: fill}


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    _check(img)
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, list):
        padding = tuple(padding)
    if isinstance(padding, tuple) and len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    if isinstance(padding, tuple) and len(padding) == 1:
        padding = padding[0]
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if padding_mode == "constant":
        out = ImageOps.expand(img, border=padding, **_parse_fill(fill, img, name="fill"))
        if img.mode == "P":
            out.putpalette(img.getpalette())
        return out
    if isinstance(padding, int):
        p = [padding] * 4
    elif len(padding) == 2:
        p = [padding[0], padding[1], padding[0], padding[1]]
    else:
        p = list(padding)  # left, top, right, bottom
    crop = [-min(v, 0) for v in p]
    if any(crop):
        img = img.crop((crop[0], crop[1], img.width - crop[2], img.height - crop[3]))
    left, top, right, bottom = (max(v, 0) for v in p)
    arr = np.asarray(img)
    widths = ((top, bottom), (left, right)) + (((0, 0),) if arr.ndim == 3 else ())
    out = Image.fromarray(np.pad(arr, widths, mode=padding_mode))
    if img.mode == "P":
        out.putpalette(img.getpalette())
    return out


def crop(img, top: int, left: int, height: int, width: int):
    _check(img)
    return img.crop((left, top, left + width, top + height))


def resize(img, size, interpolation=Image.BILINEAR):
    """``size = [h, w]``; pillow always antialiases."""
    _check(img)
    if not (isinstance(size, list) and len(size) == 2):
        raise TypeError(f"Got inappropriate size arg: {size}")
    return img.resize(tuple(size[::-1]), interpolation)


def affine(img, matrix, interpolation=Image.NEAREST, fill=None):
    _check(img)
    return img.transform(img.size, Image.AFFINE, matrix, interpolation, **_parse_fill(fill, img))


def rotate(img, angle: float, interpolation=Image.NEAREST, expand: bool = False, center=None, fill=None):
    _check(img)
    return img.rotate(angle, interpolation, expand, center, **_parse_fill(fill, img))


def perspective(img, perspective_coeffs, interpolation=Image.BICUBIC, fill=None):
    _check(img)
    return img.transform(img.size, Image.PERSPECTIVE, perspective_coeffs, interpolation, **_parse_fill(fill, img))


def to_grayscale(img, num_output_channels: int):
    _check(img)
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    gray = img.convert("L")
    if num_output_channels == 1:
        return gray
    arr = np.asarray(gray, dtype=np.uint8)
    return Image.fromarray(np.dstack([arr, arr, arr]), "RGB")


def invert(img):
    _check(img)
    return ImageOps.invert(img)


def posterize(img, bits: int):
    _check(img)
    return ImageOps.posterize(img, bits)


def solarize(img, threshold: int):
    _check(img)
    return ImageOps.solarize(img, threshold)


def autocontrast(img):
    _check(img)
    return ImageOps.autocontrast(img)


def equalize(img):
    _check(img)
    return ImageOps.equalize(img)
