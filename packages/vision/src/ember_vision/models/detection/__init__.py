"""Object detection models (torchvision.models.detection): SSDlite320-MobileNetV3-Large and the
SSD pieces it is built from."""

from .anchor_utils import DefaultBoxGenerator
from .ssd import SSD, SSDClassificationHead, SSDHead, SSDRegressionHead, SSDScoringHead
from .ssdlite import SSDLite320_MobileNet_V3_Large_Weights, ssdlite320_mobilenet_v3_large
from .transform import GeneralizedRCNNTransform, ImageList

__all__ = ["SSD", "SSDHead", "SSDScoringHead", "SSDClassificationHead", "SSDRegressionHead", "DefaultBoxGenerator",
           "GeneralizedRCNNTransform", "ImageList", "SSDLite320_MobileNet_V3_Large_Weights",
           "ssdlite320_mobilenet_v3_large"]
