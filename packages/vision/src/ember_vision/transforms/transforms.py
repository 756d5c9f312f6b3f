"""Transform classes (torchvision.transforms): each a thin object over a functional kernel."""

from __future__ import annotations

from . import functional as F


class Compose:
    """Apply ``transforms`` in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({body}\n)"


class ToTensor:
    """PIL image or ndarray ``[H, W, C]`` → float32 tensor ``[C, H, W]`` in [0, 1]."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self) -> str:
        return "ToTensor()"


class PILToTensor:
    """PIL image → uint8 tensor ``[C, H, W]``."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self) -> str:
        return "PILToTensor()"


class Normalize:
    """Per-channel (x - mean) / std on float tensors ``[..., C, H, W]``."""

    def __init__(self, mean, std, inplace: bool = False):
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


class Lambda:
    """Apply a user function."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
