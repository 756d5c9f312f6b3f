"""FakeData: random images for smoke tests (torchvision.datasets.FakeData)."""

from __future__ import annotations

import numpy as np
from PIL import Image

from .vision import VisionDataset

_CHANNELS = (1, 2, 3, 4)


class FakeData(VisionDataset):
    """``size`` random images with random class labels.

    Sample ``i`` is made from a generator seeded with ``i + random_offset``: the same
    index always gives the same image and target, whatever was read before. Each image
    is drawn as standard normal float32 values of shape ``image_size`` (``[C, H, W]`` or
    ``[H, W]``) and turned into a PIL image as torchvision's ``ToPILImage`` does for a
    float tensor: values times 255, truncated toward zero and wrapped to uint8; mode
    ``L``, ``LA``, ``RGB`` or ``RGBA`` from the channel count. The values differ from
    torchvision's, which draws from torch's global generator.

    Args:
        size: number of samples.
        image_size: ``(C, H, W)`` with 1 to 4 channels, or ``(H, W)``.
        num_classes: targets are ints in ``[0, num_classes)``.
        transform, target_transform: applied to the image and to the target.
        random_offset: added to the index to seed its generator.

    Raises:
        IndexError: ``index >= size``.
        ValueError: ``image_size`` not 2 or 3 dims, or more than 4 channels.
    """

    def __init__(self, size: int = 1000, image_size=(3, 224, 224), num_classes: int = 10, transform=None,
                 target_transform=None, random_offset: int = 0) -> None:
        super().__init__(None, transform=transform, target_transform=target_transform)
        image_size = tuple(image_size)
        if len(image_size) not in (2, 3):
            raise ValueError(f"image_size should be (C, H, W) or (H, W), got {image_size}")
        if len(image_size) == 3 and image_size[0] not in _CHANNELS:
            raise ValueError(f"pic should not have > 4 channels. Got {image_size[0]} channels.")
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index: int):
        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        rng = np.random.default_rng(index + self.random_offset)
        values = rng.standard_normal(self.image_size, dtype=np.float32)
        target = int(rng.integers(0, self.num_classes))
        img = float_to_pil(values)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return self.size


def float_to_pil(values: np.ndarray) -> Image.Image:
    """A float array ``[C, H, W]`` or ``[H, W]`` as a PIL image, scaled as torchvision's
    ``ToPILImage`` scales a float tensor (``mul(255).byte()``)."""
    if values.ndim == 2:
        values = values[None]
    # float -> int32 truncates toward zero; int32 -> uint8 keeps the low byte, as torch's cast
    pixels = (values.astype(np.float32) * np.float32(255)).astype(np.int32).astype(np.uint8)
    pixels = np.ascontiguousarray(pixels.transpose(1, 2, 0))
    # pillow picks L, LA, RGB, RGBA from uint8 [H, W], [H, W, 2], [H, W, 3], [H, W, 4]
    return Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels)
