"""The inference preprocessing attached to pretrained weights (torchvision.transforms._presets).

Source: https://pytorch.org/vision/stable/models.html ("Using the pre-trained models").
"""

from __future__ import annotations

import numpy as np
from PIL import Image

import ember
from ember import nn
from ember.nn import functional as F

from ..transforms import functional as TF

__all__ = ["ImageClassification", "ObjectDetection"]


def _resized_size(h: int, w: int, size: int) -> tuple[int, int]:
    # the shorter edge becomes ``size``; the longer keeps the aspect ratio, truncated
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = size, int(size * long / short)
    return (new_long, new_short) if w <= h else (new_short, new_long)


# interpolation -> (ember interpolate mode, PIL filter)
_MODES = {TF.InterpolationMode.BILINEAR: ("bilinear", Image.BILINEAR),
          TF.InterpolationMode.BICUBIC: ("bicubic", Image.BICUBIC),
          TF.InterpolationMode.NEAREST: ("nearest", Image.NEAREST)}


def _resize_tensor(img: ember.Tensor, size: int, mode: str, antialias: bool) -> ember.Tensor:
    h, w = img.shape[-2:]
    out_h, out_w = _resized_size(h, w, size)
    if (out_h, out_w) == (h, w):
        return img
    lead = img.shape[:-2]
    x = img.reshape(-1, 1, h, w)
    integer = not x.is_floating_point()
    if integer:
        x = x.to(ember.float32)
    if mode == "nearest":
        x = F.interpolate(x, size=[out_h, out_w], mode="nearest")
    else:
        x = F.interpolate(x, size=[out_h, out_w], mode=mode, align_corners=False, antialias=antialias)
    if integer:  # back to the input's integer type, rounded and clamped to its range (uint8 images)
        x = x.round().clamp(0, 255).to(img.dtype)
    return x.reshape(*lead, out_h, out_w)


def _center_crop(img: ember.Tensor, size: int) -> ember.Tensor:
    h, w = img.shape[-2:]
    if size > h or size > w:  # too small: pad with zeros around, extra pixel on the right/bottom
        pad_w, pad_h = max(size - w, 0), max(size - h, 0)
        img = F.pad(img, [pad_w // 2, (pad_w + 1) // 2, pad_h // 2, (pad_h + 1) // 2], value=0)
        h, w = img.shape[-2:]
    top, left = int(round((h - size) / 2.0)), int(round((w - size) / 2.0))
    return img[..., top:top + size, left:left + size]


class ImageClassification(nn.Module):
    """Resize (shorter edge to ``resize_size``, bilinear), center crop to ``crop_size``, scale
    to float32 in [0, 1] (uint8 images are divided by 255), normalize with ``mean``/``std``.

    Input: a PIL image, or a tensor ``[..., C, H, W]`` (uint8 or float). Output: a float32
    tensor ``[..., C, crop_size, crop_size]``.

    Args (keyword-only): crop_size, resize_size=256, mean and std (ImageNet's),
    interpolation (bilinear, bicubic or nearest; NotImplementedError otherwise), antialias=True
    (tensors are resized with antialiasing like PIL; PIL images always are).
    """

    def __init__(self, *, crop_size: int, resize_size: int = 256, mean=(0.485, 0.456, 0.406),
                 std=(0.229, 0.224, 0.225), interpolation: TF.InterpolationMode = TF.InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        if interpolation not in _MODES:
            raise NotImplementedError(f"ImageClassification: interpolation must be one of "
                                      f"{[str(m) for m in _MODES]}, got {interpolation}")
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img) -> ember.Tensor:
        if isinstance(img, Image.Image):
            w, h = img.size
            out_h, out_w = _resized_size(h, w, self.resize_size[0])
            if (out_h, out_w) != (h, w):
                img = img.resize((out_w, out_h), _MODES[self.interpolation][1])
            img = TF.pil_to_tensor(img)
        else:
            img = _resize_tensor(img, self.resize_size[0], _MODES[self.interpolation][0], bool(self.antialias))
        img = _center_crop(img, self.crop_size[0])
        if img.is_floating_point():
            img = img.to(ember.float32)
        else:
            img = img.to(ember.float32) / float(np.iinfo(str(img.dtype).rsplit(".", 1)[-1]).max)
        return TF.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(\n    crop_size={self.crop_size}\n    resize_size={self.resize_size}"
                f"\n    mean={self.mean}\n    std={self.std}\n    interpolation={self.interpolation}\n)")

    def describe(self) -> str:
        return ("Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image tensors. The "
                f"images are resized to ``resize_size={self.resize_size}`` using "
                f"``interpolation={self.interpolation}``, then center-cropped to ``crop_size={self.crop_size}``; "
                f"the values are rescaled to [0.0, 1.0] and normalized with ``mean={self.mean}`` and "
                f"``std={self.std}``.")


class ObjectDetection(nn.Module):
    """A PIL image or a tensor image (``[C, H, W]`` or ``[B, C, H, W]``) as float32 in [0, 1]
    (integer images are divided by their type's maximum); no resizing, which the detector does."""

    def forward(self, img) -> ember.Tensor:
        if not isinstance(img, ember.Tensor):
            img = TF.pil_to_tensor(img)
        return TF.convert_image_dtype(img, ember.float32)

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def describe(self) -> str:
        return ("Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image tensors. The "
                "images are rescaled to ``[0.0, 1.0]``.")
