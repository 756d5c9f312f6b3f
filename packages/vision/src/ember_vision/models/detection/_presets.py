"""The inference preprocessing of the detection weights (torchvision.transforms._presets)."""

from __future__ import annotations

import ember
from ember import nn

from ...transforms import functional as TF

__all__ = ["ObjectDetection"]


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
