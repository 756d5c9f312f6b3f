"""Image transforms (torchvision.transforms): classes over the kernels in ``functional``."""

from . import functional
from .transforms import Compose, Lambda, Normalize, PILToTensor, ToTensor

__all__ = ["functional", "Compose", "Lambda", "Normalize", "PILToTensor", "ToTensor"]
