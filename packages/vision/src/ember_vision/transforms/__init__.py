"""Image transforms (torchvision.transforms): classes over the kernels in ``functional``."""

from . import functional
from .autoaugment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from .transforms import *  # noqa: F403
from .transforms import __all__ as _transform_names

__all__ = ["functional", "AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix",
           *_transform_names]
