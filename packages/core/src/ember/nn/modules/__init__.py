"""Every layer of ember.nn, one file per family."""

from . import activation as _activation
from .activation import *  # noqa: F401,F403  (the activation layers, listed in its __all__)
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import Dropout, Dropout2d
from .linear import Flatten, Identity, Linear, Unflatten
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
from .normalization import LayerNorm
from .pooling import AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Linear", "Identity", "Flatten", "Unflatten",
           "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d",
           "BatchNorm1d", "BatchNorm2d", "LayerNorm", "Dropout", "Dropout2d", "CrossEntropyLoss", "NLLLoss",
           "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss"] + list(_activation.__all__)
