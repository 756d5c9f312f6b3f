"""ember-vision: datasets, transforms, models, image io, utils and box ops for ember, with
torchvision's names (``import ember_vision as torchvision``)."""

from . import datasets, io, models, ops, transforms, utils

__version__ = "0.1.0"
