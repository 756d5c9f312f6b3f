"""Input and output transforms of the detectors (torchvision.models.detection.transform and
image_list): normalise, resize, batch with padding; boxes back to the original image sizes.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import ember
from ember import nn
from ember.nn import functional as F

__all__ = ["ImageList", "GeneralizedRCNNTransform", "resize_boxes"]


class ImageList:
    """A batch of images padded to one size, ``tensors`` ``[N, C, H, W]``, with the size
    ``(h, w)`` of each image before padding in ``image_sizes``."""

    def __init__(self, tensors: ember.Tensor, image_sizes: List[Tuple[int, int]]) -> None:
        self.tensors = tensors
        self.image_sizes = image_sizes

    def to(self, device) -> "ImageList":
        return ImageList(self.tensors.to(device), self.image_sizes)


def _resize_image(image: ember.Tensor, min_size: int, max_size: int,
                  fixed_size: Optional[Tuple[int, int]]) -> ember.Tensor:
    # fixed_size is (width, height); otherwise the scale that brings the short side to
    # min_size without the long side passing max_size
    if fixed_size is not None:
        kwargs = {"size": [fixed_size[1], fixed_size[0]]}
    else:
        h, w = image.shape[-2:]
        scale = min(min_size / min(h, w), max_size / max(h, w))
        kwargs = {"scale_factor": scale, "recompute_scale_factor": True}
    return F.interpolate(image[None], mode="bilinear", align_corners=False, **kwargs)[0]


def resize_boxes(boxes: ember.Tensor, original_size, new_size) -> ember.Tensor:
    """``xyxy`` boxes ``[K, 4]`` of an image of ``original_size`` ``(h, w)`` scaled to
    ``new_size`` (ratios computed in float32, as torchvision does)."""
    ratio_h, ratio_w = (ember.tensor(float(s), dtype=ember.float32, device=boxes.device)
                        / ember.tensor(float(s_orig), dtype=ember.float32, device=boxes.device)
                        for s, s_orig in zip(new_size, original_size))
    xmin, ymin, xmax, ymax = boxes.unbind(1)
    return ember.stack((xmin * ratio_w, ymin * ratio_h, xmax * ratio_w, ymax * ratio_h), dim=1)


class GeneralizedRCNNTransform(nn.Module):
    """Detector preprocessing: each ``[C, H, W]`` float image is normalised with
    ``image_mean``/``image_std``, resized (bilinear) to ``fixed_size`` ``(width, height)`` or
    so that its short side is ``min_size`` (a random choice of ``min_size`` in training)
    without the long side passing ``max_size``, then the batch is zero-padded to a multiple of
    ``size_divisible``. Target boxes follow the resize.

    Forward: ``(images, targets=None)`` -> ``(ImageList, targets)``.

    Raises:
        ValueError: an image that is not 3-d.
        TypeError: an image that is not floating point.
    """

    def __init__(self, min_size, max_size: int, image_mean: List[float], image_std: List[float],
                 size_divisible: int = 32, fixed_size: Optional[Tuple[int, int]] = None, **kwargs) -> None:
        super().__init__()
        if not isinstance(min_size, (list, tuple)):
            min_size = (min_size,)
        self.min_size = min_size
        self.max_size = max_size
        self.image_mean = image_mean
        self.image_std = image_std
        self.size_divisible = size_divisible
        self.fixed_size = fixed_size
        self._skip_resize = kwargs.pop("_skip_resize", False)

    def forward(self, images: List[ember.Tensor], targets: Optional[List[Dict[str, ember.Tensor]]] = None):
        images = list(images)
        if targets is not None:
            targets = [dict(t) for t in targets]  # the caller's dicts stay untouched
        for i, image in enumerate(images):
            if image.dim() != 3:
                raise ValueError(f"images is expected to be a list of 3d tensors of shape [C, H, W], "
                                 f"got {tuple(image.shape)}")
            image = self.normalize(image)
            image, target = self.resize(image, targets[i] if targets is not None else None)
            images[i] = image
            if targets is not None and target is not None:
                targets[i] = target
        image_sizes = [tuple(int(s) for s in img.shape[-2:]) for img in images]
        return ImageList(self.batch_images(images, size_divisible=self.size_divisible), image_sizes), targets

    def normalize(self, image: ember.Tensor) -> ember.Tensor:
        if not image.is_floating_point():
            raise TypeError(f"Expected input images to be of floating type (in range [0, 1]), "
                            f"but found type {image.dtype} instead")
        mean = ember.tensor(self.image_mean, dtype=image.dtype, device=image.device)
        std = ember.tensor(self.image_std, dtype=image.dtype, device=image.device)
        return (image - mean[:, None, None]) / std[:, None, None]

    def torch_choice(self, k: List[int]) -> int:
        """A uniformly random element of ``k``, drawn from ember's generator."""
        return k[int(ember.empty(1).uniform_(0.0, float(len(k))).item())]

    def resize(self, image: ember.Tensor, target: Optional[Dict[str, ember.Tensor]] = None):
        h, w = image.shape[-2:]
        if self.training:
            if self._skip_resize:
                return image, target
            size = self.torch_choice(self.min_size)
        else:
            size = self.min_size[-1]
        image = _resize_image(image, size, self.max_size, self.fixed_size)
        if target is None:
            return image, target
        target["boxes"] = resize_boxes(target["boxes"], (h, w), image.shape[-2:])
        return image, target

    def batch_images(self, images: List[ember.Tensor], size_divisible: int = 32) -> ember.Tensor:
        """The images zero-padded (right and bottom) to the largest size rounded up to a multiple
        of ``size_divisible``, stacked: ``[N, C, H, W]``."""
        c = max(int(img.shape[0]) for img in images)
        h = int(math.ceil(max(int(img.shape[1]) for img in images) / float(size_divisible)) * size_divisible)
        w = int(math.ceil(max(int(img.shape[2]) for img in images) / float(size_divisible)) * size_divisible)
        padded = [F.pad(img, (0, w - img.shape[2], 0, h - img.shape[1], 0, c - img.shape[0])) for img in images]
        return ember.stack(padded)

    def postprocess(self, result: List[Dict[str, ember.Tensor]], image_shapes, original_image_sizes):
        """Detections' boxes scaled from the resized image sizes back to the original ones
        (in eval mode; training results pass through)."""
        if self.training:
            return result
        for pred, im_s, o_im_s in zip(result, image_shapes, original_image_sizes):
            pred["boxes"] = resize_boxes(pred["boxes"], im_s, o_im_s)
        return result

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(\n    Normalize(mean={self.image_mean}, std={self.image_std})"
                f"\n    Resize(min_size={self.min_size}, max_size={self.max_size}, mode='bilinear')\n)")
