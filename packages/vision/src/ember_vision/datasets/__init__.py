"""Vision datasets (torchvision.datasets)."""

from .mnist import MNIST, FashionMNIST
from .vision import VisionDataset

__all__ = ["VisionDataset", "MNIST", "FashionMNIST"]
