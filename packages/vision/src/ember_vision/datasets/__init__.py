"""Vision datasets (torchvision.datasets)."""

from .cifar import CIFAR10, CIFAR100
from .fakedata import FakeData
from .folder import DatasetFolder, ImageFolder
from .mnist import EMNIST, KMNIST, MNIST, QMNIST, FashionMNIST
from .stl10 import STL10
from .svhn import SVHN
from .vision import VisionDataset

__all__ = ["VisionDataset", "MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST", "CIFAR10", "CIFAR100",
           "SVHN", "STL10", "DatasetFolder", "ImageFolder", "FakeData"]
